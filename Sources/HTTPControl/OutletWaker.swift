import Foundation
import NIOCore

/// Wakes the frame outlets of one event loop from other threads: the outlets woken while the loop
/// has not yet run the last wake share one task. The OSC server's thread holds its wakes
/// (`hold`) until the end of its turn (`flush`): a meter tick that reaches every open page
/// (pushes to every queue, one after another) costs the loop one task and one wake-up, not one
/// per connection, and the loop's thread is not woken (and run in its place) after each push.
///
/// One per event loop and per start of the HTTP server: once its loop has shut down, a task it
/// gives is dropped and it stays marked scheduled (wakes nothing more), as nothing is left to wake.
final class OutletWaker: Sendable {
    let eventLoop: any EventLoop
    /// The frames the loop's outlets write, encoded once for all of them (on the loop only).
    let encodedFrames = EncodedFrames()
    private let waiting = Waiting()

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Has `outlet` drain on the loop soon (any thread). Once per wake: the queue wakes its writer
    /// only when it is idle.
    func wake(_ outlet: NIOLoopBound<FrameOutlet>) {
        let schedule = waiting.withLock { waiting in
            waiting.outlets.append(outlet)
            guard !waiting.scheduled else { return false }
            waiting.scheduled = true
            waiting.tasks += 1
            return true
        }
        if schedule { eventLoop.execute { self.run() } }
    }

    /// Has `outlet` drain with the next task (any thread): with the task `flush` gives the loop,
    /// or one another wake gives it.
    func hold(_ outlet: NIOLoopBound<FrameOutlet>) {
        waiting.withLock { $0.outlets.append(outlet) }
    }

    /// Gives the loop a task for the outlets held, if none is scheduled (any thread).
    func flush() {
        let schedule = waiting.withLock { waiting in
            guard !waiting.scheduled, !waiting.outlets.isEmpty else { return false }
            waiting.scheduled = true
            waiting.tasks += 1
            return true
        }
        if schedule { eventLoop.execute { self.run() } }
    }

    /// On the loop: drains every outlet woken since the last run, in the order they were woken,
    /// and those woken while it drains (a tick's pushes come a microsecond or two apart, a drain
    /// takes longer: the whole tick is one task), for a few rounds; then the loop's other work
    /// has its turn, and any outlet still waiting gets a task of its own.
    private func run() {
        for _ in 0..<Self.roundsPerTask {
            let outlets = waiting.withLock { waiting in
                if waiting.outlets.isEmpty { waiting.scheduled = false }
                defer { waiting.outlets.removeAll(keepingCapacity: true) }
                return waiting.outlets
            }
            if outlets.isEmpty { return }
            for outlet in outlets { outlet.value.drain() }
        }
        // Still scheduled: a new task takes what waits.
        let again = waiting.withLock { waiting in
            if waiting.outlets.isEmpty { waiting.scheduled = false } else { waiting.tasks += 1 }
            return waiting.scheduled
        }
        if again { eventLoop.execute { self.run() } }
    }

    private static let roundsPerTask = 4

    /// Tasks given to the loop so far (for tests).
    var tasks: Int { waiting.withLock { $0.tasks } }
}

/// The outlets waiting for a task, under an NSLock (which ThreadSanitizer sees; it does not see
/// Synchronization's Mutex on Linux and reports its state as raced).
private final class Waiting: @unchecked Sendable {
    // @unchecked: `state` is read and written only under `lock`.
    private let lock = NSLock()
    private var state: (outlets: [NIOLoopBound<FrameOutlet>], scheduled: Bool, tasks: Int) = ([], false, 0)

    func withLock<T>(_ body: (inout (outlets: [NIOLoopBound<FrameOutlet>], scheduled: Bool, tasks: Int)) -> T) -> T {
        lock.withLock { body(&state) }
    }
}
