import ArgumentParser
import Foundation
import JackHost
import JackRig
import OSCTransport

/// `ducksoak`: a long run of the daemon under load (issue 7, acceptance 2; `make soak`).
///
/// It starts a private `jackd -d dummy`, a source client playing tones into three apps, a sink
/// client on two routes, and the daemon on a session of its own. Then, for `--seconds`, it sends
/// `--rate` OSC messages per second, valid and invalid, over UDP and TCP, and registers and
/// unregisters apps all the while (each register and unregister is one of those messages). Every
/// message must be answered, in order, with /reply or, for the invalid ones, /error. Packets that
/// are not OSC at all (a few per second) must get no answer and change nothing.
///
/// Once a second it samples the daemon's resident memory and reads /state (xruns, process time),
/// and checks the state file is whole. At the end it sets known values, stops the daemon with
/// SIGTERM, and checks the state file holds them ("no lost save").
///
/// Exit status 0 when every check passed, 1 otherwise; the report goes to stdout.
@main
struct DuckSoak: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ducksoak",
        abstract: "Run duckrouter under random valid and invalid OSC plus app churn, and check it holds up.")

    @Option(help: "The duckrouter binary.")
    var duckrouter = ".build/release/duckrouter"
    @Option(help: "How long to drive it, in seconds.")
    var seconds = 600.0
    @Option(help: "OSC messages per second.")
    var rate = 1000
    @Option(help: "Seconds of warm-up before the memory baseline is taken (default: a sixth of the run, at most 60).")
    var warmup: Double?
    @Option(help: "Largest resident-memory growth after warm-up that passes, in kB.")
    var maxGrowth = 5120
    @Option(help: "JACK period in frames.")
    var period = 256
    @Option(help: "Seed for the random messages (default: from the clock; printed).")
    var seed: UInt64?
    @Option(help: "Also append the results as a Markdown table row to this file.")
    var markdown: String?

    func run() throws {
        let seed = seed ?? UInt64(Date().timeIntervalSince1970 * 1000)
        var random = SplitMix(seed: seed)
        let warmup = warmup ?? min(60, seconds / 6)
        let server = try JackServer(period: period)
        defer { server.stop() }
        let source = try TestClient(name: "soaksrc", server: server.name, outputs: ["music_L", "music_R", "nav", "game_L", "game_R", "voice"])
        let sink = try TestClient(name: "soaksink", server: server.name, inputs: ["speaker_1", "speaker_2", "phones_1", "phones_2"])
        defer { source.close(); sink.close() }
        for (output, frequency) in [(0, 440), (1, 440), (2, 880), (3, 220), (4, 220)] {
            source.setSignal(Signals.sine(frequency: frequency, amplitude: 0.25, sampleRate: server.sampleRate), output: output)
        }
        // A voice that talks 0.4 s and pauses 0.8 s, over and over: the signal-activated app comes
        // and goes all through the run, with the look-ahead route and its delay lines in use.
        var noise = SplitMix(seed: 7)
        let talk = Int(0.4 * Double(server.sampleRate)), pause = Int(0.8 * Double(server.sampleRate))
        source.setSignal((0..<talk).map { _ in Float(noise.next(2001) - 1000) / 4000 } + [Float](repeating: 0, count: pause), output: 5)

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ducksoak-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // Kept unless the run passes: the daemon's whole log (a crash report runs to hundreds of
        // lines) and its state file are the evidence, whatever ended the run.
        var keepFolder = true
        defer { if !keepFolder { try? FileManager.default.removeItem(at: folder) } }
        let port = try OSCPorts.free()
        let session = folder.appendingPathComponent("soak.json")
        let stateFile = folder.appendingPathComponent("soak.state.json")
        try """
            {
              "routes": [
                {"name": "speaker", "ports": ["soaksink:speaker_1", "soaksink:speaker_2"], "lookahead": 20},
                {"name": "headphones", "ports": ["soaksink:phones_1", "soaksink:phones_2"], "private": true}
              ],
              "apps": [
                {"name": "music", "category": "playback", "remote": ["play", "pause"], "connect": ["soaksrc:music_[LR]"], "active": true},
                {"name": "nav", "category": "playback", "options": ["duckOthers", "interruptSpokenAudioAndMixWithOthers"],
                 "mode": "voicePrompt", "channels": 1, "connect": ["soaksrc:nav"], "unduckAfter": 500},
                {"name": "voice", "category": "playback", "options": ["duckOthers", "mixWithOthers"], "channels": 1,
                 "connect": ["soaksrc:voice"], "activation": "signal", "signal": {"hold": 300}},
                {"name": "game", "category": "ambient", "connect": ["soaksrc:game_[LR]"], "active": true, "resume": "auto"}
              ],
              "osc": {"port": \(port)}
            }
            """.write(to: session, atomically: true, encoding: .utf8)
        let logFile = folder.appendingPathComponent("duckrouter.log")
        FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: duckrouter)
        daemon.arguments = ["--server", server.name, "--state", stateFile.path, "--log-level", "notice", "--http-port", "0", session.path]
        let log = try FileHandle(forWritingTo: logFile)
        defer { try? log.close() }
        daemon.standardError = log
        daemon.standardOutput = FileHandle.nullDevice
        // A crash is reported whole, to the log, without waiting for a debugger to attach.
        var environment = ProcessInfo.processInfo.environment
        if environment["SWIFT_BACKTRACE"] == nil { environment["SWIFT_BACKTRACE"] = "enable=yes,interactive=no,output-to=stderr,threads=all" }
        daemon.environment = environment
        try daemon.run()
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        let pid = daemon.processIdentifier
        let url = { (transport: OSCURL.Transport) in OSCURL(transport: transport, host: "127.0.0.1", port: port) }
        var probeClient: OSCClient?
        func state() -> [String: Any]? {
            if probeClient == nil { probeClient = try? OSCClient(url(.tcp)) }
            guard let probe = probeClient, (try? probe.send(OSCMessage("/state"))) != nil,
                  let reply = try? probe.receive(timeout: 2, until: { $0.path == "/reply" && $0.arguments.first == .string("/state") }) else {
                // A reply that comes after the wait must not pass for the next request's: the
                // next /state asks on a connection of its own.
                probeClient = nil
                return nil
            }
            guard case let .string(json)? = reply.arguments.last,
                  let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return nil }
            return object
        }
        let started = Date()
        while state() == nil {
            guard Date().timeIntervalSince(started) < 15, daemon.isRunning else {
                throw ValidationError("the daemon did not answer OSC (its log, session and state are kept in \(folder.path)); its log:\n\(text(logFile))")
            }
            Thread.sleep(forTimeInterval: 0.1)
        }

        let soakStart = Date()
        var failures: [String] = []
        func fail(_ what: String) {
            if failures.count < 20 { failures.append(what) }
            if failures.count == 20 { failures.append("…") }
        }
        let udp = Peer(client: try OSCClient(url(.udp)), name: "udp")
        let tcp = Peer(client: try OSCClient(url(.tcp)), name: "tcp")
        let peers = [udp, tcp]
        var churned: Set<String> = []
        var garbage = 0
        var rss: [(time: Double, kB: Int)] = []
        var lastState: [String: Any] = [:]
        var stateChecks = 0
        var stacksTaken = false
        var stalls = ""

        let tick = 0.01
        let perTick = Double(rate) * tick
        var owed = 0.0
        var nextSample = 1.0
        var ticks = 0
        while true {
            let now = Date().timeIntervalSince(soakStart)
            if now >= seconds { break }
            guard daemon.isRunning else {
                fail("the daemon exited (status \(daemon.terminationStatus)) after \(String(format: "%.1f", now)) s")
                break
            }
            owed += perTick
            while owed >= 1 {
                owed -= 1
                // One message in ten churns apps (over TCP, which owns them); 1 % is not OSC at all.
                let roll = random.next(100)
                if roll < 10 {
                    let name = "churn\(random.next(32))"
                    if churned.contains(name) {
                        tcp.send(OSCMessage("/app/\(name)/unregister"), expecting: .reply, fail)
                        churned.remove(name)
                    } else {
                        let category = ["ambient", "playback", "soloAmbient"][random.next(3)]
                        tcp.send(OSCMessage("/app/register", [.string(name), .string(category), .string(""), .string("default"),
                                                              .int32(Int32(1 + random.next(2)))]), expecting: .reply, fail)
                        churned.insert(name)
                    }
                } else if roll < 11 {
                    let bytes = (0..<(1 + random.next(64))).map { _ in UInt8(random.next(256)) }
                    // Never a valid OSC start: '/' or '#'.
                    try? udp.client.send(packet: [0xff] + bytes)
                    garbage += 1
                } else {
                    let peer = peers[random.next(2)]
                    let (message, expectation) = Self.randomMessage(&random)
                    peer.send(message, expecting: expectation, fail)
                }
            }
            for peer in peers { peer.drain(fail) }
            ticks += 1
            if now >= nextSample {
                nextSample += 1
                if let kB = residentKB(pid) { rss.append((now, kB)) }
                if let object = state() {
                    lastState = object
                } else {
                    fail("/state unanswered at \(Int(now)) s")
                    if !stacksTaken {
                        // The first stall: what every thread of the daemon is doing.
                        stacksTaken = true
                        stalls = threadStacks(pid)
                    }
                }
                if let data = try? Data(contentsOf: stateFile) {
                    stateChecks += 1
                    if (try? JSONSerialization.jsonObject(with: data)) == nil { fail("the state file did not parse at \(Int(now)) s") }
                }
            }
            let next = soakStart.addingTimeInterval(Double(ticks) * tick)
            let wait = next.timeIntervalSinceNow
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        }
        // Every reply still on its way.
        let drainUntil = Date().addingTimeInterval(3)
        while peers.contains(where: { !$0.pending.isEmpty }) && Date() < drainUntil {
            for peer in peers { peer.drain(fail, timeout: 0.05) }
        }
        for peer in peers where !peer.pending.isEmpty {
            fail("\(peer.pending.count) \(peer.name) messages unanswered, the first \(peer.pending.first!.path)")
        }

        // No lost save: known values, then a clean stop; the state file must hold them.
        let finalVolume: Float = 0.3125, finalDuck: Float = -17.5
        for message in [OSCMessage("/system/interruption/end", [.string("call"), .int32(0)]),
                        OSCMessage("/app/music/volume", [.float(finalVolume)]), OSCMessage("/duck/level", [.float(finalDuck)])] {
            tcp.send(message, expecting: .any, fail)
        }
        while !tcp.pending.isEmpty && Date() < drainUntil.addingTimeInterval(3) { tcp.drain(fail, timeout: 0.05) }
        // Where UDP datagrams were lost, if any were: a full receive buffer at the daemon (a
        // request never read) or at this client (an answer never read).
        let dropsAtDaemon = udpDrops(port: port), dropsHere = udpDrops(port: udp.client.localPort)
        let final = state() ?? lastState
        let engine = final["engine"] as? [String: Any] ?? [:]
        let xruns = engine["xruns"] as? Int ?? -1
        let processTime = engine["processTime"] as? [String: Any] ?? [:]
        let finalApps = Set(((final["settings"] as? [String: Any])?["apps"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String })
        kill(pid, SIGTERM)
        let stopDeadline = Date().addingTimeInterval(10)
        while daemon.isRunning && Date() < stopDeadline { Thread.sleep(forTimeInterval: 0.02) }
        if daemon.isRunning {
            fail("the daemon did not stop within 10 s of SIGTERM; its threads:\n" + threadStacks(pid)
                 + "\njackd's threads:\n" + threadStacks(server.processIdentifier))
        } else if daemon.terminationStatus != 0 {
            fail("the daemon exited with \(daemon.terminationStatus) on SIGTERM")
        }
        if let data = try? Data(contentsOf: stateFile),
           let saved = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
            let music = (saved["appVolumes"] as? [String: Any])?["music"] as? Double
            let duck = (saved["ducking"] as? [String: Any])?["level"] as? Double
            let savedApps = Set((saved["apps"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String })
            if music.map({ abs($0 - Double(finalVolume)) > 1e-4 }) ?? true { fail("state file: music volume \(String(describing: music)), sent \(finalVolume)") }
            if duck.map({ abs($0 - Double(finalDuck)) > 1e-4 }) ?? true { fail("state file: duck level \(String(describing: duck)), sent \(finalDuck)") }
            if savedApps != finalApps { fail("state file apps \(savedApps.sorted()) differ from the last /state \(finalApps.sorted())") }
        } else {
            fail("no readable state file after the stop")
        }

        // Memory: growth from the end of warm-up to the end.
        let baseline = rss.first { $0.time >= warmup }?.kB ?? rss.first?.kB ?? 0
        let peak = rss.filter { $0.time >= warmup }.map(\.kB).max() ?? baseline
        let end = rss.last?.kB ?? baseline
        if end - baseline > maxGrowth { fail("resident memory grew \(end - baseline) kB after warm-up (limit \(maxGrowth))") }
        let sent = peers.reduce(0) { $0 + $1.sent }
        let answered = peers.reduce(0) { $0 + $1.replies + $1.errors }
        let errors = peers.reduce(0) { $0 + $1.errors }
        func us(_ key: String) -> String { (processTime[key] as? Double).map { String(format: "%.1f", $0) } ?? "?" }
        let report = """
            ducksoak: \(String(format: "%.0f", seconds)) s at \(rate) msg/s (seed \(seed)), jackd -d dummy -p \(period)
              packets sent \(sent + garbage) (\(String(format: "%.0f", Double(sent + garbage) / seconds))/s): \(sent) OSC messages, \(answered) answered (\(errors) with /error, as expected), and \(garbage) non-OSC packets (unanswered)
              apps registered and unregistered: \(peers.reduce(0) { $0 + $1.churn }) messages; state file checked \(stateChecks) times
              resident memory: \(baseline) kB after \(Int(warmup)) s warm-up, \(end) kB at the end (growth \(end - baseline) kB, peak \(peak) kB)
              UDP datagrams dropped by the kernel (full receive buffers): \(dropsAtDaemon.map(String.init) ?? "?") at duckrouter's socket, \(dropsHere.map(String.init) ?? "?") at ducksoak's (its buffer \(udp.client.receiveBufferBytes / 1024) kB)
              xruns: \(xruns); process callback: mean \(us("meanUs")) µs, p99 \(us("p99Us")) µs, max \(us("maxUs")) µs of \(us("budgetUs")) µs
              \(failures.isEmpty ? "PASS" : "FAIL:\n    " + failures.joined(separator: "\n    "))
            """
        print(report)
        if let markdown {
            let row = "| \(String(format: "%.0f", seconds)) s | \(sent) | \(answered) | \(errors) | \(garbage) | \(end - baseline) kB | \(xruns) | \(us("meanUs")) / \(us("p99Us")) / \(us("maxUs")) µs | \(failures.isEmpty ? "pass" : "FAIL") |\n"
            if let handle = FileHandle(forWritingAtPath: markdown) {
                handle.seekToEndOfFile()
                handle.write(Data(row.utf8))
            } else {
                try row.write(toFile: markdown, atomically: true, encoding: .utf8)
            }
        }
        if !stalls.isEmpty { print("the daemon's threads at the first unanswered /state:\n" + stalls) }
        keepFolder = !failures.isEmpty
        if !failures.isEmpty {
            print(daemonLogExcerpt(text(logFile), lastLines: 40))
            print("the daemon's log, session and state file are kept in \(folder.path)")
            throw ExitCode(1)
        }
    }

    enum Expectation { case reply, error, any }

    /// A random message: mostly valid changes and queries, a third invalid in some way.
    static func randomMessage(_ random: inout SplitMix) -> (OSCMessage, Expectation) {
        let apps = ["music", "nav", "game"]
        let app = apps[random.next(3)]
        let unit = Float(random.next(1001)) / 1000
        switch random.next(20) {
        case 0, 1: return (OSCMessage("/app/\(app)/volume", [.float(unit)]), .reply)
        case 2: return (OSCMessage("/app/\(app)/gain", [.float(-60 * unit)]), .reply)
        case 3: return (OSCMessage("/app/nav/activate"), .any)
        case 4: return (OSCMessage("/app/nav/deactivate", [.int32(1)]), .any)
        case 5: return (OSCMessage("/system/volume", [.float(unit)]), .reply)
        case 6: return (OSCMessage("/system/silent", [.int32(Int32(random.next(2)))]), .reply)
        case 7: return (OSCMessage("/duck/level", [.float(-40 * unit)]), .reply)
        case 8: return (OSCMessage("/route/select", [.string(["speaker", "headphones"][random.next(2)])]), .any)
        case 9: return (OSCMessage(["/system/interruption/begin", "/system/interruption/end"][random.next(2)], [.string("call")]), .any)
        case 10: return (OSCMessage("/app/\(app)/volume"), .reply)
        case 11: return (OSCMessage("/route/select"), .reply)
        case 12:
            // Signal activation settings: changed, queried, or refused.
            switch random.next(3) {
            case 0: return (OSCMessage("/app/voice/activation", [.string("signal"), .float(-50 + 20 * unit), .float(20 * unit), .float(100 + 400 * unit)]), .reply)
            case 1: return (OSCMessage("/app/voice/activation"), .reply)
            default: return (OSCMessage("/app/voice/activation", [.string("signal"), .float(1 + unit)]), .error)
            }
        // Invalid: unknown app, NaN, infinity, wrong type, out of range, unknown path, bad names.
        case 13: return (OSCMessage("/app/nosuch\(random.next(10))/volume", [.float(unit)]), .error)
        case 14: return (OSCMessage("/app/\(app)/volume", [.float(.nan)]), .error)
        case 15: return (OSCMessage("/app/\(app)/gain", [.float(.infinity)]), .error)
        case 16: return (OSCMessage("/app/\(app)/volume", [.string("loud")]), .error)
        case 17: return (OSCMessage("/duck/level", [.float(10 + 10 * unit)]), .error)
        case 18: return (OSCMessage("/no/such/path\(random.next(100))", [.int32(1)]), .error)
        default: return (OSCMessage("/app/register", [.string(""), .string("ambient")]), .error)
        }
    }

    /// One OSC connection, with the paths it still waits answers for, in order.
    final class Peer {
        let client: OSCClient
        let name: String
        var pending: [(path: String, expectation: Expectation)] = []
        var pendingStart = 0
        var sent = 0, replies = 0, errors = 0, churn = 0

        init(client: OSCClient, name: String) {
            self.client = client
            self.name = name
        }

        func send(_ message: OSCMessage, expecting expectation: Expectation, _ fail: (String) -> Void) {
            do {
                try client.send(message)
                pending.append((message.path, expectation))
                sent += 1
                if message.path == "/app/register" || message.path.hasSuffix("/unregister") { churn += 1 }
            } catch {
                fail("\(name): cannot send \(message.path): \(error)")
            }
        }

        /// Reads every answer that has arrived; each must answer the oldest unanswered message.
        func drain(_ fail: (String) -> Void, timeout: Double = 0) {
            while let packet = try? client.receive(timeout: timeout) {
                for message in OSCClient.messages(in: packet) where message.path == "/reply" || message.path == "/error" {
                    guard case let .string(path)? = message.arguments.first else { continue }
                    guard let index = pending.firstIndex(where: { $0.path == path }) else {
                        fail("\(name): an answer to \(path) that nothing asked for")
                        continue
                    }
                    if index > 0 { fail("\(name): \(index) messages before \(path) were not answered") }
                    let expected = pending[index].expectation
                    pending.removeFirst(index + 1)
                    if message.path == "/reply" { replies += 1 } else { errors += 1 }
                    if expected == .reply && message.path == "/error" { fail("\(name): \(path) refused: \(message.arguments.dropFirst())") }
                    if expected == .error && message.path == "/reply" { fail("\(name): the invalid \(path) was accepted") }
                }
                if timeout > 0 { break }
            }
        }
    }
}

func text(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }
