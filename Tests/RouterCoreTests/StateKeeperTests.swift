import Policy
@testable import RouterCore
import SessionStore
import Testing

/// What the state file keeps of ducking: level, attack and release always (as before); the
/// target, floor and rules only where a change at run time made them differ from the session
/// file's, so an edit of the file counts at the next start.
@Suite("Saved ducking settings")
struct StateKeeperTests {
    static let file = DuckingSettings(target: 15, rules: [DuckingRule(ducker: "nav", ducked: "music", level: -20)])

    static func saved(_ change: (inout PolicyEngine) throws -> Void) throws -> SavedState.Ducking {
        var policy = PolicyEngine(routes: [("speaker", 1)], ducking: file)
        try change(&policy)
        return StateKeeper.savedState(policy.state, channels: [:], defaultChannelCount: 2, fileDucking: file).ducking
    }

    @Test("as the file has them: target, floor and rules are not kept; changed at run time: they are, and a file edit then does not count")
    func keptOnlyWhenChanged() throws {
        let untouched = try Self.saved { _ in }
        #expect(untouched.target == nil && untouched.floor == nil && untouched.rules == nil && untouched.level == -14)
        let changed = try Self.saved { policy in
            try policy.apply(.setDucking(.target(nil)))
            try policy.apply(.setDucking(.floor(-30)))
            try policy.apply(.setDuckingRule(DuckingRule(ducker: "nav", ducked: "music", route: "speaker", level: -6)))
        }
        #expect(changed.target == .off && changed.floor == -30)
        #expect(changed.rules?.map(\.rule) == [DuckingRule(ducker: "nav", ducked: "music", level: -20),
                                               DuckingRule(ducker: "nav", ducked: "music", route: "speaker", level: -6)])
        // Laid over the file at the next start: the run-time changes stand.
        var session = Session()
        session.routes = [Session.Route(name: "speaker", ports: ["system:playback_1"])]
        session.ducking = Self.file
        let state = SavedState(silent: false, selectedRoute: nil, ducking: changed, routeVolumes: [:], appVolumes: [:], apps: [])
        let (merged, notes) = session.applying(state)
        #expect(notes.isEmpty && merged.ducking.target == nil && merged.ducking.floor == -30 && merged.ducking.rules.count == 2)
    }
}

/// A save the receiver could not write stays pending and is tried again; the outcome of the
/// newest hand-over decides; failures are logged at the first of a run, then once a minute.
@Suite("A failed state save is kept")
struct FailedSaveTests {
    static func keeper() -> StateKeeper { StateKeeper(onSave: { _, _ in }) }

    @Test("a failed save stays pending and is tried again after 1 s, then 2 s, 4 s...; once written it is no longer retried and the failure stays on record")
    func keptAndRetried() throws {
        var keeper = Self.keeper()
        let asked = keeper.request()
        #expect(asked)
        let firstTaken = keeper.take(now: 0)
        let first = try #require(firstTaken)
        let again = keeper.take(now: 0)
        #expect(!keeper.pending && again == nil, "handed over once")
        var report = keeper.finished(first, failure: "Read-only file system", now: 0.1)
        #expect(report == .failed(reason: "Read-only file system", attempts: 1))
        #expect(keeper.pending, "kept")
        #expect(keeper.lastFailure?.retrying == true && keeper.lastFailure?.reason == "Read-only file system")
        #expect(!keeper.shouldRetry(now: 0.9) && keeper.shouldRetry(now: 1.0))
        let secondTaken = keeper.take(now: 1.0)
        let second = try #require(secondTaken)
        report = keeper.finished(second, failure: "Read-only file system", now: 1.1)
        #expect(report == .none, "a run of failures is logged at its first")
        #expect(keeper.pending && keeper.lastFailure?.attempts == 2)
        #expect(!keeper.shouldRetry(now: 2.9) && keeper.shouldRetry(now: 3.0), "2 s after the second")
        let thirdTaken = keeper.take(now: 3.0)
        let third = try #require(thirdTaken)
        report = keeper.finished(third, failure: nil, now: 3.1)
        #expect(report == .recovered(attempts: 2))
        #expect(!keeper.pending && !keeper.shouldRetry(now: 100))
        #expect(keeper.lastFailure?.retrying == false && keeper.lastFailure?.attempts == 2, "on record for /state")
    }

    @Test("an older hand-over's outcome is overtaken by a newer one's: its failure does not make a save pending; a change while saves fail joins the save that is owed")
    func newestDecides() throws {
        var keeper = Self.keeper()
        _ = keeper.request()
        let olderTaken = keeper.take(now: 0)
        let older = try #require(olderTaken)
        _ = keeper.request()
        let newerTaken = keeper.take(now: 0.2)
        let newer = try #require(newerTaken)
        var report = keeper.finished(older, failure: "No space left on device", now: 0.3)
        #expect(report == .none)
        #expect(!keeper.pending && keeper.lastFailure == nil)
        report = keeper.finished(newer, failure: "No space left on device", now: 0.4)
        #expect(report == .failed(reason: "No space left on device", attempts: 1))
        #expect(keeper.pending)
        let scheduled = keeper.request()
        #expect(!scheduled && keeper.pending && keeper.requests == 3)
    }

    @Test("a write under way at stop that then fails is taken once more after stop, once only")
    func failedDuringStop() throws {
        var keeper = Self.keeper()
        _ = keeper.request()
        let firstTaken = keeper.take(now: 0)
        _ = keeper.finished(try #require(firstTaken), failure: "Read-only file system", now: 0.1)
        let retryTaken = keeper.take(now: 1.1)
        let retry = try #require(retryTaken, "housekeeping's retry, under way...")
        #expect(keeper.take(now: 1.2) == nil, "...when the router stops: the hand-over at stop has nothing to take")
        _ = keeper.finished(retry, failure: "Read-only file system", now: 1.3)
        let lastTaken = keeper.takeAfterStop(now: 1.4)
        let last = try #require(lastTaken, "pending again: one more try after stop")
        _ = keeper.finished(last, failure: "Read-only file system", now: 1.5)
        #expect(keeper.takeAfterStop(now: 1.6) == nil && keeper.pending, "one try only")
    }

    @Test("a run of failures is logged at its first and then at most once a minute, with the count")
    func boundedLog() throws {
        var keeper = Self.keeper()
        _ = keeper.request()
        var logged: [StateKeeper.Report] = []
        var attempts = 0
        for second in 0..<130 {
            let now = Double(second)
            guard second == 0 || keeper.shouldRetry(now: now), let number = keeper.take(now: now) else { continue }
            attempts += 1
            let report = keeper.finished(number, failure: "Too many open files", now: now)
            if report != .none { logged.append(report) }
        }
        #expect(attempts == 9, "at 0, 1, 3, 7, 15, 31, 61, 91 and 121 s")
        #expect(logged == [.failed(reason: "Too many open files", attempts: 1), .failed(reason: "Too many open files", attempts: 7),
                           .failed(reason: "Too many open files", attempts: 9)])
    }
}
