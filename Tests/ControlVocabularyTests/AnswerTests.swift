import ControlVocabulary
import OSCTransport
import Policy
import Testing

/// Queries are answered by their rows: every path that can be read over OSC answers, with the
/// types OSCQuery's TYPE says (a mismatch would leave the node without a VALUE), and the paths
/// that cannot be read answer nothing.
@Suite("Vocabulary: each row answers its own query")
struct AnswerTests {
    /// A state with an app and a ducking rule, every route there.
    static func state() throws -> PolicyState {
        var policy = PolicyEngine(routes: [("speaker", 1), ("headphones", 0.5)])
        _ = try policy.apply(.register(AppConfiguration(name: "music", category: .playback)))
        _ = try policy.apply(.setDuckingRule(DuckingRule(ducker: "nav", ducked: "music", route: nil, level: -12)))
        _ = try policy.apply(.setShow(Show(scenes: [Scene(name: "preshow")], cues: [Cue(scene: "preshow")])))
        return policy.state
    }

    /// OSCQuery's TYPE of some arguments ("?" for a type it has none for).
    static func tags(_ arguments: [OSCArgument]) -> String {
        arguments.map { argument -> String in
            switch argument {
            case .float: "f"
            case .int32: "i"
            case .string: "s"
            default: "?"
            }
        }.joined()
    }

    /// The query of a row: the path without arguments (`/duck/rule` names its pair).
    static func query(_ row: PathRow) -> OSCMessage {
        let path = VocabularyTableTests.concrete(row)
        return row.path == "/duck/rule" ? OSCMessage(path, [.string("nav"), .string("music"), .string("")]) : OSCMessage(path)
    }

    @Test("a row is read over OSC exactly when it decodes a query and answers it: ACCESS 3, or 1 for a path OSC only reads (not in the namespace)")
    func readableRowsAnswer() throws {
        let state = try Self.state()
        var answered = 0
        for row in Vocabulary.rows where row.overOSC {
            let decoded = try? Vocabulary.decode(Self.query(row)).command
            guard row.access == .readWrite || row.access == .readOnly else {
                if case .query? = decoded { Issue.record("\(row.path) is not readable but decodes a query") }
                continue
            }
            guard case let .query(query)? = decoded else {
                Issue.record("\(row.path) is readable but does not decode a query")
                continue
            }
            #expect(query.path == row.path)
            let reply = try Vocabulary.answer(query, state, notify: { "osc.udp://127.0.0.1:9000/ for \($0)" })
            #expect(!reply.isEmpty, "\(row.path) answers nothing")
            // OSCQuery's VALUE is the reply's first arguments, of the row's TYPE.
            if row.inNamespace {
                let tags = Self.tags(Array(reply.prefix(row.typeTags.count)))
                #expect(tags == row.typeTags, "\(row.path) answers \(reply), TYPE \(row.typeTags)")
            }
            answered += 1
        }
        #expect(answered >= 18, "\(answered) rows answer")
    }

