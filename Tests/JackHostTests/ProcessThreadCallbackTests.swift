import CAllocCounter
import CJack
import Foundation
import Synchronization
@testable import JackHost
import Testing

/// The callbacks JACK2 or PipeWire may call on the process thread (the table in CycleNotes.swift):
/// xrun, buffer size, info shutdown and shutdown. Each, called on a SCHED_FIFO thread, must
/// allocate and free nothing, and leave what it reports for the control thread.
@Suite("JackHost: callbacks on the process thread")
struct ProcessThreadCallbackTests {
    @Test("the xrun, buffer-size and shutdown callbacks, called on a SCHED_FIFO thread, allocate and free nothing; the control thread takes what they left",
          .enabled(if: CAllocCounter_is_available() == 1, "allocation counting is off under a sanitizer (make tsan)"))
    func callbacksAllocateNothing() throws {
        #expect(CAllocCounter_is_active() == 1, "the malloc counter is interposed")
        let notes = CycleNotes.make()
        defer { CycleNotes.destroy(notes) }
        let notice = ShutdownNotice.make()
        defer { ShutdownNotice.destroy(notice) }
        let notesArgument = UnsafeMutableRawPointer(notes)
        let noticeArgument = UnsafeMutableRawPointer(notice)
        let reason = strdup("the dummy driver stopped")
        defer { free(reason) }
        let calls: [(String, () -> Void)] = [
            ("xrun", { _ = xrunCallback(notesArgument) }),
            ("buffer size", { _ = bufferSizeCallback(512, notesArgument) }),
            ("xrun again", { _ = xrunCallback(notesArgument) }),
            ("info shutdown", { infoShutdownCallback(.init(rawValue: 0x01), reason, noticeArgument) }),
            ("shutdown", { shutdownCallback(noticeArgument) }),
        ]
        for (name, call) in calls {
            let outcome = onRealtimeThread {
                CAllocCounter_watch(pthread_self())
                call()
                CAllocCounter_stop()
                return (CAllocCounter_allocations(), CAllocCounter_frees())
            }
            try #require(outcome.realtime, "this machine lets the test run a SCHED_FIFO thread")
            #expect(outcome.value.0 == 0 && outcome.value.1 == 0,
                    "\(name): allocations \(outcome.value.0), frees \(outcome.value.1)")
        }
        #expect(notes.pointee.takeXruns() == 2)
        #expect(notes.pointee.takeXruns() == 0, "taken once")
        #expect(notes.pointee.takeBufferSize() == 512)
        #expect(notes.pointee.takeBufferSize() == nil, "taken once")
        #expect(notice.pointee.reason == "the dummy driver stopped")
    }

    @Test("the period last reported is the one taken; xruns reported while the control thread takes them are neither lost nor counted twice")
    func concurrentTakes() async {
        let notes = CycleNotes.make()
        defer { CycleNotes.destroy(notes) }
        let address = UInt(bitPattern: notes)
        for frames: UInt32 in [128, 256, 1024] {
            _ = bufferSizeCallback(frames, UnsafeMutableRawPointer(bitPattern: address))
        }
        #expect(notes.pointee.takeBufferSize() == 1024)
        let reports = 100_000
        let taken = await withTaskGroup(of: UInt64.self) { group in
            group.addTask {
                for _ in 0..<reports { _ = xrunCallback(UnsafeMutableRawPointer(bitPattern: address)) }
                return 0
            }
            group.addTask {
                var sum: UInt64 = 0
                for _ in 0..<1000 {
                    sum += UnsafeMutablePointer<CycleNotes>(bitPattern: address)!.pointee.takeXruns()
                    await Task.yield()
                }
                return sum
            }
            return await group.reduce(0, +)
        }
        #expect(taken + notes.pointee.takeXruns() == UInt64(reports))
    }
}

/// Runs `body` on a new thread that asks for SCHED_FIFO first, and waits for its result: whether
/// the thread got real-time scheduling, and what `body` returned.
func onRealtimeThread<T>(_ body: @escaping () -> T) -> (realtime: Bool, value: T) {
    onThreadOfItsOwn {
        var parameters = sched_param(sched_priority: 10)
        let realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters) == 0
        return (realtime, body())
    }
}
