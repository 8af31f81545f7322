import Foundation
import JackHost
import JackRig
import OSCTransport
import SessionStore
import Testing

/// The `duckrouter` daemon on a private jackd, driven over OSC by outside clients:
///
///     source:music_L/R, nav, game_L/R, extra_L/R ──▶ duckrouter (session below) ──▶ recorder:speaker_*, phones_*
///
/// music (playback, remote play/pause/nextTrack, active), nav (voicePrompt that ducks, mono),
/// game (ambient, active). Routes: speaker (the fallback, current at start) and headphones.
final class OSCRig {
    let server: JackServer
    let source: TestClient
    let recorder: TestClient
    private(set) var daemon: Process
    /// The OSC port, free when the daemon started (written into the session file).
    private(set) var port: UInt16 = 0
    /// The HTTP port (`--http-port`), free when the daemon started; 0: no HTTP server.
    private(set) var httpPort: UInt16 = 0
    private let http: Bool
    let sessionFile: URL
    private let sessionText: (UInt16) -> String
    private let stderrFile: URL
    /// Where the daemon keeps its state (`--state`); nil: beside the session.
    private let statePath: URL?
    /// The session is named relative to the daemon's working folder (its own), as `make run` does.
    private let relativeSession: Bool

    static let sourceOutputs = ["music_L", "music_R", "nav", "game_L", "game_R", "extra_L", "extra_R"]
    enum Channel: Int { case speaker1, speaker2, phones1, phones2 }

    static let defaultRoutes = """
        {"name": "speaker", "ports": ["recorder:speaker_1", "recorder:speaker_2"]},
        {"name": "headphones", "ports": ["recorder:phones_1", "recorder:phones_2"], "private": true}
        """

    /// `show`: more top-level fields (`"scenes": …, "cues": …`), comma-separated.
    static func session(port: UInt16, osc extra: String = "", routes: String = defaultRoutes, apps: String = "",
                        input: [String] = [], show: String = "") -> String {
        """
        {\(show.isEmpty ? "" : "\n  " + show + ",")
          "routes": [
            \(routes)
          ],
          "apps": [
            {"name": "music", "category": "playback", "remote": ["play", "pause", "nextTrack"],
             "connect": ["source:music_[LR]"], "active": true},
            {"name": "nav", "category": "playback", "options": ["duckOthers", "interruptSpokenAudioAndMixWithOthers"],
             "mode": "voicePrompt", "channels": 1, "connect": ["source:nav"]},
            {"name": "game", "category": "ambient", "connect": ["source:game_[LR]"], "active": true, "resume": "auto"}
            \(apps.isEmpty ? "" : ", " + apps)
          ],
          "input": {"ports": [\(input.map { "\"\($0)\"" }.joined(separator: ", "))]},
          "osc": {"port": \(port)\(extra)}
        }
        """
    }

    /// `apps`: more apps (JSON objects, comma-separated) after music, nav and game; `http`: with
    /// the HTTP server, on a free port of its own; `state`: the state file (`--state`);
    /// `relativeSession`: the daemon runs in the session's folder and is given its name only.
    init(osc extra: String = "", routes: String = OSCRig.defaultRoutes, apps: String = "", input: [String] = [],
         show: String = "", http: Bool = false, state: URL? = nil, relativeSession: Bool = false) throws {
        self.http = http
        self.relativeSession = relativeSession
        statePath = state
        server = try JackServer(period: 256)
        recorder = try TestClient(name: "recorder", server: server.name, inputs: ["speaker_1", "speaker_2", "phones_1", "phones_2"])
        source = try TestClient(name: "source", server: server.name, outputs: Self.sourceOutputs)
        sessionFile = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-osc-\(getpid())-\(UUID().uuidString).json")
        sessionText = { port in OSCRig.session(port: port, osc: extra, routes: routes, apps: apps, input: input, show: show) }
        stderrFile = sessionFile.appendingPathExtension("log")
        _ = FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        daemon = Process()
        try OSCPorts.withFreePort { port in try startDaemon(port: port) }
    }

    /// The state file the daemon keeps (beside the session unless `state` said where).
    var stateFile: URL { statePath ?? sessionFile.deletingPathExtension().appendingPathExtension("state.json") }

    /// The control page's key file the daemon keeps beside the state file (with HTTP on).
    var pageKeyFile: URL { URL(fileURLWithPath: PageKeyFile.path(besideState: stateFile.path)) }

