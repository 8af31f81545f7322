import Foundation
import Policy
import Testing
@testable import SessionStore

/// Scenes and cues in session files and in the state file (docs/SESSIONS.md, "Scenes and cues").
@Suite("Scenes and cues in files")
struct ShowFileTests {
    static let rig = #"""
        "routes": [{"name": "pa", "ports": ["system:playback_1"]}, {"name": "lobby", "ports": ["lobby:in_1"]}],
        "apps": [{"name": "bed", "category": "playback"}, {"name": "mic", "category": "playback", "channels": 1}]
        """#

    func parse(_ json: String) throws(SessionError) -> Session {
        try SessionLoader.parse(Data(json.utf8), file: "Sessions/show.json")
    }

    func problems(_ json: String) -> [String] {
        do {
            _ = try parse(json)
            return []
        } catch {
            return error.description.split(separator: "\n").map(String.init)
        }
    }

    @Test("scenes and cues load: every field, both forms of scenes, the show's safe list, cues by name or as objects")
    func loads() throws {
        let session = try parse("""
            {\(Self.rig),
             "scenes": {"safe": ["mic"], "list": [
               {"name": "preshow", "fade": 3000, "curve": "equalPower", "route": "pa", "silent": false,
                "apps": {"bed": {"gain": -10, "active": true}, "mic": {"volume": 0.5, "mute": true}},
                "routes": {"lobby": {"volume": 1}, "pa": {"gain": -3}},
                "ducking": {"level": -20, "target": "off", "attack": 50, "release": 900}, "safe": ["lobby"]},
               {"name": "act1", "route": null, "ducking": {"target": 12}}
             ]},
             "cues": ["preshow", {"scene": "act1", "continue": true, "wait": 2500}, "preshow"]}
            """)
        let show = session.show
        #expect(show.safe == ["mic"] && show.scenes.map(\.name) == ["preshow", "act1"])
        let preshow = show.scenes[0]
        #expect(preshow.fade == 3000 && preshow.curve == .equalPower && preshow.route == .select("pa") && preshow.silent == false)
        #expect(preshow.apps == [Scene.App(name: "bed", volume: .decibels(-10), active: true), Scene.App(name: "mic", volume: .position(0.5), muted: true)])
        #expect(preshow.routes == [Scene.Route(name: "pa", volume: .decibels(-3)), Scene.Route(name: "lobby", volume: .position(1))], "in the session's route order")
        #expect(preshow.ducking == Scene.Ducking(level: -20, target: .some(nil), attack: 50, release: 900) && preshow.safe == ["lobby"])
        #expect(show.scenes[1].route == .followGraph && show.scenes[1].ducking.target == .some(12) && show.scenes[1].fade == 0 && show.scenes[1].curve == .fader)
        #expect(show.cues == [Cue(scene: "preshow"), Cue(scene: "act1", continues: true, wait: 2500), Cue(scene: "preshow")])
        #expect(session.warnings.isEmpty, "\(session.warnings)")

        let list = try parse(#"{\#(Self.rig), "scenes": [{"name": "a"}]}"#)
        #expect(list.show.scenes.map(\.name) == ["a"] && list.show.safe.isEmpty && list.show.cues.isEmpty)
    }

    @Test("an app a scene names that is not declared, a safe name that is neither, a wait without continue: warnings with their line, and the file loads")
    func warnings() throws {
        let session = try parse("""
            {\(Self.rig),
             "scenes": {"safe": ["presenter"], "list": [
               {"name": "a",
                "apps": {"synth": {"volume": 0.5}}}
             ]},
             "cues": [{"scene": "a", "wait": 100}]}
            """)
        let lines = SessionError.warnings(of: session, file: "Sessions/show.json")
        #expect(lines == [
            "Sessions/show.json:3 scenes.safe[0]: no app or route named 'presenter' is declared: it is kept safe once an app of that name registers over OSC",
            "Sessions/show.json:5 scenes.list[0].apps.synth: no app named 'synth' is declared in apps: the scene sets it once it registers over OSC",
            "Sessions/show.json:7 cues[0].wait: a wait is only for a cue that continues (\"continue\": true): this one waits for GO",
        ], "\(lines)")
        #expect(session.show.scenes[0].apps.map(\.name) == ["synth"])
    }

    @Test("broken scenes and cues are refused with file, line and field", arguments: [
        (#""scenes": [{"name": "a", "routes": {"hdmi": {"volume": 1}}}]"#, "scenes[0].routes.hdmi: no route named 'hdmi' is declared in routes"),
        (#""scenes": [{"name": "a", "route": "hdmi"}]"#, "scenes[0].route: no route named 'hdmi' is declared in routes (null: follow the graph)"),
        (#""scenes": [{"name": "a"}, {"name": "a"}]"#, "scenes[1].name: scene 'a' is already declared at scenes[0]"),
        (#""scenes": [{"name": "list"}]"#, "scenes[0].name: 'list' is a word of the /scene paths (current, delete, list, recall, store): name the scene otherwise"),
        (#""scenes": [{"name": "act 1"}]"#, "scenes[0].name: expected a name of 1 to 48 letters, digits, '-', '_' or '.', got 'act 1'"),
        (#""scenes": [{"fade": 10}]"#, "scenes[0].name: is required"),
        (#""scenes": [{"name": "a", "fade": -1}]"#, "scenes[0].fade: expected a number from 0 to 600000 milliseconds, got -1"),
        (#""scenes": [{"name": "a", "fade": 600001}]"#, "scenes[0].fade: expected a number from 0 to 600000 milliseconds, got 600001"),
        (#""scenes": [{"name": "a", "curve": "log"}]"#, "scenes[0].curve: expected one of fader, linear, equalPower, got 'log'"),
        (#""scenes": [{"name": "a", "apps": {"bed": {"volume": 1.5}}}]"#, "scenes[0].apps.bed.volume: expected a number from 0 to 1 (a slider position), got 1.5"),
        (#""scenes": [{"name": "a", "apps": {"bed": {"gain": 30}}}]"#, "scenes[0].apps.bed.gain: expected a number from -144 to 24 dB, got 30"),
        (#""scenes": [{"name": "a", "apps": {"bed": {"volume": 1, "gain": 0}}}]"#, "scenes[0].apps.bed.gain: give volume or gain, not both"),
        (#""scenes": [{"name": "a", "apps": {"bed": {"level": 1}}}]"#, "scenes[0].apps.bed.level: unknown field (expected one of active, gain, mute, volume)"),
        (#""scenes": [{"name": "a", "routes": {"pa": {"gain": 3}}}]"#, "scenes[0].routes.pa.gain: expected a number from -144 to 0 dB, got 3"),
        (#""scenes": [{"name": "a", "ducking": {"target": "on"}}]"#, "scenes[0].ducking.target: expected a number from 0 to 60 LU (or \"off\"), got 'on'"),
        (#""scenes": [{"name": "a", "ducking": {"floor": -20}}]"#, "scenes[0].ducking.floor: unknown field (expected one of attack, level, release, target)"),
        (#""scenes": {"safe": ["mic"], "scenes": []}"#, "scenes.scenes: unknown field (expected one of list, safe)"),
        (#""scenes": [{"name": "a"}], "cues": ["b"]"#, "cues[0]: no scene named 'b' is declared in scenes"),
        (#""scenes": [{"name": "a"}], "cues": [{"scene": "b"}]"#, "cues[0].scene: no scene named 'b' is declared in scenes"),
        (#""scenes": [{"name": "a"}], "cues": [{"scene": "a", "wait": -5}]"#, "cues[0].wait: expected a number from 0 to 3600000 milliseconds, got -5"),
        (#""scenes": [{"name": "a"}], "cues": [{"continue": true}]"#, "cues[0].scene: is required"),
        (#""scenes": [{"name": "a"}], "cues": [3]"#, "cues[0]: expected a scene's name or {\"scene\": name, \"continue\": …, \"wait\": …}, got 3"),
    ])
    func broken(_ fields: String, _ expected: String) {
        let found = problems("{\(Self.rig),\n \(fields)}")
        #expect(found == ["Sessions/show.json:3 \(expected)"], "\(found)")
    }

    @Test("a stored scene and the playhead go into the state file and come back; what the session no longer has is left out and said")
    func savedShow() throws {
        let session = try parse(#"{\#(Self.rig), "scenes": [{"name": "a", "fade": 100}, {"name": "b"}], "cues": ["a", "b", "a"]}"#)
        var stored = Scene(name: "snap")
        stored.fade = 1500
        stored.curve = .linear
        stored.apps = [Scene.App(name: "bed", volume: .position(0.25), muted: false, active: true), Scene.App(name: "gone", volume: .decibels(-6))]
        stored.routes = [Scene.Route(name: "pa", volume: .position(0.5)), Scene.Route(name: "lobby", volume: .decibels(-12))]
        stored.route = .followGraph
        stored.silent = true
        stored.ducking = Scene.Ducking(level: -9, target: .some(nil), attack: 10, release: 20)
        stored.safe = ["mic"]
        var a = Scene(name: "a")
        a.apps = [Scene.App(name: "bed", muted: true)]
        a.route = .select("lobby")
        var show = session.show
        show.restore(stored: [stored, a], next: 2, current: 1, currentScene: "snap")
        var saved = SavedState(silent: false, selectedRoute: nil, ducking: .init(level: -14, attack: 100, release: 500),
                               routeVolumes: [:], appVolumes: [:], apps: [])
        saved.show = .init(show)
        let data = try JSONEncoder().encode(saved)
        let read = try JSONDecoder().decode(SavedState.self, from: data)
        #expect(read == saved)
        let (restored, notes) = session.applying(read)
        #expect(restored.show.stored == [stored, a] && restored.show.next == 2 && restored.show.current == 1 && restored.show.currentScene == "snap")
        #expect(notes.isEmpty, "\(notes)")

        #expect(read.show?.nextScene == "a", "the scene at the playhead is kept with it")

        // The file lost the lobby route and got a shorter cue list since: the playhead goes to
        // the cue of its scene.
        let smaller = try parse(#"{"routes": [{"name": "pa", "ports": ["system:playback_1"]}], "scenes": [{"name": "a"}, {"name": "b"}], "cues": ["a", "b"]}"#)
        let (after, said) = smaller.applying(read)
        #expect(after.show.stored[0].routes.map(\.name) == ["pa"] && after.show.stored[1].route == nil)
        #expect(after.show.next == 0 && after.show.nextScene == "a" && after.show.current == 1, "cue 3 (a) is gone: the playhead on cue 1 (a)")
        #expect(said.contains("stored scene 'snap': route 'lobby' is no longer in the session, left out"), "\(said)")
        #expect(said.contains("stored scene 'a': route 'lobby' is no longer in the session, its selection left out"), "\(said)")
        #expect(said.count == 2, "\(said)")

        // A list with no cue of that scene: the playhead where the list has room, and said.
        let other = try parse(#"{"routes": [{"name": "pa", "ports": ["system:playback_1"]}], "scenes": [{"name": "b"}], "cues": ["b"]}"#)
        let (moved, note) = other.applying(read)
        #expect(moved.show.next == 1 && note.contains("the cue list has no cue of scene 'a' now: the playhead is at cue 2"), "\(note)")
    }

    @Test("a hand-edited stored scene with values out of range or a bad name is left out or trimmed, and said")
    func handEdited() throws {
        let session = try parse(#"{\#(Self.rig)}"#)
        // A scene pasted in the session file's form (no fade, no curve) and no playhead: the
        // defaults, and the rest of the state file is read.
        let json = #"""
            {"version": 1, "silent": true, "ducking": {"level": -14, "attack": 100, "release": 500}, "routeVolumes": {}, "appVolumes": {}, "apps": [],
             "show": {"scenes": [
               {"name": "bad name", "fade": 0, "curve": "fader"},
               {"name": "ok", "fade": 0, "curve": "fader", "apps": {"bed": {"volume": 7}}},
               {"name": "pasted", "apps": {"bed": {"gain": -6}}}
             ]}}
            """#
        let saved = try JSONDecoder().decode(SavedState.self, from: Data(json.utf8))
        let (restored, notes) = session.applying(saved)
        #expect(restored.silentSwitch, "the rest of the file read")
        #expect(restored.show.stored.map(\.name) == ["ok", "pasted"] && restored.show.stored[0].apps == [Scene.App(name: "bed")])
        #expect(restored.show.stored[1].fade == 0 && restored.show.stored[1].curve == .fader && restored.show.next == 0)
        #expect(notes == ["stored scene 'bad name': unreadable, left out", "stored scene 'ok': app 'bed' volume 7.0 is out of range, left out"], "\(notes)")
    }
}