    @Test("a query names the app or route it asks about: an unknown one is -3 or -4")
    func unknownNames() throws {
        let state = try Self.state()
        let volume = try #require(Vocabulary.row(for: "/app/x/volume")).0
        #expect(throws: PolicyError(.unknownApp, "no app named 'ghost'")) {
            try Vocabulary.answer(ControlCommand.Query(volume.path, "ghost"), state)
        }
        #expect(throws: PolicyError(.unknownRoute, "no route named 'hdmi'")) {
            try Vocabulary.answer(ControlCommand.Query("/route/<route>/available", "hdmi"), state)
        }
        #expect(throws: PolicyError(.unknownPath, "no such path: '/nowhere' (docs/OSC.md lists them)")) {
            try Vocabulary.answer(ControlCommand.Query("/nowhere"), state)
        }
    }

    @Test("what a few rows answer, read from the state")
    func someAnswers() throws {
        let state = try Self.state()
        func ask(_ path: String, _ arguments: [OSCArgument] = []) throws -> [OSCArgument] {
            guard case let .query(query) = try Vocabulary.decode(OSCMessage(path, arguments)).command else { return [] }
            return try Vocabulary.answer(query, state, notify: { $0 == "music" ? "osc.udp://10.0.0.2:9000/" : "" })
        }
        #expect(try ask("/app/music/volume") == [.float(1)])
        #expect(try ask("/app/music/category") == [.string("playback"), .string(""), .string("default")])
        #expect(try ask("/app/music/notify") == [.string("osc.udp://10.0.0.2:9000/")])
        #expect(try ask("/system/volume") == [.float(1), .string("speaker")])
        #expect(try ask("/route/headphones/available") == [.int32(1)])
        #expect(try ask("/duck/rule", [.string("nav"), .string("music"), .string("")])
            == [.string("nav"), .string("music"), .string(""), .string("level"), .float(-12)])
    }

    @Test("every read-only row shows its value from a reading, of its TYPE (a meter: one per channel)")
    func readOnlyRowsShow() {
        let shown = PathRow.Shown(app: .init(name: "music", state: "ducked", why: "ducked by nav", peaks: [-6, -.infinity]),
                                  route: .init(name: "speaker", volume: 0.5, peaks: [-3, -200]), nowPlaying: "music",
                                  outsideInterruptions: ["phone", "alarm"])
        var shownRows: [String: [OSCArgument]] = [:]
        for row in Vocabulary.rows where row.access == .readOnly && !row.overOSC {
            guard let show = row.show else {
                Issue.record("\(row.path) is read-only and shows nothing")
                continue
            }
            let values = show(shown)
            let tags = Self.tags(values)
            #expect(tags == (row.perChannel ? String(repeating: row.typeTags, count: values.count) : row.typeTags), "\(row.path)")
            shownRows[row.path] = values
        }
        #expect(shownRows["/app/<app>/state"] == [.string("ducked")])
        #expect(shownRows["/app/<app>/meter"] == [.float(-6), .float(Float(Limits.meter.lowerBound))], "peaks no lower than the floor")
        #expect(shownRows["/route/<route>/volume"] == [.float(0.5)])
        #expect(shownRows["/system/interruption/sources"] == [.string("phone,alarm")])
        #expect(shownRows["/remote/nowPlaying"] == [.string("music")])
        #expect(Vocabulary.rows.filter { $0.access != .readOnly || $0.overOSC }.allSatisfy { $0.show == nil }, "only read-only rows show a value of their own")
        #expect(Vocabulary.rows.filter { $0.access == .readOnly && $0.overOSC }.allSatisfy { !$0.inNamespace && $0.answer != nil },
                "a path OSC only reads answers, and is not in the namespace (its VALUE would be nothing)")
    }

    @Test("every readable row's whole reply, on a state where every value differs from its default and from the others")
    func everyAnswer() throws {
        var policy = PolicyEngine(routes: [("speaker", 0.5), ("headphones", 0.25)],
                                  ducking: DuckingSettings(level: -21, attack: 123, release: 456, target: 7, floor: -33))
        _ = try policy.apply(.register(AppConfiguration(name: "music", category: .playback, options: [.mixWithOthers],
                                                        remoteCommands: [.play, .pause, .nextTrack])))
        _ = try policy.apply(.register(AppConfiguration(name: "nav", category: .playback, options: [.duckOthers], mode: .voicePrompt)))
        _ = try policy.apply(.register(AppConfiguration(name: "desk", category: .multiRoute)))
        _ = try policy.apply(.setAppVolume(app: "music", .decibels(-6)))
        _ = try policy.apply(.setAppSetting(app: "music", .muted(true)))
        _ = try policy.apply(.setActivation(app: "music", .signal, SignalDetection(threshold: -30, attack: 20, hold: 800, hysteresis: 3)))
        _ = try policy.apply(.setChannelMap(app: "desk", [ChannelLink(appChannel: 1, route: "speaker", routeChannel: 2)]))
        _ = try policy.apply(.setDuckingRule(DuckingRule(ducker: "nav", ducked: "music", route: "speaker", level: -9, release: 50)))
        _ = try policy.apply(.setSilentSwitch(true))
        _ = try policy.apply(.setRouteAvailable(route: "headphones", false))
        var preshow = Scene(name: "preshow")
        preshow.fade = 2000
        preshow.apps = [Scene.App(name: "music", volume: .position(0.5))]
        var act1 = Scene(name: "act1")
        act1.curve = .equalPower
        act1.route = .followGraph
        _ = try policy.apply(.setShow(Show(scenes: [preshow, act1], cues: [Cue(scene: "preshow"), Cue(scene: "act1"), Cue(scene: "preshow")])))
        _ = try policy.apply(.cueGo)
        _ = try policy.apply(.storeScene("snap", only: ["nav"]))
        let state = policy.state
        let volume = try #require(state.app("music")).volume
        let route = try #require(state.currentRoute)
        let routeVolume = try #require(state.systemVolume(route))
        // The row's path, the message that asks it, and the whole reply.
        let expected: [(row: String, path: String, arguments: [OSCArgument], reply: [OSCArgument])] = [
            ("/app/<app>/volume", "/app/music/volume", [], [.float(Decibels.sliderPosition(linear: volume))]),
            ("/app/<app>/gain", "/app/music/gain", [], [.float(Decibels.level(volume))]),
            ("/app/<app>/mute", "/app/music/mute", [], [.int32(1)]),
            ("/app/<app>/category", "/app/nav/category", [], [.string("playback"), .string("duckOthers"), .string("voicePrompt")]),
            ("/app/<app>/activation", "/app/music/activation", [], [.string("signal"), .float(-30), .float(20), .float(800), .float(3)]),
            ("/app/<app>/remote", "/app/music/remote", [], [.string("nextTrack,pause,play")]),
            ("/app/<app>/notify", "/app/music/notify", [], [.string("osc.udp://10.0.0.2:9000/")]),
            ("/app/<app>/channelmap", "/app/desk/channelmap", [], [.int32(1), .string("speaker:2")]),
            ("/system/volume", "/system/volume", [], [.float(Decibels.sliderPosition(linear: routeVolume)), .string(route)]),
            ("/system/gain", "/system/gain", [], [.float(Decibels.level(routeVolume)), .string(route)]),
            ("/system/silent", "/system/silent", [], [.int32(1)]),
            ("/route/select", "/route/select", [], [.string(route)]),
            ("/route/<route>/available", "/route/headphones/available", [], [.int32(0)]),
            ("/duck/level", "/duck/level", [], [.float(-21)]),
            ("/duck/attack", "/duck/attack", [], [.float(123)]),
            ("/duck/release", "/duck/release", [], [.float(456)]),
            ("/duck/target", "/duck/target", [], [.float(7)]),
            ("/duck/floor", "/duck/floor", [], [.float(-33)]),
            ("/duck/rule", "/duck/rule", [.string("nav"), .string("music"), .string("speaker")],
             [.string("nav"), .string("music"), .string("speaker"), .string("level"), .float(-9), .string("release"), .float(50)]),
            ("/scene/list", "/scene/list", [], [.string("preshow"), .string("act1"), .string("snap")]),
            ("/scene/current", "/scene/current", [], [.string("preshow"), .int32(1)]),
            ("/cue/state", "/cue/state", [], [.int32(1), .string("preshow"), .int32(2), .string("act1"), .int32(3)]),
            ("/scene/<scene>", "/scene/act1", [], [.string("act1"), .float(0), .string("equalPower"), .int32(0),
                                                  .string(#"{"curve":"equalPower","fade":0,"name":"act1","route":null}"#)]),
        ]
        #expect(route == "speaker" && volume < 1 && routeVolume < 1, "a state where the values tell the rows apart")
        #expect(Set(expected.map(\.row)) == Set(Vocabulary.rows.filter { $0.answer != nil }.map(\.path)), "every row that answers, once")
        for (row, path, arguments, reply) in expected {
            guard case let .query(query) = try Vocabulary.decode(OSCMessage(path, arguments)).command else {
                Issue.record("\(path) is not a query")
                continue
            }
            #expect(query.path == row)
            #expect(try Vocabulary.answer(query, state, notify: { $0 == "music" ? "osc.udp://10.0.0.2:9000/" : "" }) == reply, "\(path)")
        }
        // What the answers read as it changes: the gain floors at -144, the target at off.
        _ = try policy.apply(.setAppVolume(app: "music", .position(0)))
        _ = try policy.apply(.setDucking(.target(nil)))
        #expect(try Vocabulary.answer(.init("/app/<app>/gain", "music"), policy.state) == [.float(-144)])
        #expect(try Vocabulary.answer(.init("/duck/target"), policy.state) == [.string("off")])
        #expect(throws: PolicyError.self) { try Vocabulary.answer(.init("/duck/rule"), policy.state) }
    }

    @Test("each of a person's app settings has its row, which answers it (a setting replies as its row answers)")
    func settingsHaveRows() throws {
        for change in AppSettings().changes {
            let row = try #require(Vocabulary.row(for: "/app/music/\(change.name)")?.0, "no row for \(change.name)")
            #expect(row.path == "/app/<app>/\(change.name)" && row.answer != nil && row.access == .readWrite, "\(row.path)")
        }
    }
}