    /// The control page's key as the daemon keeps it now (nil: none).
    func pageKey() -> String? { (try? PageKeyFile(path: pageKeyFile.path).load()) ?? nil }

    /// What the state file holds now (nil: none yet, or unreadable).
    func savedState() -> SavedState? { (try? StateFile(path: stateFile.path).load()) ?? nil }

    /// Starts the daemon on `port` (written into the session file) and waits until it has made its
    /// connections and answers OSC; throws `OSCPorts.InUse` when it could not bind that port.
    private func startDaemon(port: UInt16) throws {
        if port != self.port {
            self.port = port
            try sessionText(port).write(to: sessionFile, atomically: true, encoding: .utf8)
        }
        // The same HTTP port across restarts (a page open in a browser reconnects to it).
        if http && httpPort == 0 { httpPort = try OSCPorts.free() }
        daemon = try launchDaemon(["--server", server.name, "--http-port", "\(httpPort)"] + (statePath.map { ["--state", $0.path] } ?? [])
                                      + [relativeSession ? sessionFile.lastPathComponent : sessionFile.path], log: stderrFile,
                              directory: relativeSession ? sessionFile.deletingLastPathComponent() : nil)
        try waitForDaemon(daemon, port: port, log: self.log, "the router's connections") {
            recorder.client.connections(of: "recorder:speaker_2").contains("duckrouter:speaker_out_2")
                && source.client.connections(of: "source:nav").contains("duckrouter:nav_in_1")
        }
        try waitForDaemon(daemon, port: port, log: self.log, "OSC to answer") { (try? self.query("/route/select")) != nil }
        if http {
            // HTTP is bound before the router starts and answers (not 503) once OSC runs: wait for that too.
            try waitForDaemon(daemon, port: port, log: self.log, "HTTP to answer") {
                (try? HTTPClient.get(port: self.httpPort, "/?HOST_INFO"))?.status == 200
            }
        }
    }

    /// Kills the daemon with SIGKILL (no chance to save anything) and starts it again on the same
    /// session file.
    func killAndRestart() throws {
        kill9()
        try restart()
    }

    /// Starts the daemon again after `kill9()`, on the same port if it is still free (else on
    /// another, rewritten into the session file).
    func restart() throws {
        do {
            try startDaemon(port: port)
        } catch is OSCPorts.InUse {
            try OSCPorts.withFreePort { port in try startDaemon(port: port) }
        }
    }

    func kill9() {
        kill(daemon.processIdentifier, SIGKILL)
        finish(daemon)
        // JACK notices the dead client; let it remove the old ports before the new one registers.
        try? waitFor("the killed router's ports to go") { !recorder.client.portExists("duckrouter:speaker_out_1") }
    }

    deinit { close() }

    func close() {
        if daemon.isRunning {
            daemon.terminate()
            finish(daemon)
        }
        source.close()
        recorder.close()
        server.stop()
        try? FileManager.default.removeItem(at: sessionFile)
        try? FileManager.default.removeItem(at: stderrFile)
        try? FileManager.default.removeItem(at: stateFile)
        try? FileManager.default.removeItem(at: pageKeyFile)
    }

