import Dispatch
import Foundation
@testable import JackHost
import Testing

/// `ServerRequests` alone, with requests that block on a gate instead of a server: the deadline,
/// refusing while one waits, what a late request leaves, patience while the caller's count moves,
/// and `drain`.
@Suite("JackHost: ServerRequests without a server")
struct RequestDeadlineTests {
    /// A port pointer for the bookkeeping (never dereferenced).
    static var port: OpaquePointer { OpaquePointer(bitPattern: 0x1000)! }

    @Test("answered in time: the result; late: `.late`, later requests refused without running, and once it returns its port is handed back once and the count of late answers grows")
    func lateAndRefused() throws {
        let requests = ServerRequests(deadline: 0.05, patience: 0.05)
        guard case .answered(7) = requests.ask("quick", { 7 }) else { Issue.record("not answered"); return }
        #expect(requests.unanswered == nil)

        let gate = DispatchSemaphore(value: 0)
        let answer = requests.ask("slow", { () -> OpaquePointer? in
            gate.wait()
            return Self.port
        }, late: { $0 })
        guard case .late = answer else { Issue.record("\(answer)"); return }
        let waiting = try #require(requests.unanswered)
        #expect(waiting.what == "slow")
        #expect(waiting.seconds >= 0.05, "counted from when it was asked")
        let ran = Flag()
        guard case .refused = requests.ask("next", { ran.set() }) else { Issue.record("not refused"); return }
        #expect(!requests.hasLatePorts && requests.lateAnswers == 0)

        gate.signal()
        requests.drain()
        #expect(requests.unanswered == nil)
        #expect(requests.lateAnswers == 1)
        #expect(requests.takeLatePorts().map(\.pointer) == [Self.port])
        #expect(requests.takeLatePorts().isEmpty, "handed back once")
        #expect(!ran.isSet, "a refused request never runs")
        guard case .answered = requests.ask("again", { 0 }) else { Issue.record("not answered after"); return }
    }

    @Test("past the deadline, a request is waited for while the caller's count moves, up to the patience, which a stretch of slow requests shares; a count that stands still ends the wait")
    func patience() {
        let requests = ServerRequests(deadline: 0.05, patience: 5)
        let counter = Counter()
        // The count moves at every look: the request answers in 0.8 s, within the patience.
        let moving = requests.ask("slow, alive", { () -> Int in
            Thread.sleep(forTimeInterval: 0.8)   // stands for a slow server's answer
            return 1
        }, progress: { counter.next() })
        guard case .answered(1) = moving else { Issue.record("\(moving)"); return }

        // A stretch of slow answers shares one patience: a second slow request asked right after
        // gets what is left of it, not a patience of its own.
        let shared = ServerRequests(deadline: 0.05, patience: 1.2)
        guard case .answered = shared.ask("slow 1", { Thread.sleep(forTimeInterval: 0.8) }, progress: { counter.next() }) else {
            Issue.record("the first slow request was not waited for")
            return
        }
        let second = DispatchSemaphore(value: 0)
        let askedSecond = Date()
        guard case .late = shared.ask("slow 2", { second.wait() }, progress: { counter.next() }) else {
            Issue.record("the second slow request had a patience of its own")
            return
        }
        #expect(Date().timeIntervalSince(askedSecond) < 1.0, "only what was left of the stretch's 1.2 s")
        second.signal()
        shared.drain()

        // The count stands still: given up one slice after the deadline.
        let gate = DispatchSemaphore(value: 0)
        let asked = Date()
        let still = requests.ask("frozen", { gate.wait() }, progress: { 42 })
        let waited = Date().timeIntervalSince(asked)
        guard case .late = still else { Issue.record("\(still)"); return }
        #expect(waited < 0.05 + ServerRequests.slice + 1, "waited \(waited) s")
        gate.signal()
        requests.drain()
        #expect(requests.unanswered == nil)
    }

    @Test("drain returns only once the request past its deadline has returned")
    func drainWaits() throws {
        let requests = ServerRequests(deadline: 0.02, patience: 0.02)
        let gate = DispatchSemaphore(value: 0)
        guard case .late = requests.ask("held", { gate.wait() }) else { Issue.record("not late"); return }
        let drained = Flag()
        Thread.detachNewThread {
            requests.drain()
            drained.set()
        }
        // Only a drain that does not wait could end this early: the request is held.
        Thread.sleep(forTimeInterval: 0.2)
        #expect(!drained.isSet)
        gate.signal()
        let deadline = Date().addingTimeInterval(10)
        while !drained.isSet && Date() < deadline { usleep(1000) }
        #expect(drained.isSet)
    }

    @Test("requests that end right at their deadline: each is answered or late, never both or neither, and every late one is counted and handed back once")
    func racesAtTheDeadline() {
        let requests = ServerRequests(deadline: 0.000_2, patience: 0.000_2)
        var late = 0
        for _ in 0..<400 {
            switch requests.ask("racing", { () -> OpaquePointer? in
                usleep(150)
                return Self.port
            }, late: { $0 }) {
            case .answered: break
            case .late:
                late += 1
                requests.drain()
            case .refused: Issue.record("refused though nothing waited")
            }
            #expect(requests.unanswered == nil)
        }
        print("racesAtTheDeadline: \(late) of 400 late")
        #expect(requests.lateAnswers == late)
        #expect(requests.takeLatePorts().count == late)
    }
}

private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value: UInt64 = 0
    func next() -> UInt64 { lock.withLock { value += 1; return value } }
}
