import CJack
import Synchronization

/// Where libjack's own error and info messages go (by default libjack prints them to stderr).
///
/// libjack calls these from whichever thread hit the message, occasionally its real-time process
/// thread. There a message is only counted (`droppedOnRealtimeThread`): building a String, taking
/// the handler's lock or logging would break the thread's rules. Elsewhere the handler gets it.
public enum JackLibraryMessages {
    public enum Kind: Sendable { case error, info }
    public typealias Handler = @Sendable (Kind, String) -> Void

    private static let handler = Locked<Handler?>(nil)
    /// The counter lives at a fixed address reached through a pointer (an addressor, as the
    /// engine reaches its atomics): a static `Atomic` is read through an accessor coroutine, whose
    /// frame a debug build allocates. Allocated once, never freed (one per process).
    private nonisolated(unsafe) static let droppedCounter: UnsafeMutablePointer<Atomic<UInt64>> = {
        let counter = UnsafeMutablePointer<Atomic<UInt64>>.allocate(capacity: 1)
        counter.initialize(to: Atomic(0))
        return counter
    }()

    /// Messages libjack sent from a real-time thread, which were counted and dropped.
    public static var droppedOnRealtimeThread: UInt64 { droppedCounter.pointee.load(ordering: .relaxed) }

    /// Routes libjack's messages to `handler` (nil: drop them).
    public static func route(to newHandler: Handler?) {
        // Both globals, and what the counter's `add` needs from the runtime (its generic metadata
        // is made on first use: an allocation), are made here, on an ordinary thread, never lazily
        // on a real-time one.
        droppedCounter.pointee.add(0, ordering: .relaxed)
        handler.withLock { $0 = newHandler }
        jack_set_error_function { message in JackLibraryMessages.deliver(.error, message) }
        jack_set_info_function { message in JackLibraryMessages.deliver(.info, message) }
    }

    private static func deliver(_ kind: Kind, _ message: UnsafePointer<CChar>?) {
        guard let message else { return }
        if CJackShims_on_realtime_thread() != 0 {
            droppedCounter.pointee.add(1, ordering: .relaxed)
            return
        }
        let text = String(cString: message)
        handler.withLock { $0 }?(kind, text)
    }
}
