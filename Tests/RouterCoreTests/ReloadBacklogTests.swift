import Policy
@testable import RouterCore
import SessionStore
import Testing

/// What waits for a restart after a reload, and what it does to the state a save keeps: the
/// values the restart's file brings, never the running ones as changes made at run time.
@Suite("Reload steps that wait for a restart")
struct ReloadBacklogTests {
    static let saved = SavedState(
        silent: false, selectedRoute: nil,
        ducking: .init(level: -14, attack: 100, release: 500, rules: []),
        routeVolumes: ["speaker": 1], appVolumes: ["music": 0.5],
        apps: [SavedState.App(name: "music", category: "multiRoute", options: [], mode: "default", remote: [], resume: "app",
                              channels: 2, channelmap: nil)])

    @Test("refused steps are laid over the saved state: the rules left to the file, the file's map and volumes kept; a step that applies later ends the wait")
    func laidOver() {
        var backlog = ReloadBacklog()
        let rule = DuckingRule(ducker: "nav", ducked: "music", route: "line", level: -30)
        let map = [ChannelLink(appChannel: 1, route: "line", routeChannel: 1)]
        for event: PolicyEvent in [.setDuckingRules([rule]), .setChannelMap(app: "music", map),
                                   .setSystemVolume(route: "line", .position(0.4))] {
            backlog.refused(.init(subject: ReloadBacklog.subject(of: event, label: "x"), reason: "no route named 'line'", event: event))
        }
        backlog.setRestartEdits(["routes"])
        #expect(backlog.descriptions == ["routes changed: restart to apply",
                                         "ducking rules: no route named 'line'; waits for a restart",
                                         "channel map of 'music': no route named 'line'; waits for a restart",
                                         "volume of route 'line': no route named 'line'; waits for a restart"])
        let state = backlog.laid(over: Self.saved)
        #expect(state.ducking.rules == nil, "the file's rules stand at the restart")
        #expect(state.apps.first?.channelmap == [SavedState.ChannelMapLine(channel: 1, target: "line:1")])
        #expect(state.routeVolumes == ["speaker": 1, "line": 0.4])

        // A later reload's step on the same subject: refused again, it takes the place; applied, the wait ends.
        backlog.refused(.init(subject: "ducking rules", reason: "again", event: .setDuckingRules([])))
        #expect(backlog.steps.filter { $0.subject == "ducking rules" }.map(\.reason) == ["again"])
        backlog.applied(subject: "ducking rules")
        backlog.applied(subject: "channel map of 'music'")
        backlog.setRestartEdits([])
        #expect(backlog.descriptions == ["volume of route 'line': no route named 'line'; waits for a restart"])
        #expect(backlog.laid(over: Self.saved).ducking.rules == [] && backlog.laid(over: Self.saved).apps == Self.saved.apps)
    }

    @Test("a change made at run time of a whole setting ends the wait of the step that sets it; removing an app drops every step about it")
    func runTimeChangesAndRemovals() {
        let rule = DuckingRule(ducker: "nav", ducked: "music", level: -25)
        var backlog = ReloadBacklog()
        for event: PolicyEvent in [.register(AppConfiguration(name: "music", category: .playback)), .setChannelMap(app: "music", nil),
                                   .setDuckingRules([rule]), .setAppVolume(app: "music", .position(0.2))] {
            backlog.refused(.init(subject: ReloadBacklog.subject(of: event, label: "x"), reason: "refused", event: event))
        }
        #expect(backlog.runTimeChange(.activate(app: "music")) == [], "activating is no setting a step waits to make")
        #expect(backlog.runTimeChange(.setAppVolume(app: "music", .position(0.7))).map(\.subject) == ["volume of 'music'"])
        #expect(backlog.runTimeChange(.setAppVolume(app: "music", .position(0.7))) == [], "that wait has ended")
        backlog.refused(.init(subject: "app 'game'", reason: "refused", event: nil, app: "game"))
        #expect(backlog.appRemoved("music") == ["configuration of 'music'", "channel map of 'music'"])
        #expect(backlog.appRemoved("game") == ["app 'game'"])
        #expect(backlog.steps.map(\.subject) == ["ducking rules"])
    }

    @Test("one ducking rule set or removed at run time while the file's rules wait: the edit goes into the waiting list, which keeps waiting, and the save keeps the merged list (not the file's, not the running one)")
    func runTimeRuleEditsTheWaitingRules() throws {
        let line = DuckingRule(ducker: "nav", ducked: "music", route: "line", level: -30)
        let old = DuckingRule(ducker: "mic", ducked: "music", level: -10)
        var backlog = ReloadBacklog()
        backlog.refused(.init(subject: "ducking rules", reason: "no route named 'line'", event: .setDuckingRules([old, line])))
        #expect(backlog.laid(over: Self.saved).ducking.rules == nil, "unedited: the file's rules stand at the restart")

        let everywhere = DuckingRule(ducker: "nav", ducked: "music", level: -25)
        let outcome = backlog.runTimeChange(.setDuckingRule(everywhere))
        #expect(outcome == [.edited(subject: "ducking rules")])
        #expect(backlog.steps.count == 1, "the file's rule on line still waits")
        let merged = try #require(backlog.laid(over: Self.saved).ducking.rules)
        #expect(merged == [old, line, everywhere].map(SavedState.Ducking.Rule.init))

        // A rule of the file changed, one removed: both go into the waiting list.
        _ = backlog.runTimeChange(.setDuckingRule(DuckingRule(ducker: "nav", ducked: "music", route: "line", level: -12)))
        _ = backlog.runTimeChange(.removeDuckingRule(ducker: "mic", ducked: "music", route: nil))
        #expect(backlog.laid(over: Self.saved).ducking.rules
                    == [DuckingRule(ducker: "nav", ducked: "music", route: "line", level: -12), everywhere].map(SavedState.Ducking.Rule.init))

        // Removing a rule the waiting list does not hold (one only in force now) is no edit.
        #expect(backlog.runTimeChange(.removeDuckingRule(ducker: "game", ducked: "music", route: nil)) == [])

        // Edits that bring the list back to the file's: the file's rules stand again, saved as nil.
        _ = backlog.runTimeChange(.setDuckingRule(line))
        _ = backlog.runTimeChange(.removeDuckingRule(ducker: "nav", ducked: "music", route: nil))
        _ = backlog.runTimeChange(.setDuckingRule(old))
        #expect(backlog.laid(over: Self.saved).ducking.rules == [line, old].map(SavedState.Ducking.Rule.init), "the order is the edits'")
        _ = backlog.runTimeChange(.removeDuckingRule(ducker: "mic", ducked: "music", route: nil))
        _ = backlog.runTimeChange(.removeDuckingRule(ducker: "nav", ducked: "music", route: "line"))
        _ = backlog.runTimeChange(.setDuckingRule(old))
        _ = backlog.runTimeChange(.setDuckingRule(line))
        #expect(backlog.laid(over: Self.saved).ducking.rules == nil, "the file's list again")

        // The whole list set at run time ends the wait; the step ended is the file's as well as the edited one.
        _ = backlog.runTimeChange(.setDuckingRule(everywhere))
        let ended = backlog.runTimeChange(.setDuckingRules([]))
        guard case let .ended(step)? = ended.first, ended.count == 1 else { Issue.record("\(ended)"); return }
        #expect(step.subject == "ducking rules" && step.editedAtRunTime && step.fileEvent == .setDuckingRules([old, line]))

        // A later reload refused again takes the place of an edited step, and says it did.
        backlog.refused(.init(subject: "ducking rules", reason: "r", event: .setDuckingRules([line])))
        _ = backlog.runTimeChange(.setDuckingRule(everywhere))
        #expect(backlog.refused(.init(subject: "ducking rules", reason: "r", event: .setDuckingRules([old]))) != nil)
        #expect(backlog.refused(.init(subject: "ducking rules", reason: "r", event: .setDuckingRules([line]))) == nil, "not edited")
        #expect(backlog.steps.map(\.subject) == ["ducking rules"])
    }

    @Test("a category or remote commands set at run time while the file's configuration of that app waits: the edit goes into the waiting configuration, the rest of it (resume, activation) still comes from the file")
    func runTimeCategoryEditsTheWaitingConfiguration() {
        var configuration = AppConfiguration(name: "music", category: .playback)
        configuration.resume = .auto
        configuration.remoteCommands = [.play]
        var backlog = ReloadBacklog()
        backlog.refused(.init(subject: "configuration of 'music'", reason: "refused", event: .register(configuration)))

        #expect(backlog.runTimeChange(.setCategory(app: "music", category: .multiRoute, options: [.mixWithOthers], mode: .spokenAudio))
                    == [.edited(subject: "configuration of 'music'")])
        #expect(backlog.runTimeChange(.setRemoteCommands(app: "music", [.pause, .play])).count == 1)
        #expect(backlog.runTimeChange(.setCategory(app: "game", category: .ambient, options: [], mode: .default)) == [], "another app's")
        let app = backlog.laid(over: Self.saved).apps.first
        #expect(app?.category == "multiRoute" && app?.options == ["mixWithOthers"] && app?.mode == "spokenAudio")
        #expect(app?.remote == ["pause", "play"])
        #expect(app?.resume == configuration.resume.rawValue, "the file's resume still comes at the restart")
        #expect(backlog.steps.map(\.subject) == ["configuration of 'music'"])
    }
}

