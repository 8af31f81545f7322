import ArgumentParser
import Foundation
import JackHost
import JackRig
import OSCTransport

/// `duckhostile`: the router under a show's worth of hostile network traffic (`make hostile`).
///
/// It starts a private `jackd -d dummy`, a source playing music into the router and a sink on its
/// speaker route, and the daemon bound to 0.0.0.0 with `osc.allow` 127.0.0.1 and 127.0.0.3. Three
/// hosts on this machine's loopback: 127.0.0.1, an allowed control surface that is measured
/// (`Probe`); 127.0.0.3, an allowed host that misbehaves; 127.0.0.2, a host outside `osc.allow`.
/// First a quiet stretch with only the probe, then `--seconds` with both other hosts sending
/// garbage over UDP, OSC TCP, HTTP and WebSocket, holding connections open and reading nothing
/// (`Attacker`). Once a second it samples the daemon's descriptors and resident memory.
///
/// Fails (exit 1) when the daemon dies, an allowed probe request goes unanswered, the music stops
/// reaching the sink, or the daemon's descriptors grow past `--max-descriptors` over the quiet
/// figure. Prints the probe's `/ping` latency quiet and under attack, and what each attacker saw.
@main
struct DuckHostile: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duckhostile",
        abstract: "Run duckrouter under hostile traffic from a refused and an allowed host, and check it holds up.")

    @Option(help: "The duckrouter binary.")
    var duckrouter = ".build/release/duckrouter"
    @Option(help: "How long the hostile traffic lasts, in seconds.")
    var seconds = 120.0
    @Option(help: "The quiet stretch before it (the latency to compare with), in seconds.")
    var quiet = 20.0
    @Option(help: "The probe's UDP /ping rate, per second.")
    var probeRate = 100.0
    @Option(help: "Largest growth of the daemon's open descriptors over the quiet stretch that passes.")
    var maxDescriptors = 600
    @Option(help: "Seed for the random traffic (default: from the clock; printed).")
    var seed: UInt64?
    @Option(help: "Also append the results as a Markdown table row to this file.")
    var markdown: String?

    func run() throws {
        let seed = seed ?? UInt64(Date().timeIntervalSince1970 * 1000)
        let limit = Sockets.raiseDescriptorLimit()
        let server = try JackServer(period: 256)
        defer { server.stop() }
        let source = try TestClient(name: "hostilesrc", server: server.name, outputs: ["music_L", "music_R"])
        let sink = try TestClient(name: "hostilesink", server: server.name, inputs: ["speaker_1", "speaker_2"])
        defer { source.close(); sink.close() }
        for output in 0..<2 { source.setSignal(Signals.sine(frequency: 440, amplitude: 0.25, sampleRate: server.sampleRate), output: output) }

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckhostile-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var keepFolder = true
        defer { if !keepFolder { try? FileManager.default.removeItem(at: folder) } }
        let oscPort = try OSCPorts.free(), httpPort = try OSCPorts.free()
        let session = folder.appendingPathComponent("hostile.json")
        try """
            {
              "routes": [{"name": "speaker", "ports": ["hostilesink:speaker_1", "hostilesink:speaker_2"]}],
              "apps": [{"name": "music", "category": "playback", "connect": ["hostilesrc:music_[LR]"], "active": true}],
              "osc": {"port": \(oscPort), "bind": "0.0.0.0", "allow": ["127.0.0.1/32", "127.0.0.3/32"]},
              "http": {"port": \(httpPort)}
            }
            """.write(to: session, atomically: true, encoding: .utf8)
        let logFile = folder.appendingPathComponent("duckrouter.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: duckrouter)
        daemon.arguments = ["--server", server.name, "--state", folder.appendingPathComponent("hostile.state.json").path,
                            "--log-level", "notice", session.path]
        let log = try FileHandle(forWritingTo: logFile)
        defer { try? log.close() }
        daemon.standardError = log
        daemon.standardOutput = FileHandle.nullDevice
        try daemon.run()
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
        let pid = daemon.processIdentifier
        let ready = Date()
        while !Self.answers(oscPort: oscPort) {
            guard Date().timeIntervalSince(ready) < 15, daemon.isRunning else {
                throw ValidationError("the daemon did not answer OSC; its log:\n\(String(decoding: (try? Data(contentsOf: logFile)) ?? Data(), as: UTF8.self))")
            }
            Thread.sleep(forTimeInterval: 0.1)
        }

        var failures: [String] = []
        let probe = Probe(oscPort: oscPort, httpPort: httpPort, rate: probeRate)
        probe.start()
        let quietSamples = try watch("quiet", seconds: quiet, daemon: daemon, sink: sink, failures: &failures)
        let quietResults = probe.take()

        var seeds = SplitMix(seed: seed)
        let attackers = ["127.0.0.2", "127.0.0.3"].flatMap { host in
            [Attacker.Kind.udpFlood(rate: host == "127.0.0.2" ? 1500 : 500), .oscHold(count: 100), .oscChurn(rate: 30),
             .httpHold(count: host == "127.0.0.2" ? 1000 : 200), .httpJunk(rate: 30), .webSocketHog(count: 20)]
                .map { Attacker(host: host, refused: host == "127.0.0.2", kind: $0, oscPort: oscPort, httpPort: httpPort, seed: UInt64(seeds.next(1 << 30))) }
        }
        for attacker in attackers { attacker.start() }
        let hostileSamples = try watch("hostile", seconds: seconds, daemon: daemon, sink: sink, failures: &failures)
        let hostileResults = probe.take()
        for attacker in attackers { attacker.stop() }
        probe.stop()
        let alive = daemon.isRunning
        if alive {
            kill(pid, SIGTERM)
            let deadline = Date().addingTimeInterval(10)
            while daemon.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            if daemon.isRunning || daemon.terminationStatus != 0 { failures.append("the daemon did not stop cleanly on SIGTERM") }
        }

        for (stretch, results) in [("quiet", quietResults), ("hostile", hostileResults)] {
            failures += results.failures.map { "\(stretch): \($0)" }
            if results.lost > 0 { failures.append("\(stretch): \(results.lost) of \(results.sent) UDP /ping unanswered") }
        }
        let quietDescriptors = quietSamples.map(\.descriptors).max() ?? 0
        let peakDescriptors = hostileSamples.map(\.descriptors).max() ?? 0
        if peakDescriptors - quietDescriptors > maxDescriptors {
            failures.append("the daemon's descriptors grew from \(quietDescriptors) to \(peakDescriptors) (limit +\(maxDescriptors))")
        }
        let quietMemory = quietSamples.last?.residentKB ?? 0, peakMemory = hostileSamples.map(\.residentKB).max() ?? 0
        func ms(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "-" }
        var report = """
            duckhostile: \(String(format: "%.0f", quiet)) s quiet, then \(String(format: "%.0f", seconds)) s hostile (seed \(seed)); this process's descriptor limit \(limit)
              probe /ping over UDP (127.0.0.1, \(Int(probeRate))/s) p50 / p99 / max ms: quiet \(ms(quietResults.milliseconds(0.5))) / \(ms(quietResults.milliseconds(0.99))) / \(ms(quietResults.milliseconds(1))), hostile \(ms(hostileResults.milliseconds(0.5))) / \(ms(hostileResults.milliseconds(0.99))) / \(ms(hostileResults.milliseconds(1)))
              under attack, answered: UDP /ping \(hostileResults.latencies.count) of \(hostileResults.sent), OSC TCP /state \(hostileResults.stateAnswered) of \(hostileResults.stateAsked), HTTP GET \(hostileResults.httpAnswered) of \(hostileResults.httpAsked), WebSocket /ping \(hostileResults.webSocketAnswered) of \(hostileResults.webSocketAsked)
              the daemon's descriptors: \(quietDescriptors) quiet, at most \(peakDescriptors) under attack; resident memory \(quietMemory) kB quiet, at most \(peakMemory) kB
              music at the sink every second: \(hostileSamples.allSatisfy(\.musicHeard) ? "yes" : "NO")

            """
        for attacker in attackers {
            let counts = attacker.snapshot
            report += "  \(attacker.host) \(attacker.kind): sent \(counts.sent), opened \(counts.opened), closed by the router \(counts.closedByRouter), not connected \(counts.notConnected), held at the end \(counts.held)\n"
        }
        report += failures.isEmpty ? "  PASS" : "  FAIL:\n    " + failures.prefix(30).joined(separator: "\n    ")
        print(report)
        if let markdown {
            let row = "| \(String(format: "%.0f", seconds)) s | \(ms(quietResults.milliseconds(0.5))) / \(ms(quietResults.milliseconds(0.99))) | \(ms(hostileResults.milliseconds(0.5))) / \(ms(hostileResults.milliseconds(0.99))) | \(quietDescriptors) → \(peakDescriptors) | \(quietMemory) → \(peakMemory) kB | \(failures.isEmpty ? "pass" : "FAIL") |\n"
            if let handle = FileHandle(forWritingAtPath: markdown) {
                handle.seekToEndOfFile()
                handle.write(Data(row.utf8))
            } else {
                try row.write(toFile: markdown, atomically: true, encoding: .utf8)
            }
        }
        keepFolder = !failures.isEmpty
        if !failures.isEmpty {
            print("the daemon's log and session are kept in \(folder.path)")
            throw ExitCode(1)
        }
    }

    struct Sample {
        var descriptors: Int
        var residentKB: Int
        var musicHeard: Bool
    }

    /// A sample a second for `seconds`: the daemon's descriptors and memory, and whether the
    /// sink heard the music over the last tenth of a second.
    func watch(_ stretch: String, seconds: Double, daemon: Process, sink: TestClient, failures: inout [String]) throws -> [Sample] {
        var samples: [Sample] = []
        let start = Date()
        while Date().timeIntervalSince(start) < seconds {
            guard daemon.isRunning else {
                failures.append("\(stretch): the daemon exited (status \(daemon.terminationStatus)) \(String(format: "%.0f", Date().timeIntervalSince(start))) s in")
                break
            }
            let heard = Signals.peakDecibels(sink.record(seconds: 0.1).channels.first ?? []) > -20
            if !heard { failures.append("\(stretch): no music at the sink \(String(format: "%.0f", Date().timeIntervalSince(start))) s in") }
            samples.append(Sample(descriptors: openDescriptors(daemon.processIdentifier) ?? -1,
                                  residentKB: residentKB(daemon.processIdentifier) ?? -1, musicHeard: heard))
            Thread.sleep(forTimeInterval: max(0, 1 - Date().timeIntervalSince(start).truncatingRemainder(dividingBy: 1)))
        }
        return samples
    }

    /// Whether the daemon answers `/ping` over UDP now.
    static func answers(oscPort: UInt16) -> Bool {
        guard let client = try? OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: oscPort)),
              (try? client.send(OSCMessage("/ping"))) != nil else { return false }
        return (try? client.receive(timeout: 0.5, until: { $0.path == "/reply" })) != nil
    }
}