    var log: String { (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "" }

    /// Asks over the project's own client (for checks; the behaviour under test is driven by
    /// liblo's tools and python-osc).
    func query(_ path: String, _ arguments: [OSCArgument] = [], transport: OSCURL.Transport = .udp) throws -> OSCMessage? {
        let client = try OSCClient(OSCURL(transport: transport, host: "127.0.0.1", port: port))
        try client.send(OSCMessage(path, arguments))
        return try client.receive(timeout: 1) { ($0.path == "/reply" || $0.path == "/error") && $0.arguments.first == .string(path) }
    }

    /// `/state`'s settings, as a JSON object.
    func settings() throws -> [String: Any] {
        try #require(try state()["settings"] as? [String: Any])
    }

    /// `/state`, as a JSON object.
    func state() throws -> [String: Any] {
        let reply = try #require(try query("/state", transport: .tcp))
        guard case let .string(json) = reply.arguments[1] else { throw Unexpected(description: "\(reply)") }
        return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    /// The xruns the router has counted (`/state` engine.xruns), and the cycles it saw missed
    /// (engine.missedCycles: the xruns PipeWire does not report).
    func xruns() throws -> Int {
        let reply = try #require(try query("/state", transport: .tcp))
        guard case let .string(json) = reply.arguments[1],
              let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let engine = object["engine"] as? [String: Any], let xruns = engine["xruns"] as? Int
        else { throw Unexpected(description: "\(reply)") }
        return xruns + (engine["missedCycles"] as? Int ?? 0)
    }

    /// Plays DC levels (music, game) and lets ramps settle.
    func play(music: Float = 0, nav: Float = 0, game: Float = 0, extra: Float = 0) {
        for (i, level) in [music, music, nav, game, game, extra, extra].enumerated() { source.setSignal([level], output: i) }
    }

    /// The level at a recorder input once it has reached `expected`: 50 ms windows are recorded
    /// until one has every sample within `tolerance` of it (so a window inside a ramp that only
    /// passes by does not count), for at most `timeout` seconds. Returns that window's mean, or
    /// the last window's. What a change sounds like once it settles is the verdict; how long the
    /// control path took to get there on a busy machine is not.
    func level(_ channel: Channel, reaching expected: Float, within tolerance: Float = 2e-3, timeout: Double = 3) -> Float {
        levels([channel], reaching: [expected], within: tolerance, timeout: timeout)[0]
    }

    /// `level(_:reaching:)` for several inputs at once, all in the same window.
    func levels(_ channels: [Channel], reaching expected: [Float], within tolerance: Float = 2e-3, timeout: Double = 3) -> [Float] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let take = recorder.record(seconds: 0.05)
            let windows = channels.map { take.channels[$0.rawValue] }
            let steady = zip(windows, expected).allSatisfy { window, level in
                !window.isEmpty && window.allSatisfy { abs($0 - level) < tolerance }
            }
            if steady || Date() >= deadline {
                return windows.map { $0.isEmpty ? .nan : $0.reduce(0, +) / Float($0.count) }
            }
        }
    }

    /// Checks that a recorder input reaches `expected` (`level(_:reaching:)`).
    func expectLevel(_ channel: Channel, _ expected: Float, within tolerance: Float = 2e-3, timeout: Double = 3, _ comment: String = "",
                     sourceLocation: SourceLocation = #_sourceLocation) {
        let measured = level(channel, reaching: expected, within: tolerance, timeout: timeout)
        #expect(abs(measured - expected) < tolerance, "\(channel) at \(measured), expected \(expected) \(comment)", sourceLocation: sourceLocation)
    }

    /// Checks that a recorder input stays at `expected` for `seconds`, every sample: for "nothing
    /// changed" after a refusal (the refusal's answer has come, so a wrong change would already
    /// be on its way). A window in which the router or the recorder missed a cycle (an xrun, or
    /// one PipeWire does not report: the router's output is silence for that cycle) says nothing
    /// about the settings and is taken again, up to 4 times; the verdict is on a whole window.
    /// So is, on PipeWire, a window with one whole cycle of exact silence amid the level (a late
    /// graph, which PipeWire reports to no one: `Recording.lateGraphCycles`), once a call: a second
    /// such window, or two such cycles in one, is a verdict. Every window taken again is printed.
    func expectSteady(_ channel: Channel, _ expected: Float, within tolerance: Float = 2e-3, seconds: Double = 0.3,
                      _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        var spoiled: [String] = []
        var lateExcused = false
        for _ in 0..<4 {
            let before = try? xruns()
            let take = recorder.record(seconds: seconds)
            let after = try? xruns()
            let window = take.channels[channel.rawValue]
            let worst = window.map { abs($0 - expected) }.max() ?? .nan
            let routerMissed = before != nil && after != nil ? after! - before! : 0
            let silent = take.lateGraphCycles(channel: channel.rawValue)
            let late = !lateExcused && silent.count == 1 ? silent : []
            // Excused only when every sample out of place is explained by a missed cycle: exact
            // silence where the router missed one (PipeWire then gives the recorder zeros), or a
            // sample within a period of where the recorder missed one. Anything else is a verdict.
            let period = recorder.client.bufferSize
            let explained = window.indices.allSatisfy { index in
                abs(window[index] - expected) < tolerance
                    || (routerMissed > 0 && window[index] == 0)
                    || take.gaps.contains { abs($0 - index) <= period }
                    || late.contains { $0.contains(index) }
            }
            if routerMissed + take.gaps.count + late.count > 0 && !(worst < tolerance) && explained {
                spoiled.append("\(routerMissed) cycles the router missed, \(take.gaps.count) the recorder missed, \(late.count) silent (late graph), moved \(worst)")
                print("OSCRig.expectSteady(\(channel)): window taken again: \(spoiled.last!) \(comment)")
                if !late.isEmpty && routerMissed + take.gaps.count == 0 { lateExcused = true }
                continue
            }
            #expect(!window.isEmpty && worst < tolerance, "\(channel) moved \(worst) from \(expected) within \(seconds) s \(comment)",
                    sourceLocation: sourceLocation)
            return
        }
        Issue.record("\(channel): every window of \(seconds) s had cycles missed (\(spoiled.joined(separator: "; "))) \(comment)",
                     sourceLocation: sourceLocation)
    }
}

