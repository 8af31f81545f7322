import BuildInfo
import ControlVocabulary
import Foundation
import JackHost
import JackRig
import OSCTransport
import Testing

/// `duckctl` as people type it, against a running router: options before or after the
/// subcommand, negative numbers, `status` (text, JSON, colour), `--version`.
@Suite("duckctl", .serialized)
struct DuckctlTests {
    static var binary: URL { DaemonTests.binary.deletingLastPathComponent().appendingPathComponent("duckctl") }

    /// Runs duckctl to its end, with stdout and stderr apart (a pipe each: not a terminal).
    static func duckctl(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandOutput {
        try CommandOutput.of(binary.path, arguments, environment: environment)
    }

    /// Runs duckctl on a terminal of its own (`script` gives it a pseudo-terminal), as a person does.
    static func duckctlOnTerminal(_ arguments: [String], environment: [String: String]) throws -> String {
        let command = ([binary.path] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let output = try CommandOutput.of("/usr/bin/script", ["-qec", command, "/dev/null"],
                                          environment: environment.merging(["TERM": "xterm"]) { $1 })
        #expect(output.status == 0, "script \(command): \(output)")
        return output.stdout
    }

    /// A router on the default session (music, nav, game; the speaker route) with a test server
    /// and an OSC port of the test's own.
    struct Router {
        let server: JackServer
        let device: TestClient?
        let run: DaemonTests.Run
        let port: UInt16
        let state: URL

        init() throws {
            server = try JackServer()
            device = try server.standInForDriverPorts()
            let state = FileManager.default.temporaryDirectory.appendingPathComponent("duckctl-\(getpid())-\(UUID().uuidString).state.json")
            self.state = state
            (run, port) = try OSCPorts.withFreePort { [server] port in
                let run = try DaemonTests.Run(["--server", server.name, "--osc-port", "\(port)", "--state", state.path, "Sessions/default.json"])
                try run.waitForOSC(try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: port)), port: port)
                return (run, port)
            }
        }

        func stop() {
            kill(run.process.processIdentifier, SIGTERM)
            _ = try? run.finish()
            device?.close()
            server.stop()
            removeStateFiles(state)
        }
    }

    @Test("connection options before or after the subcommand, at every depth; negative numbers are values, with or without --")
    func optionsAnywhereAndNegativeNumbers() throws {
        let router = try Router()
        defer { router.stop() }
        let port = "\(router.port)"

        for arguments in [["--port", port, "state"], ["state", "--port", port], ["--port", port, "--timeout", "3", "state", "--pretty"]] {
            let output = try Self.duckctl(arguments)
            #expect(output.status == 0, "\(arguments): \(output.stderr)")
            #expect(output.stdout.contains("\"settings\""), "\(arguments): \(output.stdout)")
        }
        // Three levels: duckctl route select ROUTE, and route's default subcommand.
        #expect(try Self.duckctl(["--port", port, "route", "select", "speaker"]).stdout == "speaker\n")
        #expect(try Self.duckctl(["--port", port, "route"]).stdout == "speaker\n")
        #expect(try Self.duckctl(["route", "show", "--port", port]).stdout == "speaker\n")

        // (words typed, the reply printed)
        let table: [([String], String)] = [
            (["--port", port, "gain", "-6"], "-6.0 speaker\n"),
            (["gain", "--port", port], "-6.0 speaker\n"),
            (["--port", port, "gain", "--app", "music", "-3.5"], "-3.5\n"),
            (["--port", port, "gain", "-1e1", "--app", "game"], "-10.0\n"),
            (["--port", port, "send", "/duck/level", "-20"], "-20.0\n"),
            (["--port", port, "duck", "level", "--", "-12"], "-12.0\n"),
            (["--port", port, "duck", "level"], "-12.0\n"),
        ]
        for (arguments, reply) in table {
            let output = try Self.duckctl(arguments)
            #expect(output.status == 0 && output.stdout == reply, "\(arguments): \(output.status) \(output.stdout) \(output.stderr)")
        }
        // What the router refuses still says so: a negative volume slider is out of range (-2).
        let refused = try Self.duckctl(["--port", port, "volume", "-0.5"])
        #expect(refused.status == 1 && refused.stderr.contains("/system/volume: error -2"), "\(refused)")
        // Real unknown options stay errors (64), and so does a word that only starts like a number.
        for arguments in [["--port", port, "gain", "--bogus"], ["--port", port, "gain", "-6dB"]] {
            let output = try Self.duckctl(arguments)
            #expect(output.status == 64 && output.stderr.contains("Unknown option"), "\(arguments): \(output)")
        }
    }

