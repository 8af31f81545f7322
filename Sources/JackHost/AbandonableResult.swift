import Dispatch

/// A result handed from one thread to another that waits for it only so long: either the waiter
/// takes it, or the thread that produced it learns that nobody waits any more and deals with it
/// itself. JackClient's requests to the server (`ServerRequests`) and the router's closing of a
/// client (RouterCore's `JackLink`) both wait this way for a server that may never answer.
/// Any thread: one produces (`finish`), one waits (`wait`, then `abandon`).
public final class AbandonableResult<Result>: @unchecked Sendable {
    // @unchecked: `value`, `done` and `abandoned` are read and written only under `lock`; the
    // semaphore is thread-safe.
    private let lock = Locked((value: Result?.none, done: false, abandoned: false))
    private let signal = DispatchSemaphore(value: 0)

    public init() {}

    /// Called once the result is there; true when the waiter no longer waits for it.
    public func finish(_ result: Result) -> Bool {
        let abandoned = lock.withLock { state in
            state.value = result
            state.done = true
            return state.abandoned
        }
        if !abandoned { signal.signal() }
        return abandoned
    }

    /// Waits up to `seconds` for the result; true when it came.
    public func wait(seconds: Double) -> Bool {
        signal.wait(timeout: .now() + seconds) == .success
    }

    /// The waiter stops waiting; false when the result came after all (then it is `result`).
    public func abandon() -> Bool {
        lock.withLock { state in
            if state.done { return false }
            state.abandoned = true
            return true
        }
    }

    public var result: Result? { lock.withLock { $0.value } }
}
