import CAllocCounter
import Foundation
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
