import Policy

/// What the router tells apps and control surfaces: the policy's notifications, and its own about
/// the JACK server and the audio thread (docs/OSC.md, "Notifications").
public enum RouterNotification: Equatable, Sendable {
    case policy(PolicyNotification)
    /// The router lost its JACK server (`connected` false) or runs on it again (true).
    case jack(connected: Bool, reason: String)
    /// JACK reported xruns: the total since start and how many since the last such notification.
    case xruns(total: Int, new: Int)

    /// The app the notification is about, which also receives it at its own address.
    public var app: String? {
        if case let .policy(notification) = self { return notification.app }
        return nil
    }
}
