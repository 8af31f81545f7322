import Foundation
import Policy
import Testing
@testable import SessionStore

@Suite("Session files")
struct SessionLoaderTests {
    func parse(_ json: String) throws(SessionError) -> Session {
        try SessionLoader.parse(Data(json.utf8), file: "Sessions/test.json")
    }

    func problems(_ json: String) -> [String] {
        do {
            _ = try parse(json)
            return []
        } catch {
            return error.description.split(separator: "\n").map(String.init)
        }
    }

    @Test("{} is a valid session with every default")
    func emptyIsValid() throws {
        let session = try parse("{}")
        #expect(session == Session())
        #expect(session.client == "duckrouter" && session.rampMilliseconds == 20 && session.osc.port == 9951)
        #expect(session.http.port == 9952)
    }

    @Test("http.port: a port, or 0 for no HTTP server")
    func httpPort() throws {
        #expect(try parse(#"{"http": {"port": 8080}}"#).http.port == 8080)
        #expect(try parse(#"{"http": {"port": 0}}"#).http.port == 0)
    }

    @Test("osc TCP limits: 64 connections, 32 per address, a 10 s packet deadline by default; each settable, out of range refused with the field")
    func oscTCPLimits() throws {
        let defaults = try parse("{}").osc
        #expect(defaults.tcpConnections == 64 && defaults.tcpConnectionsPerAddress == 32 && defaults.tcpPacketTimeout == 10)
        let set = try parse(#"{"osc": {"tcpConnections": 8, "tcpConnectionsPerAddress": 2, "tcpPacketTimeout": 0.5}}"#).osc
        #expect(set.tcpConnections == 8 && set.tcpConnectionsPerAddress == 2 && set.tcpPacketTimeout == 0.5)
        #expect(problems(#"{"osc": {"tcpConnections": 0}}"#).contains { $0.contains("osc.tcpConnections: expected a whole number from 1 to 4096") })
        #expect(problems(#"{"osc": {"tcpConnectionsPerAddress": 1.5}}"#).contains { $0.contains("osc.tcpConnectionsPerAddress") })
        #expect(problems(#"{"osc": {"tcpPacketTimeout": 0}}"#).contains { $0.contains("osc.tcpPacketTimeout") })
    }

    @Test("loudness.meter: off by default, true turns metering on; anything else is refused with the field")
    func loudnessMeter() throws {
        #expect(try parse("{}").loudness.meter == false)
        #expect(try parse(#"{"loudness": {"meter": true}}"#).loudness.meter)
        #expect(problems(#"{"loudness": {"meter": "no"}}"#).contains { $0.contains("loudness.meter") })
        #expect(problems(#"{"loudness": {"target": 15}}"#).contains { $0.contains("loudness.target: unknown field") })
    }

    @Test("a remote route over netjack2: its ports are the far end's to_slave ports; netjack2's listen address and port")
    func remoteRoute() throws {
        let session = try parse(#"""
            {"netjack2": {"address": "10.0.0.1", "port": 19100},
             "routes": [{"name": "stage", "remote": {"engine": "netjack2", "peer": "stagebox"}, "channels": 3, "private": true},
                        {"name": "foh", "ports": ["system:playback_1"]}]}
            """#)
        #expect(session.routes[0].ports == ["stagebox:to_slave_1", "stagebox:to_slave_2", "stagebox:to_slave_3"])
        #expect(session.routes[0].remote == .netjack2(peer: "stagebox") && session.routes[0].isPrivate)
        #expect(session.netjack2.address == "10.0.0.1" && session.netjack2.port == 19100)
        let local = try parse(#"{"routes": [{"name": "foh", "ports": ["system:playback_1"]}]}"#)
        #expect(session.usesNetJack2 && !local.usesNetJack2)
        #expect(session.routes.map(\.kind) == [.netjack2, .graph])
        #expect(session.routes.allSatisfy { $0.unseenLatency == nil && !$0.farEndWatched && $0.sender == nil }, "netjack2 reports its own latency and needs no sender")
        #expect(try parse(#"{"routes": [{"name": "s", "remote": {"engine": "netjack2", "peer": "p"}}]}"#).routes[0].channelCount == 2)
        #expect(try parse("{}").netjack2 == Session.NetJack2Settings(), "netjack2's own defaults")
        #expect(Session.NetJack2Settings().address == "225.3.19.154" && Session.NetJack2Settings().port == 19000)
    }

    @Test("a remote route over zita-njbridge: the sender's ports, the far end watched by default, what the route says of itself")
    func bridgedRoute() throws {
        let session = try parse(#"""
            {"routes": [{"name": "stage", "remote": {"engine": "zita-njbridge", "host": "10.77.0.2", "port": 30123}, "private": true},
                        {"name": "tx", "channels": 1,
                         "remote": {"engine": "zita-njbridge", "host": "tx.local", "port": 30124, "format": "float", "client": "to-tx", "watch": false, "latency": 2.5}},
                        {"name": "foh", "ports": ["system:playback_1"]}]}
            """#)
        #expect(session.routes[0].ports == ["j2n-stage:in_1", "j2n-stage:in_2"])
        guard case let .zitaNjbridge(stage)? = session.routes[0].remote, case let .zitaNjbridge(tx)? = session.routes[1].remote else {
            Issue.record("not bridged: \(session.routes)")
            return
        }
        #expect(stage.watch == 9951 && stage.format == .int24 && stage.latency == 10 && session.routes[0].isPrivate)
        #expect(session.routes[1].ports == ["to-tx:in_1"] && tx.watch == nil && tx.latency == 2.5)
        #expect(session.bridgedRoutes.map(\.route.name) == ["stage", "tx"] && !session.usesNetJack2)
        let group = try parse(#"{"routes": [{"name": "m", "remote": {"engine": "zita-njbridge", "host": "239.1.2.3", "port": 1, "watch": false}}]}"#)
        #expect(group.bridgedRoutes.count == 1, "a multicast group, not watched")
        #expect(session.routes.map(\.kind) == [.zitaNjbridge, .zitaNjbridge, .graph])
        #expect(session.routes.map(\.unseenLatency) == [10, 2.5, nil])
        #expect(session.routes.map(\.farEndWatched) == [true, false, false])
        #expect(session.routes.map { $0.sender?.client } == ["j2n-stage", "to-tx", nil])
    }

    @Test("a broken remote route, bridge or netjack2 setting is refused with the field", arguments: [
        (#"{"routes": [{"name": "s", "remote": {"engine": "jacktrip", "peer": "p"}}]}"#, "routes[0].remote.engine: expected one of 'netjack2', 'zita-njbridge', got 'jacktrip'"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "netjack2"}}]}"#, "routes[0].remote.peer"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "netjack2", "peer": "a:b"}}]}"#, "routes[0].remote.peer: expected the name the far end joins under"),
        (#"{"routes": [{"name": "s", "ports": ["a:b"], "remote": {"engine": "netjack2", "peer": "p"}}]}"#, "routes[0].ports: a remote route's ports are its engine's"),
        (#"{"routes": [{"name": "s", "channels": 2}]}"#, "routes[0].remote"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "netjack2", "peer": "p"}, "channels": 0}]}"#, "routes[0].channels"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "netjack2", "peer": "p"}, "lookahead": 20}]}"#, "routes[0].lookahead: a remote route takes no look-ahead"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "netjack2", "peer": "p", "host": "x"}}]}"#, "routes[0].remote.host: unknown field"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "zita-njbridge", "port": 1}}]}"#, "routes[0].remote.host"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "zita-njbridge", "host": "a b", "port": 1}}]}"#, "routes[0].remote.host: expected the far host's address or name"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "zita-njbridge", "host": "h", "port": 70000}}]}"#, "routes[0].remote.port"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "zita-njbridge", "host": "h", "port": 1, "format": "32bit"}}]}"#, "routes[0].remote.format: expected one of '16bit', '24bit', 'float'"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "zita-njbridge", "host": "h", "port": 1, "watch": true}}]}"#, "routes[0].remote.watch: expected the far duckrouter's OSC port"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "zita-njbridge", "host": "h", "port": 1, "peer": "p"}}]}"#, "routes[0].remote.peer: unknown field"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "zita-njbridge", "host": "-x", "port": 1}}]}"#, "routes[0].remote.host: expected the far host's address or name"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "zita-njbridge", "host": "h", "port": 1, "latency": -1}}]}"#, "routes[0].remote.latency: expected a number"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "zita-njbridge", "host": "h", "port": 1, "latency": "10"}}]}"#, "routes[0].remote.latency: expected a number"),
        (#"{"routes": [{"name": "s", "remote": {"engine": "zita-njbridge", "host": "239.1.2.3", "port": 1}}]}"#, "routes[0].remote.watch: '239.1.2.3' is a multicast group"),
        (#"{"routes": [{"name": "a", "remote": {"engine": "zita-njbridge", "host": "h", "port": 1, "client": "tx"}}, {"name": "b", "remote": {"engine": "zita-njbridge", "host": "h", "port": 2, "client": "tx"}}]}"#, "routes[1].remote.client: 'tx' is already the sender of route 'a'"),
        (#"{"netjack2": {"address": "stagebox.local"}}"#, "netjack2.address: expected an IPv4 or IPv6 address"),
        (#"{"netjack2": {"port": 0}}"#, "netjack2.port"),
    ])
    func remoteRouteRefused(json: String, expected: String) {
        let found = problems(json)
        #expect(found.contains { $0.contains(expected) }, "\(found)")
    }

    @Test("the shipped default session loads: a speaker route and example apps")
    func defaultSession() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sessions/default.json").standardizedFileURL
        let session = try SessionLoader.load(path: url.path)
        #expect(session.routes.map(\.name) == ["speaker"])
        #expect(session.routes[0].ports == ["system:playback_1", "system:playback_2"])
        #expect(session.apps.map(\.name) == ["music", "nav", "game"])
        #expect(session.apps[1].channelCount == 1)
        #expect(session.apps[0].connect.first?.matches("mpv:out_0") == true)
    }

    @Test("the design's example session loads with every field")
    func designExample() throws {
        let session = try parse("""
            {
              "client": "duckrouter",
              "osc": { "port": 9951, "bind": "127.0.0.1", "allow": ["127.0.0.1/32"] },
              "routes": [
                { "name": "speaker",    "ports": ["system:playback_1", "system:playback_2"] },
                { "name": "headphones", "ports": ["usbphones:playback_1", "usbphones:playback_2"], "private": true }
              ],
              "input": { "ports": ["system:capture_1"] },
              "ducking": { "level": -14, "attack": 100, "release": 500 },
              "apps": [
                { "name": "music", "category": "playback", "remote": ["play", "pause", "togglePlayPause"],
                  "connect": ["mpv:out_0", "mpv:out_1"] },
                { "name": "nav", "category": "playback", "mode": "voicePrompt",
                  "options": ["duckOthers", "interruptSpokenAudioAndMixWithOthers"], "channels": 1 },
                { "name": "game", "category": "ambient", "resume": "auto" }
              ],
              "volumes": { "routes": { "speaker": 0.8, "headphones": 0.5 }, "apps": { "music": 1.0 } }
            }
            """)
        #expect(session.routes[1].isPrivate)
        #expect(session.apps[1].options == [.duckOthers, .interruptSpokenAudioAndMixWithOthers])
        #expect(session.apps[1].mode == .voicePrompt)
        #expect(session.apps[2].resume == .auto)
        #expect(session.apps[0].remote == [.play, .pause, .togglePlayPause])
        #expect(session.volumes.routes["headphones"] == 0.5)
        #expect(session.input.ports == ["system:capture_1"])
    }

    @Test("per-pair ducking rules and apps that start active")
    func duckingRulesAndStartActive() throws {
        let session = try SessionLoader.parse(Data(#"""
            {"ducking": {"level": -12, "rules": [{"ducker": "mic", "ducked": "music", "level": -20, "release": 800}]},
             "apps": [{"name": "music", "category": "playback", "active": true}, {"name": "mic", "category": "playAndRecord"}]}
            """#.utf8), file: "t.json")
        #expect(session.ducking.level == -12)
        #expect(session.ducking.rules == [DuckingRule(ducker: "mic", ducked: "music", level: -20, release: 800)])
        #expect(session.ducking.rule(ducker: "mic", ducked: "music", route: nil).attack == 100)
        #expect(session.apps[0].startsActive && !session.apps[1].startsActive)
    }

    @Test("loudness targets, floors and rules for one route")
    func loudnessRules() throws {
        let session = try SessionLoader.parse(Data(#"""
            {"routes": [{"name": "phones", "ports": ["s:1"]}, {"name": "tx", "ports": ["s:2"]}],
             "ducking": {"target": 15, "floor": -30, "rules": [
                {"ducker": "mic", "ducked": "music", "route": "phones", "level": -6},
                {"ducker": "mic", "ducked": "music", "route": "tx", "target": 18, "floor": -24}]}}
            """#.utf8), file: "t.json")
        #expect(session.ducking.target == 15 && session.ducking.floor == -30)
        #expect(session.ducking.rules == [DuckingRule(ducker: "mic", ducked: "music", route: "phones", level: -6),
                                          DuckingRule(ducker: "mic", ducked: "music", route: "tx", target: 18, floor: -24)])
        let phones = session.ducking.rule(ducker: "mic", ducked: "music", route: "phones")
        #expect(phones.level == -6 && phones.target == nil && phones.scope == .route)
        let other = session.ducking.rule(ducker: "nav", ducked: "music", route: "tx")
        #expect(other.target == 15 && other.floor == -30 && other.scope == .session)
    }

    /// Each broken file and the exact lines it produces.
    @Test("broken files name the file, the field and what was expected", arguments: [
        ("{\"apps\": [", "Sessions/test.json:1: not valid JSON: expected a value, found the end of the file (column 11)"),
        (#"{"apps": [{"name": "music", "category": "playbak"}]}"#,
         "Sessions/test.json:1 apps[0].category: expected one of ambient, soloAmbient, playback, record, playAndRecord, multiRoute, got 'playbak'"),
        (#"{"http": {"port": 70000}}"#,
         "Sessions/test.json:1 http.port: expected a whole number from 0 to 65535, got 70000"),
        (#"{"http": {"port": "9952"}}"#,
         "Sessions/test.json:1 http.port: expected a whole number from 0 to 65535, got '9952'"),
        (#"{"http": {"bind": "0.0.0.0"}}"#,
         "Sessions/test.json:1 http.bind: unknown field (expected one of port)"),
        (#"{"apps": [{"name": "music", "channels": "two"}]}"#,
         "Sessions/test.json:1 apps[0].channels: expected a whole number from 1 to 32, got 'two'"),
        (#"{"apps": [{"name": "a"}, {"name": "a"}]}"#,
         "Sessions/test.json:1 apps[1].name: app 'a' is already declared at apps[0]"),
        (#"{"routes": [{"name": "s", "ports": ["x:y"]}, {"name": "s", "ports": ["x:z"]}]}"#,
         "Sessions/test.json:1 routes[1].name: route 's' is already declared at routes[0]"),
        (#"{"apps": [{"name": "m", "connect": ["mpv:(out"]}]}"#,
         "Sessions/test.json:1 apps[0].connect[0]: expected a regular expression over JACK port names, got 'mpv:(out' (it does not compile)"),
        (#"{"routes": [{"name": "speaker", "ports": ["playback_1"]}]}"#,
         "Sessions/test.json:1 routes[0].ports[0]: expected a full JACK port name 'client:port', got 'playback_1'"),
        (#"{"routes": [{"name": "speaker"}]}"#, "Sessions/test.json:1 routes[0].ports: is required"),
        (#"{"apps": [{"name": "my music"}]}"#,
         "Sessions/test.json:1 apps[0].name: expected a name of 1 to 48 letters, digits, '-', '_' or '.', got 'my music'"),
        (#"{"apps": [{"name": "music"}], "volumes": {"apps": {"music": 1.5}}}"#,
         "Sessions/test.json:1 volumes.apps.music: expected a number from 0 to 1 (a slider position), got 1.5"),
        (#"{"apps": [{"name": "music"}], "volumes": {"apps": {"musik": 0.5}}}"#,
         "Sessions/test.json:1 volumes.apps.musik: no app named 'musik' is declared in apps"),
        (#"{"volumes": {"routes": {"hdmi": 0.5}}}"#,
         "Sessions/test.json:1 volumes.routes.hdmi: no route named 'hdmi' is declared in routes"),
        (#"{"ramp": 0}"#, "Sessions/test.json:1 ramp: expected a number from 1 to 5000 milliseconds, got 0"),
        (#"{"client": "a:b"}"#, "Sessions/test.json:1 client: expected a JACK client name (1 to 63 bytes, no ':'), got 'a:b'"),
        (#"{"apps": [{"name": "m", "chanels": 2}]}"#,
         "Sessions/test.json:1 apps[0].chanels: unknown field (expected one of activation, active, category, channelmap, channels, connect, exclusive, mode, name, options, remote, resume, signal, unduckAfter)"),
        (#"[]"#, "Sessions/test.json:1: expected an object, got a list"),
        (#"{"apps": [{"name": "g", "category": "ambient", "options": ["duckOthers"]}]}"#,
         "Sessions/test.json:1 apps[0].options: category ambient takes no options; options are for playback, playAndRecord and multiRoute"),
        (#"{"apps": [{"name": "p", "category": "playback", "mode": "voiceChat"}]}"#,
         "Sessions/test.json:1 apps[0].mode: expected one of default, measurement, moviePlayback, spokenAudio, voicePrompt with category playback, got 'voiceChat'"),
        (#"{"apps": [{"name": "m", "active": "yes"}]}"#, "Sessions/test.json:1 apps[0].active: expected true or false, got 'yes'"),
        (#"{"ducking": {"rules": [{"ducker": "nav", "ducked": "music", "level": -20, "attack": -5}]}}"#,
         "Sessions/test.json:1 ducking.rules[0].attack: expected a number from 0 to 60000 milliseconds, got -5"),
        (#"{"ducking": {"target": 70}}"#, "Sessions/test.json:1 ducking.target: expected a number from 0 to 60 LU, got 70"),
        (#"{"ducking": {"rules": [{"ducker": "nav", "ducked": "nav", "level": -6}]}}"#,
         "Sessions/test.json:1 ducking.rules[0].ducked: an app does not duck itself"),
        (#"{"ducking": {"rules": [{"ducker": "nav", "ducked": "music", "level": -6, "floor": -30}]}}"#,
         "Sessions/test.json:1 ducking.rules[0].floor: a floor bounds a loudness target; this rule has none"),
        (#"{"ducking": {"floor": "deep"}}"#, "Sessions/test.json:1 ducking.floor: expected a number from -144 to 0 dB, got 'deep'"),
        (#"{"ducking": {"rules": [{"ducker": "nav", "ducked": "music"}]}}"#,
         "Sessions/test.json:1 ducking.rules[0]: give a level (dB), a target (LU) or both"),
        (#"{"ducking": {"rules": [{"ducker": "nav", "ducked": "music", "target": -3}]}}"#,
         "Sessions/test.json:1 ducking.rules[0].target: expected a number from 0 to 60 LU, got -3"),
        (#"{"routes": [{"name": "pa", "ports": ["s:1"]}], "ducking": {"rules": [{"ducker": "nav", "ducked": "music", "route": "hdmi", "level": -6}]}}"#,
         "Sessions/test.json:1 ducking.rules[0].route: no route named 'hdmi' in this session (its routes: pa)"),
        (#"{"routes": [{"name": "pa", "ports": ["s:1"]}], "apps": [{"name": "dj", "category": "multiRoute", "channelmap": [[1, "hdmi:1"]]}]}"#,
         "Sessions/test.json:1 apps[0].channelmap[0]: unknown route 'hdmi' (routes: pa)"),
        (#"{"routes": [{"name": "pa", "ports": ["s:1"]}], "apps": [{"name": "dj", "category": "multiRoute", "channelmap": [[1, "pa:2"]]}]}"#,
         "Sessions/test.json:1 apps[0].channelmap[0]: route channel: 'pa' has channels 1 to 1, got 2"),
        (#"{"routes": [{"name": "pa", "ports": ["s:1"]}], "apps": [{"name": "dj", "category": "multiRoute", "channelmap": [[3, "pa:1"]]}]}"#,
         "Sessions/test.json:1 apps[0].channelmap[0]: app channel: expected 1 to 2, got 3"),
        (#"{"routes": [{"name": "pa", "ports": ["s:1"]}], "apps": [{"name": "dj", "category": "multiRoute", "channelmap": [["pa:1", 1]]}]}"#,
         "Sessions/test.json:1 apps[0].channelmap[0]: expected [app channel, \"route:channel\"], such as [1, \"headphones:1\"]"),
        (#"{"routes": [{"name": "pa", "ports": ["s:1"]}], "apps": [{"name": "m", "category": "playback", "channelmap": [[1, "pa:1"]]}]}"#,
         "Sessions/test.json:1 apps[0].channelmap: only multiRoute apps have a channel map (this one is playback)"),
        (#"{"routes": [{"name": "pa", "ports": ["s:1", "s:2"]}], "apps": [{"name": "dj", "category": "multiRoute", "channelmap": [[1, "pa:1"], [2, "pa:1"], [1, "pa:1"]]}]}"#,
         "Sessions/test.json:1 apps[0].channelmap[2]: 1 → pa:1 is already listed at apps[0].channelmap[0]"),
    ])
    func brokenFiles(json: String, expected: String) {
        let lines = problems(json)
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.hasPrefix(expected) == true, "got \(lines)")
    }

    @Test("a channel map may sum two app channels onto one route channel (each link listed once)")
    func channelMapSum() throws {
        let session = try parse(#"""
            {"routes": [{"name": "pa", "ports": ["s:1", "s:2"]}],
             "apps": [{"name": "dj", "category": "multiRoute", "channelmap": [[1, "pa:1"], [2, "pa:1"], [2, "pa:2"]]}]}
            """#)
        #expect(session.apps[0].channelMap == [ChannelLink(appChannel: 1, route: "pa", routeChannel: 1),
                                               ChannelLink(appChannel: 2, route: "pa", routeChannel: 1),
                                               ChannelLink(appChannel: 2, route: "pa", routeChannel: 2)])
    }

    @Test("each problem names the line its value is on (a missing field: its object's line)")
    func lineNumbers() {
        let json = """
            {
              "routes": [
                {"name": "speaker", "ports": ["system:playback_1"]},
                {"name": "hdmi"}
              ],
              "apps": [
                {"name": "music",
                 "category": "playbak"},
                {"name": "nav", "channels": 1}
              ],
              "volumes": {"apps": {"music": 2}}
            }
            """
        #expect(problems(json) == [
            "Sessions/test.json:4 routes[1].ports: is required",
            "Sessions/test.json:8 apps[0].category: expected one of ambient, soloAmbient, playback, record, playAndRecord, multiRoute, got 'playbak'",
            "Sessions/test.json:11 volumes.apps.music: expected a number from 0 to 1 (a slider position), got 2",
        ])
        #expect(problems("{\n  \"apps\": [\n    {\"name\": \"a\",}\n  ]\n}") == [
            "Sessions/test.json:3: not valid JSON: expected a field name in double quotes, found '}' (column 18)",
        ])
    }

    @Test("every problem in a file is reported at once")
    func allProblemsAtOnce() {
        let lines = problems(#"{"apps": [{"name": "a", "category": "x", "mode": "loud", "channels": 0}], "extra": true}"#)
        #expect(lines.count == 4, "\(lines)")
        #expect(lines.contains { $0.contains("extra: unknown field") })
        #expect(lines.contains { $0.contains("apps[0].mode: expected one of default, spokenAudio") })
    }

    @Test("a missing file is one clear error")
    func missingFile() {
        #expect(throws: SessionError.self) { try SessionLoader.load(path: "/nonexistent/x.json") }
        do {
            _ = try SessionLoader.load(path: "/nonexistent/x.json")
        } catch {
            #expect(error.description == "/nonexistent/x.json: cannot read the file: no such file")
        }
    }

    @Test("connect patterns match whole port names")
    func patterns() throws {
        let exact = try PortPattern("mpv:out_0")
        #expect(exact.matches("mpv:out_0"))
        #expect(!exact.matches("mpv:out_01"))
        #expect(!exact.matches("xmpv:out_0"))
        let any = try PortPattern("firefox:output_.*")
        #expect(any.matches("firefox:output_FL") && !any.matches("firefox:input_1"))
    }
}
