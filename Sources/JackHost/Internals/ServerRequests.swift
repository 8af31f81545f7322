import Dispatch
import Glibc

/// Requests to the JACK server with a deadline: the client's calls that wait for the server's
/// answer (a port registered, renamed, connected…) run on a queue of their own, and the caller
/// waits for the answer only so long. libjack's requests have no timeout (JACK2's and PipeWire
/// 0.3.65's): a server frozen with SIGSTOP, or hung in a driver, never answers, and the caller
/// would wait until it goes on or dies. The router's control queue is that caller, and OSC, the
/// watchdog that gives a frozen server up, and everything else wait behind it.
///
/// A server that is slow but alive (it runs cycles: the caller's `progress`, a cycle counter,
/// moves) is waited for longer, up to `patience`: JACK2's server waits up to 2 s for each
/// notification to a client that does not read them, and serves every client's requests on one
/// thread, so one hung client can make every request slow without the server being frozen. A
/// request that misses its deadline goes on waiting on the queue; until it returns, the server
/// counts as not answering and every later request is refused at once, without being queued.
/// When it returns, what it did is handed back (`late`) for the owner to put right on its own
/// thread. Only one request is ever outstanding, so the requests keep their order and no request
/// or close of the client overtakes one still waiting (`drain`).
///
/// Owns: the request queue and what the late requests left. Any thread: the owner asks from its
/// own, the queue finishes requests on its.
final class ServerRequests: @unchecked Sendable {
    // @unchecked: `state` is read and written only under its lock; `queue` and `deadline` are
    // immutable.
    private let queue = DispatchQueue(label: "duckrouter.jack-requests")
    let deadline: Double
    /// How long a request is waited for while the caller's `progress` moves.
    let patience: Double
    private let state = Locked(State())

    private struct State {
        /// The request past its deadline and still waiting, and since when it was asked
        /// (CLOCK_MONOTONIC s).
        var waiting: (what: String, since: Double)?
        /// Ports whose requests returned after their deadline, with what those did.
        var late: [LatePort] = []
        /// Requests that returned after their deadline, counted.
        var lateAnswers = 0
        /// When the stretch of slow answers under way began: its requests share one patience,
        /// so a run of slow ones holds the caller `patience` in all, not each.
        var slowSince: Double?
        /// When the last request was answered.
        var lastAnswer = 0.0
    }

    /// What became of a request.
    enum Answer<Result> {
        case answered(Result)
        /// Past its deadline, still waiting on the queue: what it does is handed back later.
        case late
        /// Not run: an earlier request is still unanswered.
        case refused
    }

    /// A port a late request left in a state nobody recorded: registered, or renamed, or half
    /// given up. The owner takes it back and gives it up again.
    struct LatePort: @unchecked Sendable {
        // @unchecked: a jack_port_t pointer, used only on the owner's thread once handed back.
        let pointer: OpaquePointer
    }

    init(deadline: Double, patience: Double) {
        self.deadline = deadline
        self.patience = max(patience, deadline)
    }

    /// The request that has waited past its deadline, and for how long (s); nil while the server
    /// answers.
    var unanswered: (what: String, seconds: Double)? {
        state.withLock { state in state.waiting.map { ($0.what, Self.now() - $0.since) } }
    }

    /// Requests that returned after their deadline so far: when it grows, the server answers
    /// again, and what was refused meanwhile may be wanted again.
    var lateAnswers: Int { state.withLock { $0.lateAnswers } }

    /// Runs `request` on the request queue and returns what it returned; `.late` when the server
    /// did not answer by the deadline (or, while `progress` moved, by `patience`), `.refused`
    /// without running it when an earlier request is still unanswered. A request that answers
    /// late hands `late(result)`'s port, if any, to `takeLatePorts`. `progress` is read on the
    /// calling thread while it waits.
    func ask<Result>(_ what: String, _ request: @escaping () -> Result,
                     late: @escaping (Result) -> OpaquePointer? = { _ in nil },
                     progress: (() -> UInt64)? = nil) -> Answer<Result> {
        guard unanswered == nil else { return .refused }
        let asked = Self.now()
        // A stretch of slow answers ends when a while goes by with no request.
        state.withLock { state in
            if state.slowSince != nil, asked - state.lastAnswer > patience { state.slowSince = nil }
        }
        let outcome = AbandonableResult<Result>()
        let work = UncheckedRequest { [state] in
            let result = request()
            // The caller gave up on it: what it did goes to the owner, and the server answers again.
            if outcome.finish(result) {
                state.withLock { state in
                    if let pointer = late(result) { state.late.append(LatePort(pointer: pointer)) }
                    state.waiting = nil
                    state.lateAnswers += 1
                    state.slowSince = nil
                }
            }
        }
        queue.async { work.run() }
        if let result = wait(for: outcome, askedAt: asked, progress: progress) { return .answered(result) }
        state.withLock { $0.waiting = (what, asked) }
        // It may have returned between the wait and now: then nothing waits.
        if outcome.abandon() { return .late }
        state.withLock { $0.waiting = nil }
        return outcome.result.map { .answered($0) } ?? .late
    }

    /// Waits for the deadline, then on in slices while `progress` moves, up to `patience` from
    /// the start of the stretch of slow answers this one belongs to.
    private func wait<Result>(for outcome: AbandonableResult<Result>, askedAt asked: Double, progress: (() -> UInt64)?) -> Result? {
        if outcome.wait(seconds: deadline) {
            state.withLock { state in
                state.slowSince = nil
                state.lastAnswer = Self.now()
            }
            return outcome.result
        }
        guard let progress else { return nil }
        let limit = state.withLock { state in
            if state.slowSince == nil { state.slowSince = asked }
            return state.slowSince! + patience
        }
        var seen = progress()
        while Self.now() < limit {
            if outcome.wait(seconds: min(Self.slice, limit - Self.now())) {
                state.withLock { $0.lastAnswer = Self.now() }
                return outcome.result
            }
            let now = progress()
            if now == seen { return nil }
            seen = now
        }
        return nil
    }

    /// How often `progress` is looked at past the deadline: a server that ran no cycle in one
    /// slice (longer than any JACK period) is not waited for longer.
    static let slice = 0.5

    /// Whether late requests left ports to take back.
    var hasLatePorts: Bool { state.withLock { !$0.late.isEmpty } }

    /// The ports late requests left, for the owner to take back (its own thread).
    func takeLatePorts() -> [LatePort] {
        state.withLock { state in
            defer { state.late.removeAll() }
            return state.late
        }
    }

    /// Returns once no request runs: after the one past its deadline, if any, has returned (which
    /// may be never, for a server frozen for good). Before closing the client.
    func drain() {
        queue.sync {}
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// A request closure carried to the request queue (it holds jack_client_t and jack_port_t
/// pointers, used there only while the owner waits for it or refuses every other request).
private struct UncheckedRequest: @unchecked Sendable {
    let run: () -> Void
}
