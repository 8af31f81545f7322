import CJack
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What JACK's info-shutdown callback leaves for the control thread: a flag and JACK's reason.
///
/// JACK2 may call that callback on its real-time process thread (in some failure paths of its
/// process loop), so the callback only copies the reason's bytes into memory made in advance,
/// stores a flag and writes one byte to a pipe (below): it allocates nothing, takes no lock,
/// retains nothing, calls nothing else.
/// The control thread polls `reason` (a load) and builds a `String` there.
///
/// Ownership: made by `JackClient.init` on the control thread before the callback is registered
/// (`jack_on_info_shutdown`, with this block as its argument), and destroyed by `JackClient.deinit`
/// after `jack_client_close` has returned, when JACK can no longer call the callback. The reason
/// bytes are written once, by the one thread that moves `state` from `running` to `writing`, and
/// read only by a thread that has seen `state` at `gone` (or `done`) with acquiring order. The
/// callback's last touch of the notice and the pipe is its store of `done`: in JACK2's failure path
/// the process thread calls it after it stopped counting as active, and `jack_client_close` may
/// return while it is still inside, so `JackClient.close()` waits for `done` (`waitForCallback`)
/// before it lets the pipe or the notice go.
///
/// Waking the control side: when made with a `wakeDescriptor` (the write end of a non-blocking
/// pipe whose read end `JackClient` watches), the callback writes one byte there after the flag,
/// so the loss is handled at once rather than at the next look. `write(2)` on a pipe is
/// async-signal-safe and takes no user-space lock; it is made once in the client's life, when the
/// server is gone and no cycle is left to keep. The descriptor is the client's to close, after
/// `jack_client_close` has returned.
struct ShutdownNotice: ~Copyable {
    /// Longer reasons are cut (JACK's are a few dozen bytes).
    static let reasonCapacity = 256

    private static let running: UInt8 = 0, writing: UInt8 = 1, gone: UInt8 = 2, done: UInt8 = 3

    private let state = Atomic<UInt8>(ShutdownNotice.running)
    /// `reasonCapacity` bytes, always NUL-terminated once `state` is `gone`.
    private let reasonBytes: UnsafeMutablePointer<CChar>
    /// Written one byte once the flag is set; -1: nobody is woken (the flag is polled).
    private let wakeDescriptor: Int32

    private init(reasonBytes: UnsafeMutablePointer<CChar>, wakeDescriptor: Int32) {
        self.reasonBytes = reasonBytes
        self.wakeDescriptor = wakeDescriptor
    }

    static func make(wakeDescriptor: Int32 = -1) -> UnsafeMutablePointer<ShutdownNotice> {
        let bytes = UnsafeMutablePointer<CChar>.allocate(capacity: reasonCapacity)
        bytes.initialize(repeating: 0, count: reasonCapacity)
        let notice = UnsafeMutablePointer<ShutdownNotice>.allocate(capacity: 1)
        notice.initialize(to: ShutdownNotice(reasonBytes: bytes, wakeDescriptor: wakeDescriptor))
        return notice
    }

    /// Only once JACK can no longer call the callback.
    static func destroy(_ notice: UnsafeMutablePointer<ShutdownNotice>) {
        notice.pointee.reasonBytes.deallocate()
        notice.deinitialize(count: 1)
        notice.deallocate()
    }

    /// Records that the server is gone and why. Real-time safe; any thread; only the first call
    /// counts.
    @_noLocks
    func record(reason: UnsafePointer<CChar>?) {
        guard state.compareExchange(expected: Self.running, desired: Self.writing, ordering: .relaxed).exchanged else { return }
        var length = 0
        if let reason {
            while length < Self.reasonCapacity - 1 && reason[length] != 0 {
                reasonBytes[length] = reason[length]
                length &+= 1
            }
        }
        reasonBytes[length] = 0
        state.store(Self.gone, ordering: .releasing)
        let descriptor = wakeDescriptor
        if descriptor >= 0 {
            var byte: UInt8 = 1
            _ = _unsafePerformance { write(descriptor, &byte, 1) }
        }
        state.store(Self.done, ordering: .releasing)
    }

    /// Whether the server shut the client down.
    var isServerGone: Bool { state.load(ordering: .acquiring) >= Self.gone }

    /// Waits until a callback that has begun has finished with the notice and the pipe (at most
    /// `timeout` seconds: a thread JACK cancelled inside it never finishes, and touches nothing
    /// more). Returns at once when no callback has begun. Only once `jack_client_close` has
    /// returned, when no callback can begin any more.
    func waitForCallback(timeout: Double = 0.1) {
        var waited = 0.0
        while waited < timeout {
            let now = state.load(ordering: .acquiring)
            guard now == Self.writing || now == Self.gone else { return }
            usleep(100)
            waited += 0.0001
        }
    }

    /// JACK's reason once the server is gone ("unknown reason" when JACK gave none); nil before.
    /// Allocates: control thread.
    var reason: String? {
        guard isServerGone else { return nil }
        return reasonBytes[0] == 0 ? "unknown reason" : String(cString: reasonBytes)
    }
}

/// `jack_on_info_shutdown`'s callback; its argument is the client's `ShutdownNotice`.
let infoShutdownCallback: JackInfoShutdownCallback = { _, reason, argument in
    argument?.assumingMemoryBound(to: ShutdownNotice.self).pointee.record(reason: reason)
}

/// `jack_on_shutdown`'s callback (the one older PipeWire calls), which JACK gives no reason.
let shutdownCallback: JackShutdownCallback = { argument in
    argument?.assumingMemoryBound(to: ShutdownNotice.self).pointee.record(reason: nil)
}