@Suite("Reload edits that need a restart")
struct RestartEditsTests {
    @Test("an app the file added that JACK refused waits for the router to join the server again, not for a restart; it leaves the list when it applies, or when the file takes it out")
    func additionWaitsForTheServer() {
        var backlog = ReloadBacklog()
        let synth = Session.App(name: "synth", category: .ambient)
        let step = SessionReload.Step.add(synth, volume: nil)
        let subject = ReloadBacklog.subject(of: .unregister(app: "synth"), label: "")
        backlog.refused(.init(subject: subject, reason: "could not register JACK port 'duckrouter:synth_in_1'", event: nil, app: "synth", addition: step))
        #expect(backlog.additions == [step])
        #expect(backlog.descriptions == ["\(subject): could not register JACK port 'duckrouter:synth_in_1'; tried again when the router joins the JACK server again"])
        backlog.applied(subject: subject)
        #expect(backlog.additions.isEmpty && backlog.descriptions.isEmpty)
        backlog.refused(.init(subject: subject, reason: "refused", event: nil, app: "synth", addition: step))
        _ = backlog.appRemoved("synth")
        #expect(backlog.additions.isEmpty, "the app taken out of the file: nothing to add again")
    }

    @Test("compared with the session the router started with: an added route waits for the restart, and no longer once the edit is taken back; a changed channel count of a running app does too")
    func comparedWithRunning() {
        var running = Session()
        running.routes = [Session.Route(name: "speaker", ports: ["system:playback_1"])]
        running.apps = [Session.App(name: "music", category: .playback)]
        var edited = running
        edited.routes.append(Session.Route(name: "line", ports: ["system:playback_2"]))
        edited.apps[0].channelCount = 1
        edited.osc.port = 9000
        #expect(SessionReload.restartEdits(running: running, channels: ["music": 2], file: edited)
                    == ["routes", "'music' channel count", "OSC settings"])
        #expect(SessionReload.restartEdits(running: running, channels: ["music": 2], file: running).isEmpty)
    }
}
