import Foundation
import Policy
import RouterCore

/// Carries the router's notifications to the OSC server. It exists before either of them (the
/// router takes its `send` as `onNotification`; the server connects to it when it starts), and
/// drops notifications while nothing is connected.
public final class NotificationRelay: @unchecked Sendable {
    // @unchecked: `target` is read and written under `lock`.
    private let lock = NSLock()
    private var target: (@Sendable (RouterNotification) -> Void)?

    public init() {}

    /// Called on the router's control queue; must not block (the server only enqueues).
    public func send(_ notification: RouterNotification) {
        lock.withLock { target }?(notification)
    }

    func connect(_ target: (@Sendable (RouterNotification) -> Void)?) {
        lock.withLock { self.target = target }
    }
}
