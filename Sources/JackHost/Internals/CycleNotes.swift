import CJack
import Synchronization

/// What JACK's xrun and buffer-size callbacks leave for the control thread: a count of xruns
/// and the last period reported. Both callbacks may run on the process thread, inside or just
/// before a cycle, so they only store into these atomics; the owner's housekeeping takes them.
///
/// Which thread calls which callback (JACK2 1.9.21 `common/JackClient.cpp`; PipeWire's
/// `pipewire-jack/src/pipewire-jack.c`, 0.3.65 and 1.4):
///
/// | callback | JACK2 | PipeWire |
/// | --- | --- | --- |
/// | process | process thread | data thread (the process thread) |
/// | xrun | notification thread | data thread, in `cycle_run` before the process callback |
/// | buffer size | process thread once as it starts (`JackClient::Init`), then notification thread | main loop (`do_buffer_frames`) |
/// | sample rate | notification thread | main loop |
/// | info shutdown / shutdown | process thread on a failed cycle (`JackClient::Error`), else notification thread | main loop |
/// | port registration, connect, rename, latency | notification thread | main loop |
///
/// So the xrun, buffer-size and shutdown callbacks reach only memory made in advance (this and
/// `ShutdownNotice`); the others reach `CallbackContext`, which may allocate and enqueue.
///
/// Ownership: made by `JackClient.init` before the callbacks are registered (with this block as
/// their argument) and destroyed by `JackClient.deinit` after `jack_client_close` has returned,
/// when JACK can no longer call them.
struct CycleNotes: ~Copyable {
    private let xruns = Atomic<UInt64>(0)
    /// The period last reported, 0 once taken (or before any).
    private let bufferSize = Atomic<UInt32>(0)

    static func make() -> UnsafeMutablePointer<CycleNotes> {
        let notes = UnsafeMutablePointer<CycleNotes>.allocate(capacity: 1)
        notes.initialize(to: CycleNotes())
        return notes
    }

    /// Only once JACK can no longer call the callbacks.
    static func destroy(_ notes: UnsafeMutablePointer<CycleNotes>) {
        notes.deinitialize(count: 1)
        notes.deallocate()
    }

    /// Real-time safe; any thread.
    @_noLocks
    func recordXrun() {
        xruns.wrappingAdd(1, ordering: .relaxed)
    }

    /// Real-time safe; any thread.
    @_noLocks
    func recordBufferSize(_ frames: UInt32) {
        bufferSize.store(frames, ordering: .relaxed)
    }

    /// The xruns reported since the last call.
    func takeXruns() -> UInt64 {
        xruns.exchange(0, ordering: .relaxed)
    }

    /// The period reported since the last call, if one was.
    func takeBufferSize() -> UInt32? {
        let frames = bufferSize.exchange(0, ordering: .relaxed)
        return frames == 0 ? nil : frames
    }
}

/// `jack_set_xrun_callback`'s callback; its argument is the client's `CycleNotes`.
let xrunCallback: JackXRunCallback = { argument in
    argument?.assumingMemoryBound(to: CycleNotes.self).pointee.recordXrun()
    return 0
}

/// `jack_set_buffer_size_callback`'s callback; its argument is the client's `CycleNotes`.
let bufferSizeCallback: JackBufferSizeCallback = { frames, argument in
    argument?.assumingMemoryBound(to: CycleNotes.self).pointee.recordBufferSize(frames)
    return 0
}