    @Test("duckctl reads the router's vocabulary: paths lists every OSC path, send types a path's arguments as it takes them, duck takes every one-number setting")
    func vocabulary() throws {
        let listed = try Self.duckctl(["paths"])
        #expect(listed.status == 0, "\(listed)")
        let paths = listed.stdout.split(separator: "\n").filter { $0.hasPrefix("/") }.map { String($0.split(separator: " ")[0]) }
        #expect(paths == Vocabulary.rows.filter(\.overOSC).map(\.path), "\(paths)")
        #expect(listed.stdout.contains("/app/<app>/volume  f 0..1 → f volume"), "\(listed.stdout)")

        let router = try Router()
        defer { router.stop() }
        let port = "\(router.port)"
        // By its look, `on` is a string: /system/silent takes i 0/1, so send types it as 1 (before
        // the vocabulary, the router refused it, -2).
        let table: [([String], String)] = [
            (["--port", port, "send", "/app/music/volume", "1"], "1.0\n"),
            (["--port", port, "send", "/system/silent", "on"], "1\n"),
            (["--port", port, "send", "/system/silent", "0"], "0\n"),
            (["--port", port, "send", "/duck/target", "off"], "off\n"),
            (["--port", port, "send", "/duck/target", "12"], "12.0\n"),
            (["--port", port, "duck", "floor", "--", "-30"], "-30.0\n"),
        ]
        for (arguments, reply) in table {
            let output = try Self.duckctl(arguments)
            #expect(output.status == 0 && output.stdout == reply, "\(arguments): \(output.status) \(output.stdout) \(output.stderr)")
        }
        let unknown = try Self.duckctl(["--port", port, "duck", "depth", "1"])
        #expect(unknown.status == 64 && unknown.stderr.contains("expected level, attack, release or floor"), "\(unknown)")
    }

