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
