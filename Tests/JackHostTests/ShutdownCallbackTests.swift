import CAllocCounter
import CJack
import Foundation
import Synchronization
@testable import JackHost
import Testing

/// JACK2 can call the info-shutdown callback from its real-time thread (issue 15, defect 5):
/// it must not allocate, lock or call anything that might.
@Suite("JackHost: shutdown callback")
struct ShutdownCallbackTests {
    @Test("the info-shutdown callback, called on a thread of its own, allocates and frees nothing, and leaves JACK's reason for the control thread",
          .enabled(if: CAllocCounter_is_available() == 1, "allocation counting is off under a sanitizer (make tsan)"))
    func callbackAllocatesNothing() throws {
        #expect(CAllocCounter_is_active() == 1, "the malloc counter is interposed")
        let notice = ShutdownNotice.make()
        defer { ShutdownNotice.destroy(notice) }
        #expect(notice.pointee.reason == nil, "nil while the server is there")
        let reason = "JACK server has been closed (the dummy driver stopped)"
        let counts = reason.withCString { text in
            onThreadOfItsOwn {
                CAllocCounter_watch(pthread_self())
                infoShutdownCallback(.init(rawValue: 0x01), text, UnsafeMutableRawPointer(notice))
                CAllocCounter_stop()
                return (CAllocCounter_allocations(), CAllocCounter_frees())
            }
        }
        #expect(counts.0 == 0, "allocations in the callback")
        #expect(counts.1 == 0, "frees in the callback")
        #expect(notice.pointee.reason == reason)
    }

    @Test("a reason longer than the buffer is cut, a missing one reads as unknown, and only the first call counts")
    func reasonEdges() {
        let long = ShutdownNotice.make()
        defer { ShutdownNotice.destroy(long) }
        let text = String(repeating: "x", count: 1000)
        text.withCString { infoShutdownCallback(.init(rawValue: 0x01), $0, UnsafeMutableRawPointer(long)) }
        #expect(long.pointee.reason == String(repeating: "x", count: ShutdownNotice.reasonCapacity - 1))
        "a second reason".withCString { infoShutdownCallback(.init(rawValue: 0x01), $0, UnsafeMutableRawPointer(long)) }
        #expect(long.pointee.reason?.hasPrefix("xxx") == true, "the first reason stays")

        let none = ShutdownNotice.make()
        defer { ShutdownNotice.destroy(none) }
        infoShutdownCallback(.init(rawValue: 0x01), nil, UnsafeMutableRawPointer(none))
        #expect(none.pointee.reason == "unknown reason")
    }
}

/// Runs `body` on a new thread and waits for its result.
func onThreadOfItsOwn<T>(_ body: @escaping () -> T) -> T {
    let box = ThreadResult(body)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread { box.value = box.body(); done.signal() }
    thread.start()
    done.wait()
    return box.value!
}

/// `body` and its result, handed to another thread and read back after it signalled.
private final class ThreadResult<T>: @unchecked Sendable {
    var value: T?
    let body: () -> T
    init(_ body: @escaping () -> T) { self.body = body }
}

/// libjack's error and info messages can come from its real-time process thread.
@Suite("JackHost: libjack's messages")
struct LibraryMessageTests {
    @Test("a libjack message on a real-time thread is counted, not built into a String, locked or logged; elsewhere it reaches the handler",
          .enabled(if: CAllocCounter_is_available() == 1, "allocation counting is off under a sanitizer (make tsan)"))
    func realtimeMessagesAreDropped() throws {
        let received = Mutex<[String]>([])
        JackLibraryMessages.route { _, text in received.withLock { $0.append(text) } }
        defer { JackLibraryMessages.route(to: nil) }
        CJackShims_call_error_callback("from an ordinary thread")
        #expect(received.withLock { $0 } == ["from an ordinary thread"])

        let before = JackLibraryMessages.droppedOnRealtimeThread
        let outcome = Mutex<(realtime: Bool, allocations: UInt64, frees: UInt64)?>(nil)
        let thread = Thread {
            var param = sched_param(sched_priority: 10)
            let realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0
            // The C string is made before counting: passing a Swift literal makes a temporary.
            let text = strdup("from the process thread")
            CAllocCounter_watch(pthread_self())
            CJackShims_call_error_callback(text)
            CAllocCounter_stop()
            free(text)
            outcome.withLock { $0 = (realtime, CAllocCounter_allocations(), CAllocCounter_frees()) }
        }
        thread.start()
        try waitForCondition { outcome.withLock { $0 } != nil }
        let result = try #require(outcome.withLock { $0 })
        try #require(result.realtime, "this machine lets the test run a SCHED_FIFO thread")
        #expect(result.allocations == 0 && result.frees == 0, "allocations \(result.allocations), frees \(result.frees)")
        #expect(JackLibraryMessages.droppedOnRealtimeThread == before + 1)
        #expect(received.withLock { $0 } == ["from an ordinary thread"])
    }

    private func waitForCondition(_ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(5)
        while !condition() {
            guard Date() < deadline else { throw CancellationError() }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
}