    @Test("status: routes with current, availability and volume; apps with category, state and why, volume and peak; --json; colour only on a terminal and never with NO_COLOR")
    func status() throws {
        let router = try Router()
        defer { router.stop() }
        let port = "\(router.port)"
        // music plays a -12 dBFS square wave, so its peak and the route's are real readings.
        let player = try TestClient(name: "player", server: router.server.name, outputs: ["out_1", "out_2"])
        defer { player.close() }
        try player.connect("player:out_1", to: "duckrouter:music_in_1")
        try player.connect("player:out_2", to: "duckrouter:music_in_2")
        let amplitude = Float(pow(10.0, -12.0 / 20))
        for output in 0..<2 { player.setSignal((0..<96).map { $0 < 48 ? amplitude : -amplitude }, output: output) }
        #expect(try Self.duckctl(["--port", port, "activate", "nav"]).status == 0)
        #expect(try Self.duckctl(["--port", port, "gain", "-6"]).status == 0)

        // The meters and the duck take effect within a few cycles: ask until they show.
        var text = ""
        try waitFor("status to show music ducked by nav, with its peak") {
            text = (try? Self.duckctl(["--port", port, "status"]).stdout) ?? ""
            return text.contains("ducked by nav") && text.contains("peak  -12.0 dBFS")
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let header = "duckrouter on JACK server '\(router.server.name)': connected, \(router.server.sampleRate) Hz, \(router.server.period) frames, "
        #expect(lines.first?.hasPrefix(header) == true && lines.first?.range(of: #", \d+ xruns?$"#, options: .regularExpression) != nil,
                "\(lines.first ?? "")")
        #expect(lines.contains(" ├─ Routes:") && lines.contains(" ├─ Apps:") && lines.contains(" └─ System:"), "\(text)")
        func line(_ start: String) -> String? { lines.first { $0.hasPrefix(start) } }
        let speaker = try #require(line(" │  *  speaker"), "\(text)")
        #expect(speaker.contains("available") && speaker.contains("vol 0.79  heard   -6.0 dB"), "\(speaker)")
        #expect(speaker.range(of: #"peak +-\d+\.\d dBFS$"#, options: .regularExpression) != nil, "\(speaker)")
        let music = try #require(line(" │     music"), "\(text)")
        #expect(music.range(of: #"^ │     music  playback  ducked +vol 1\.00  heard  -14\.0 dB   peak  -12\.0 dBFS   ducked by nav$"#,
                            options: .regularExpression) != nil, "\(music)")
        let nav = try #require(line(" │     nav"), "\(text)")
        #expect(nav.contains("active") && nav.contains("peak   -inf"), "\(nav)")
        #expect(text.contains("silent switch off, now playing"), "\(text)")
        #expect(text.contains("ducking -14.0 dB, attack 100 ms, release 500 ms"), "\(text)")
        #expect(!text.contains("\u{1B}"), "no colour into a pipe")

        // --json: the same picture for scripts.
        let json = try Self.duckctl(["status", "--json", "--port", port])
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let apps = try #require(object["apps"] as? [[String: Any]])
        let musicApp = try #require(apps.first { $0["name"] as? String == "music" })
        #expect(musicApp["state"] as? String == "ducked" && musicApp["why"] as? String == "ducked by nav", "\(musicApp)")
        #expect(abs((musicApp["peakDbfs"] as? Double ?? -144) + 12) < 0.1, "\(musicApp)")
        let routes = try #require(object["routes"] as? [[String: Any]])
        #expect(routes.first?["current"] as? Bool == true && routes.first?["name"] as? String == "speaker", "\(routes)")
        #expect((object["system"] as? [String: Any])?["silent"] as? Bool == false, "\(object)")
        #expect(object["jack"] as? String == "connected")

        // Colour: forced on, and on a terminal unless NO_COLOR is set (https://no-color.org).
        #expect(try Self.duckctl(["--port", port, "status", "--color", "always"]).stdout.contains("\u{1B}[33mducked"))
        #expect(try Self.duckctlOnTerminal(["--port", port, "status"], environment: ["NO_COLOR": ""]).contains("\u{1B}[33mducked"))
        #expect(!(try Self.duckctlOnTerminal(["--port", port, "status"], environment: ["NO_COLOR": "1"]).contains("\u{1B}")))
        #expect(!(try Self.duckctlOnTerminal(["--port", port, "status", "--color", "never"], environment: ["NO_COLOR": ""]).contains("\u{1B}")))
    }

    @Test("status with no router there: exit 2 and the reason, at once")
    func statusWithoutRouter() throws {
        let port = try OSCPorts.free()
        let output = try Self.duckctl(["--port", "\(port)", "--timeout", "0.5", "status"])
        #expect(output.status == 2, "\(output)")
        #expect(output.stderr.contains("no answer from") && output.stderr.contains("is duckrouter running?"), "\(output.stderr)")
        #expect(output.stdout.isEmpty)
    }

    @Test("--version: duckrouter and duckctl print the one version of the source (BuildInfo)")
    func version() throws {
        #expect(try Self.duckctl(["--version"]).stdout == BuildInfo.version + "\n")
        #expect(try Tool.run(DaemonTests.binary.path, ["--version"]) == BuildInfo.version + "\n")
        let makefileVersion = try Tool.run("/usr/bin/make", ["-s", "-C", DaemonTests.repository.path, "print-version"])
        #expect(makefileVersion == BuildInfo.version + "\n", "the Makefile, and so the Debian package, reads the same")
    }
}