/// Waits for a process to exit (Foundation's `waitUntilExit` can hang inside a test on Linux).
func finish(_ process: Process, timeout: Double = 10) {
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
}

struct Unexpected: Error, CustomStringConvertible { let description: String }

/// `arguments` for a test daemon: `--http-port 0` (no HTTP server) unless they name a port, so
/// that test daemons never take the default 9952 (a second daemon, another run or `make run`
/// would find it taken). Tests of the HTTP server pass a free port (`OSCPorts.free`).
func daemonArguments(_ arguments: [String]) -> [String] {
    arguments.first == "check" || arguments.contains("--http-port") ? arguments : arguments + ["--http-port", "0"]
}

/// Starts the built daemon with `arguments` (and `environment`, else the test's), its stderr
/// appended to `log` (which must exist). Its D-Bus system bus is a socket that does not exist:
/// a test daemon bound to every interface never reaches this machine's avahi daemon, so it never
/// advertises itself on the network (ZeroconfTests runs an avahi daemon of its own).
func launchDaemon(_ arguments: [String], log: URL, environment: [String: String]? = nil, directory: URL? = nil) throws -> Process {
    let daemon = Process()
    if let directory { daemon.currentDirectoryURL = directory }
    daemon.executableURL = DaemonTests.binary
    daemon.arguments = daemonArguments(arguments)
    daemon.environment = (environment ?? ProcessInfo.processInfo.environment)
        .merging(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/duckrouter-tests-have-no-system-bus"]) { $1 }
    let handle = try FileHandle(forWritingTo: log)
    defer { try? handle.close() }
    handle.seekToEndOfFile()
    daemon.standardError = handle
    daemon.standardOutput = FileHandle.nullDevice
    Launcher.tieToTestProcess(daemon)
    try Launcher.shared.run(daemon)
    return daemon
}

/// Waits for `condition` like `waitFor`, while watching the daemon: when it exits first, throws
/// `OSCPorts.InUse` if its log says it could not bind its OSC port (the caller then starts it on
/// another port), else an error with its log.
func waitForDaemon(_ daemon: Process, port: UInt16, log: @autoclosure () -> String, _ what: String,
                   timeout: Double = 10, _ condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return }
        if !daemon.isRunning {
            let text = log()
            // Either port taken (OSC's or HTTP's): the caller starts it again on others.
            if let line = text.split(separator: "\n").last(where: { $0.contains("cannot listen for OSC") || $0.contains("cannot listen for HTTP") }) {
                throw OSCPorts.InUse(port: port, detail: String(line))
            }
            throw Unexpected(description: "duckrouter exited with status \(daemon.terminationStatus) while waiting for \(what); its log:\n\(text)")
        }
        Thread.sleep(forTimeInterval: 0.02)
    }
    throw Unexpected(description: "timed out after \(timeout) s waiting for \(what); duckrouter's log:\n\(log().suffix(2000))")
}

/// liblo's `oscsend`, run once per message (each run has its own source port).
func oscsend(_ port: UInt16, _ path: String, _ types: String = "", _ arguments: String...) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/oscsend")
    process.arguments = ["osc.udp://127.0.0.1:\(port)", path] + (types.isEmpty ? [] : [types] + arguments)
    try process.run()
    finish(process)
    #expect(process.terminationStatus == 0, "oscsend \(path)")
}

/// liblo's `oscdump`, listening on a port, collecting every line it prints.
final class OSCDump: @unchecked Sendable {
    private(set) var port: UInt16 = 0
    private var process = Process()
    private var output = Pipe()
    private let lock = NSLock()
    private var text = ""

    /// Starts oscdump on a free port and returns once it prints what it receives there.
    init() throws {
        try OSCPorts.withFreePort { port in try start(port) }
    }

