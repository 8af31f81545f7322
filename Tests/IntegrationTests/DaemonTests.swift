import Foundation
import JackHost
import JackRig
import OSCTransport
import Testing

/// The `duckrouter` executable as people run it: exit codes, messages, ports, signals.
@Suite("duckrouter daemon", .serialized)
struct DaemonTests {
    /// The built daemon, beside the test bundle in the build folder.
    static var binary: URL {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent().appendingPathComponent("duckrouter")
    }

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
    }

    struct Run {
        let process = Process()
        let stderr = Pipe()
        /// `ignoringSignals`: started the way a shell script starts a background job, with SIGINT
        /// and SIGTERM ignored (dispositions that survive exec), and a shell that execs the daemon.
        init(_ arguments: [String], ignoringSignals: Bool = false) throws {
            if ignoringSignals {
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", "trap '' INT TERM; exec \"$0\" \"$@\"", DaemonTests.binary.path] + daemonArguments(arguments)
            } else {
                process.executableURL = DaemonTests.binary
                process.arguments = daemonArguments(arguments)
            }
            process.currentDirectoryURL = DaemonTests.repository
            process.standardError = stderr
            process.standardOutput = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            Launcher.tieToTestProcess(process)
            try Launcher.shared.run(process)
        }
        /// Waits like `waitFor`; on a timeout the daemon is killed and its log is in the error.
        func waitFor(_ what: String, timeout: Double = 10, _ condition: () -> Bool) throws {
            do {
                try IntegrationTests.waitFor(what, timeout: timeout, condition)
            } catch {
                kill(process.processIdentifier, SIGKILL)
                let log = (try? finish(timeout: 5).stderr) ?? "(no log)"
                throw Unexpected(description: "\(error)\nduckrouter's log:\n\(log)")
            }
        }

        /// Waits until the daemon answers OSC through `client`; throws `OSCPorts.InUse` when it
        /// exited because it could not bind `port`.
        func waitForOSC(_ client: OSCClient, port: UInt16) throws {
            try waitFor("OSC to answer") { !process.isRunning || (try? ask(client, OSCMessage("/state"))) != nil }
            guard process.isRunning else {
                let (status, text) = try finish()
                if let line = text.split(separator: "\n").first(where: { $0.contains("cannot listen for OSC") }) {
                    throw OSCPorts.InUse(port: port, detail: String(line))
                }
                throw Unexpected(description: "duckrouter exited with status \(status) before it answered OSC:\n\(text)")
            }
        }

        func finish(timeout: Double = 10) throws -> (status: Int32, stderr: String) {
            try waitFor("duckrouter to exit", timeout: timeout) { !process.isRunning }
            let text = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (process.terminationStatus, text)
        }
    }

    @Test("no JACK server: one line on stderr, saying which server to start, and exit code 1")
    func missingServer() throws {
        let (status, stderr) = try Run(["--server", "duckrouter-test-nosuchserver", "Sessions/default.json"]).finish()
        #expect(status == 1)
        switch JackServer.Implementation.current {
        case .jackd:
            #expect(stderr == "duckrouter: no JACK server named 'duckrouter-test-nosuchserver' is running (failure, could not connect to the server); start one, e.g. `jackd -n duckrouter-test-nosuchserver -d dummy`\n")
        case .pipewire:
            // The daemon loaded PipeWire's libjack (the test's LD_LIBRARY_PATH): jackd would not help.
            #expect(stderr == "duckrouter: PipeWire is not running (failure, could not connect to the server); this libjack is PipeWire's: start PipeWire (`systemctl --user start pipewire`, or run `pipewire`)\n")
        }
    }

    @Test("--wait-for-server: a server not there yet is waited for (said once), the router starts when it comes; SIGTERM while waiting exits with 0")
    func waitsForServer() throws {
        let server = try JackServer()
        defer { server.stop() }
        server.kill9()
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-wait-\(getpid())-\(UUID().uuidString).log")
        let state = log.deletingPathExtension().appendingPathExtension("state.json")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log); removeStateFiles(state) }
        func text() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        let waiting = "waiting for the JACK server '\(server.name)' to start (--wait-for-server)"

        // Stopped while it waits: a clean exit, nothing half-started.
        let early = try launchDaemon(["--server", server.name, "--wait-for-server", "--state", state.path, "Sessions/default.json"], log: log)
        try waitFor("the waiting notice", timeout: 10) { text().contains(waiting) || !early.isRunning }
        #expect(early.isRunning, "\(text())")
        kill(early.processIdentifier, SIGTERM)
        try waitFor("duckrouter to stop", timeout: 10) { !early.isRunning }
        #expect(early.terminationStatus == 0, "\(text())")
        #expect(text().contains("stopped while waiting for the JACK server"), "\(text())")

        // Waiting, then the server comes: the router starts and answers.
        try "".write(to: log, atomically: true, encoding: .utf8)
        let port = try OSCPorts.free()
        let daemon = try launchDaemon(["--server", server.name, "--wait-for-server", "--osc-port", "\(port)", "--state", state.path,
                                       "Sessions/default.json"], log: log)
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        try waitFor("the waiting notice", timeout: 10) { text().contains(waiting) || !daemon.isRunning }
        #expect(text().components(separatedBy: waiting).count == 2, "said once: \(text())")
        try server.restart()
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: port))
        // The pause between tries grows to 5 s: the router is up within about that of the server.
        try waitForDaemon(daemon, port: port, log: text(), "OSC to answer once the server is there", timeout: 20) {
            (try? ask(client, OSCMessage("/state"))) != nil
        }
        #expect(text().contains("the JACK server is there: starting"), "\(text())")
        #expect(text().components(separatedBy: waiting).count == 2, "said once: \(text())")
        kill(daemon.processIdentifier, SIGTERM)
        try waitFor("duckrouter to stop", timeout: 10) { !daemon.isRunning }
        #expect(daemon.terminationStatus == 0, "\(text())")
    }

    @Test("--create-from: a missing session file is made from the template (folders too); an existing one is never touched; an unreadable template is exit 2")
    func createFrom() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-create-\(getpid())-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let session = folder.appendingPathComponent("config/duckrouter/session.json")
        let template = try Data(contentsOf: Self.repository.appendingPathComponent("Sessions/default.json"))

        // No server: the run ends with 1, but only after the file was made.
        let (status, stderr) = try Run(["--server", "duckrouter-test-nosuchserver", "--create-from", "Sessions/default.json", session.path]).finish()
        #expect(status == 1, "\(stderr)")
        #expect(stderr.contains("created the session file from a template"), "\(stderr)")
        #expect(try Data(contentsOf: session) == template)

        // A person's file stays as it is, whatever the template says.
        let edited = Data("{\"client\": \"edited\"}\n".utf8)
        try edited.write(to: session)
        let again = try Run(["--server", "duckrouter-test-nosuchserver", "--create-from", "Sessions/car.json", session.path]).finish()
        #expect(again.status == 1 && !again.stderr.contains("created the session file"), "\(again.stderr)")
        #expect(try Data(contentsOf: session) == edited)

        let other = folder.appendingPathComponent("other.json")
        let missing = try Run(["--server", "duckrouter-test-nosuchserver", "--create-from", folder.appendingPathComponent("nope.json").path, other.path]).finish()
        #expect(missing.status == 2, "\(missing.stderr)")
        #expect(missing.stderr.hasPrefix("duckrouter: cannot create \(other.path): the template \(folder.path)/nope.json cannot be read"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: other.path))
    }

    @Test("an invalid session: file and field named, exit code 2, file untouched")
    func invalidSession() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-bad-\(getpid()).json")
        let text = #"{"apps": [{"name": "music", "category": "playbak"}]}"#
        try text.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let (status, stderr) = try Run(["--server", "unused", file.path]).finish()
        #expect(status == 2)
        #expect(stderr == "duckrouter: \(file.path):1 apps[0].category: expected one of ambient, soloAmbient, playback, record, playAndRecord, multiRoute, got 'playbak'\n")
        #expect(try String(contentsOf: file, encoding: .utf8) == text)
    }

    /// Ten broken files, each with its exact message (file, line, field, what was expected).
    static let brokenFiles: [(name: String, text: String, message: String)] = [
        ("syntax", "{\n  \"apps\": [\n    {\"name\": \"music\",}\n  ]\n}\n",
         ":3: not valid JSON: expected a field name in double quotes, found '}' (column 22)"),
        ("wrong-type", "{\n  \"client\": \"duckrouter\",\n  \"ramp\": \"fast\"\n}\n",
         ":3 ramp: expected a number from 1 to 5000 milliseconds, got 'fast'"),
        ("unknown-category", "{\n  \"apps\": [\n    {\"name\": \"nav\"},\n    {\"name\": \"music\",\n     \"category\": \"playbak\"}\n  ]\n}\n",
         ":5 apps[1].category: expected one of ambient, soloAmbient, playback, record, playAndRecord, multiRoute, got 'playbak'"),
        ("duplicate-app", #"{"apps": [{"name": "music"}, {"name": "music"}]}"#,
         ":1 apps[1].name: app 'music' is already declared at apps[0]"),
        ("duplicate-route", "{\"routes\": [\n  {\"name\": \"pa\", \"ports\": [\"system:playback_1\"]},\n  {\"name\": \"pa\", \"ports\": [\"system:playback_2\"]}\n]}",
         ":3 routes[1].name: route 'pa' is already declared at routes[0]"),
        ("bad-regex", #"{"apps": [{"name": "music", "connect": ["mpv:(out"]}]}"#,
         ":1 apps[0].connect[0]: expected a regular expression over JACK port names, got 'mpv:(out' (it does not compile)"),
        ("channelmap-route", #"{"routes": [{"name": "pa", "ports": ["system:playback_1"]}], "apps": [{"name": "dj", "category": "multiRoute", "channelmap": [[1, "hdmi:1"]]}]}"#,
         ":1 apps[0].channelmap[0]: unknown route 'hdmi' (routes: pa)"),
        ("volume-route", "{\n  \"volumes\": {\n    \"routes\": {\"hdmi\": 0.5}\n  }\n}\n",
         ":3 volumes.routes.hdmi: no route named 'hdmi' is declared in routes"),
        ("field-typo", #"{"apps": [{"name": "music", "categroy": "playback"}]}"#,
         ":1 apps[0].categroy: unknown field (expected one of activation, active, category, channelmap, channels, connect, exclusive, mode, name, options, remote, resume, signal, unduckAfter)"),
        ("huge-number", #"{"volumes": {"apps": {"music": 1e999}}}"#,
         ":1: not valid JSON: the number 1e999 is too large (column 32)"),
    ]

    @Test("ten broken files: `duckrouter check` and the daemon both print the exact problem and exit with 2, and the file is byte for byte unchanged",
          arguments: 0..<10)
    func brokenFile(index: Int) throws {
        let (name, text, message) = Self.brokenFiles[index]
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-broken-\(getpid())-\(name).json")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        for arguments in [["check", file.path], ["--server", "unused", file.path]] {
            let (status, stderr) = try Run(arguments).finish()
            #expect(status == 2, "\(arguments)")
            #expect(stderr == "duckrouter: \(file.path)\(message)\n", "\(arguments)")
            #expect(try Data(contentsOf: file) == Data(text.utf8), "the file is untouched")
        }
    }

    @Test("the committed fuzz corpora (Tests/FuzzCorpus, crashes found by make fuzz among them) replay without a crash", arguments: ["FuzzOSC", "FuzzSessionFile", "FuzzOSCQuery", "FuzzHTTPWire"])
    func fuzzCorpus(target: String) throws {
        let process = Process()
        process.executableURL = DaemonTests.binary.deletingLastPathComponent().appendingPathComponent(target)
        process.arguments = [DaemonTests.repository.appendingPathComponent("Tests/FuzzCorpus/\(target)").path]
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        try waitFor("\(target) to replay its corpus", timeout: 60) { !process.isRunning }
        let text = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("replayed "), "\(text)")
    }

    @Test("duckrouter check: a valid file says so and exits with 0")
    func checkValid() throws {
        let (status, _) = try Run(["check", "Sessions/default.json"]).finish()
        #expect(status == 0)
    }

    @Test("with a server: ports and connections appear; SIGINT and SIGTERM stop it with exit code 0, also when started with them ignored",
          arguments: [(SIGINT, false), (SIGTERM, false), (SIGINT, true), (SIGTERM, true)])
    func runsAndStops(signal: Int32, ignoringSignals: Bool) throws {
        let server = try JackServer()
        defer { server.stop() }
        // The session's speaker route is system:playback_1…2.
        let device = try server.standInForDriverPorts()
        defer { device?.close() }
        let run = try OSCPorts.withFreePort { port in
            let run = try Run(["--server", server.name, "--osc-port", "\(port)", "Sessions/default.json"], ignoringSignals: ignoringSignals)
            try run.waitForOSC(try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: port)), port: port)
            return run
        }
        let observer = try JackClient(name: "observer", server: server.name)
        defer { observer.close() }
        try run.waitFor("the router's ports") { observer.portExists("duckrouter:speaker_out_2") }
        let ports = [
            "duckrouter:music_in_1", "duckrouter:music_in_2", "duckrouter:nav_in_1",
            "duckrouter:game_in_1", "duckrouter:game_in_2", "duckrouter:speaker_out_1", "duckrouter:speaker_out_2",
        ]
        switch JackServer.Implementation.current {
        case .jackd:
            // JACK2 lists a client's ports in the order they were registered.
            #expect(observer.ports(matching: "duckrouter:.*") == ports)
        case .pipewire:
            // PipeWire's libjack lists them in an order of its own (outputs first), not as registered.
            let listed = observer.ports(matching: "duckrouter:.*")
            #expect(listed.count == ports.count && Set(listed) == Set(ports), "\(listed)")
        }
        try run.waitFor("the speaker route connection") {
            observer.connections(of: "duckrouter:speaker_out_1") == ["system:playback_1"]
        }
        // Fully started (OSC answers), then a moment of running: the signal must stop a running
        // daemon, not only one that is still starting. (This pause is no verdict: the daemon has
        // answered already; it only makes the signal come later than start-up.)
        Thread.sleep(forTimeInterval: 0.3)
        kill(run.process.processIdentifier, signal)
        let (status, stderr) = try run.finish()
        #expect(status == 0, "\(stderr)")
        #expect(stderr.contains("stopping"))
        #expect(!observer.portExists("duckrouter:speaker_out_1"), "the client is gone")
    }

    @Test("the JACK server going away is reported; the daemon keeps answering and still stops cleanly")
    func serverGoesAway() throws {
        let server = try JackServer()
        // The session's speaker route (system:playback_1…2) is there before the server goes.
        let device = try server.standInForDriverPorts()
        defer { device?.close() }
        // The change made below is kept in a state file of the test's own, not beside the session.
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-away-\(getpid())-\(UUID().uuidString).state.json")
        defer { removeStateFiles(state) }
        let (run, client) = try OSCPorts.withFreePort { port in
            let run = try Run(["--server", server.name, "--osc-port", "\(port)", "--state", state.path, "Sessions/default.json"])
            let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: port))
            try run.waitForOSC(client, port: port)
            return (run, client)
        }
        server.stop()
        try run.waitFor("/state to say the server is away") {
            guard case let .string(json)? = (try? ask(client, OSCMessage("/state")))??.arguments.last else { return false }
            return json.contains("\"jack\":\"disconnected\"")
        }
        // Settings still change while the server is away (they apply when it is back).
        #expect(try ask(client, OSCMessage("/system/volume", [.float(0.5)]))?.path == "/reply")
        #expect(run.process.isRunning)
        kill(run.process.processIdentifier, SIGTERM)
        let (status, stderr) = try run.finish()
        #expect(status == 0, "\(stderr)")
        #expect(stderr.contains("the JACK server went away"))
    }
}