    private func start(_ port: UInt16) throws {
        self.port = port
        process = Process()
        output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/oscdump")
        process.arguments = ["-L", "\(port)"]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            lock.withLock { text += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
        // Listening once a message sent to it is printed; gone when its port was taken.
        let probe = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: port))
        try waitFor("oscdump to listen on \(port)") {
            try? probe.send(OSCMessage("/oscdump/ready"))
            Thread.sleep(forTimeInterval: 0.02)
            return !process.isRunning || lines.contains { $0.contains("/oscdump/ready") }
        }
        guard process.isRunning else {
            output.fileHandleForReading.readabilityHandler = nil
            throw OSCPorts.InUse(port: port, detail: "oscdump exited")
        }
        clear()
    }

    deinit { stop() }

    func stop() {
        if process.isRunning { process.terminate(); finish(process) }
        output.fileHandleForReading.readabilityHandler = nil
    }

    var lines: [String] { lock.withLock { text.split(separator: "\n").map(String.init) } }

    /// Waits for a line containing every fragment; returns it.
    @discardableResult
    func expect(_ fragments: String..., timeout: Double = 2, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        var found: String?
        try? waitFor(fragments.joined(separator: " "), timeout: timeout) {
            found = lines.first { line in fragments.allSatisfy { line.contains($0) } }
            return found != nil
        }
        #expect(found != nil, "oscdump never printed \(fragments); it printed:\n\(lines.suffix(20).joined(separator: "\n"))", sourceLocation: sourceLocation)
        return found
    }

    func clear() { lock.withLock { text = "" } }
}

/// python-osc (a second OSC implementation) as a long-running client over UDP or TCP.
final class PythonOSC {
    private let script: JSONLineScript

    struct Line: Decodable, Equatable {
        let path: String
        let args: [Value]
    }

    enum Value: Decodable, Equatable, CustomStringConvertible {
        case int(Int), double(Double), string(String), bool(Bool)
        init(from decoder: Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let v = try? c.decode(Int.self) { self = .int(v) } else if let v = try? c.decode(Double.self) { self = .double(v) }
            else if let v = try? c.decode(Bool.self) { self = .bool(v) } else { self = .string(try c.decode(String.self)) }
        }
        /// Numbers compare by value (JSON does not say whether -6 was an int or a float).
        static func == (a: Value, b: Value) -> Bool {
            switch (a, b) {
            case let (.int(x), .double(y)), let (.double(y), .int(x)): Double(x) == y
            case let (.int(x), .int(y)): x == y
            case let (.double(x), .double(y)): x == y
            case let (.string(x), .string(y)): x == y
            case let (.bool(x), .bool(y)): x == y
            default: false
            }
        }

        var description: String {
            switch self {
            case let .int(v): "\(v)"
            case let .double(v): "\(v)"
            case let .string(v): v
            case let .bool(v): "\(v)"
            }
        }
    }

    init(_ transport: String, port: UInt16) throws {
        script = try JSONLineScript("osc_client.py", [transport, "127.0.0.1", "\(port)"])
    }

    private func readLine() -> Line? {
        script.readRawLine().flatMap { try? JSONDecoder().decode(Line.self, from: $0) }
    }

    /// Sends `[path, (type, value)…]` and returns every line up to its answer (the answer last).
    func send(_ path: String, _ arguments: (String, Any)...) -> [Line] {
        script.write([path] + arguments.map { [$0.0, $0.1] })
        var lines: [Line] = []
        while let line = readLine() {
            lines.append(line)
            if ["/reply", "/error", "/timeout"].contains(line.path) && (line.args.first == .string(path) || line.path == "/timeout") { break }
        }
        return lines
    }

    /// Lines that arrive until one has `path` and starts with `values` (compared as text), for
    /// `timeout` seconds at most: a wait on the notification, not a pause.
    func wait(until path: String, _ values: String..., timeout: Double = 3) -> [Line] {
        let wanted = try! JSONSerialization.data(withJSONObject: [path] + values)
        script.writeLine(Data("until \(timeout) ".utf8) + wanted)
        var lines: [Line] = []
        while let line = readLine(), line.path != "/waited" { lines.append(line) }
        return lines
    }
}

extension Array where Element == PythonOSC.Line {
    var answer: PythonOSC.Line? { last }
    func contains(_ path: String, _ values: String...) -> Bool {
        contains { line in line.path == path && values.enumerated().allSatisfy { i, v in i < line.args.count && line.args[i].description == v } }
    }
}

/// Removes a daemon's state file and the control page's key file it keeps beside it.
func removeStateFiles(_ state: URL) {
    try? FileManager.default.removeItem(at: state)
    try? FileManager.default.removeItem(atPath: PageKeyFile.path(besideState: state.path))
}
