import ArgumentParser
import Foundation
import JackHost
import JackRig
import OSCTransport

/// `oscbench`: the OSC control path of a running duckrouter, measured from outside (issue 4).
///
/// Command latency: a JACK client `oscbench_source` plays a constant level into an app, a JACK
/// client `oscbench_probe` records the route it plays to. Each message changes the app's volume;
/// its latency is the JACK frame time of the first recorded sample that differs from the steady
/// level, minus the frame time when the message was sent (`jack_frame_time`, read just before
/// `sendto`). Both ends are on the JACK frame clock, so the figure is what a listener would hear
/// late, without any wall-clock conversion.
///
/// Throughput: a flood of volume changes (every one a real change, every one compiled into a plan)
/// over one TCP connection or UDP socket at an offered rate, with at most `window` messages unanswered. Every
/// message must be answered with /reply; xruns are read from /state before and after.
@main
struct OSCBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "oscbench",
        abstract: "Measure a running duckrouter's OSC command latency and message throughput.",
        discussion: """
            The router's session must route app APP's input from oscbench_source:out_1/2 and play \
            its current route to oscbench_probe:in_1/2 (scripts/bench.sh writes such a session). \
            Exit status 1 when a message is lost or answered with /error.
            """)

    @Option(help: "The JACK server the router runs on.")
    var server: String
    @Option(help: "The router's OSC host.")
    var host = "127.0.0.1"
    @Option(help: "The router's OSC port.")
    var port: UInt16
    @Option(help: "The app whose volume the messages change.")
    var app = "music"
    @Option(help: "Messages for the latency measurement (0: skip it).")
    var messages = 1000
    @Option(help: "Seconds of flood per offered rate (0: skip the flood).")
    var floodSeconds = 5.0
    @Option(help: "Offered rates in messages per second, comma-separated; 'max' sends as fast as the window allows. An idle window of the same length (no messages) is measured first, for the xruns the machine has without any OSC.")
    var rates = "5000,10000,20000,40000,max"
    @Option(help: "Transports to flood, comma-separated (tcp, udp).")
    var transports = "tcp,udp"
    @Option(help: "Unanswered messages allowed in flight during the flood.")
    var window = 256
    @Option(help: "Also write the results as Markdown table rows to this file.")
    var markdown: String?

    func run() throws {
        let source = try TestClient(name: "oscbench_source", server: server, outputs: ["out_1", "out_2"])
        let probe = try TestClient(name: "oscbench_probe", server: server, inputs: ["in_1", "in_2"],
                                   recordSeconds: Double(messages) * 0.05 + 5)
        defer { source.close(); probe.close() }
        source.setSignal([0.5], output: 0)
        source.setSignal([0.5], output: 1)
        try wait("the router to connect oscbench_source and oscbench_probe") {
            !probe.client.connections(of: "oscbench_probe:in_1").isEmpty
                && !source.client.connections(of: "oscbench_source:out_1").isEmpty
        }
        let control = try OSCClient(OSCURL(transport: .udp, host: host, port: port))
        try wait("the router to answer OSC") { (try? ask(control, OSCMessage("/state"))) != nil }
        let period = probe.client.bufferSize
        let rate = probe.client.sampleRate
        print("router on JACK server '\(server)', \(period) frames at \(rate) Hz (one period = \(format(Double(period) * 1e6 / Double(rate))) µs)")
        var results: [Outcome] = []
        if messages > 0 {
            results.append(try latency(control: control, probe: probe, period: period, rate: rate))
        }
        if floodSeconds > 0 {
            results.append(try flood(control: control, transport: .udp, offered: 0))
            for name in transports.split(separator: ",") {
                guard let transport = OSCURL.Transport(rawValue: String(name)) else {
                    throw ValidationError("'\(name)' is not a transport (tcp, udp)")
                }
                for offered in rates.split(separator: ",") {
                    let perSecond = offered == "max" ? nil : Double(offered)
                    if offered != "max" && perSecond == nil { throw ValidationError("'\(offered)' is not a rate") }
                    results.append(try flood(control: control, transport: transport, offered: perSecond))
                }
            }
        }
        if let markdown {
            try (results.map(\.row).joined(separator: "\n") + "\n").write(toFile: markdown, atomically: true, encoding: .utf8)
        }
        if results.contains(where: { !$0.complete }) { throw ExitCode(1) }
    }

    /// A Markdown row, and whether every message was answered and seen.
    struct Outcome {
        var row: String
        var complete: Bool
    }

    // MARK: Latency

    private func latency(control: OSCClient, probe: TestClient, period: Int, rate: Int) throws -> Outcome {
        let path = "/app/\(app)/volume"
        _ = try ask(control, OSCMessage(path, [.float(1)]))
        let xrunsBefore = try xruns(control)
        Thread.sleep(forTimeInterval: 0.2)
        probe.startRecording()
        Thread.sleep(forTimeInterval: 0.05)
        var sendFrames: [UInt32] = []
        var generator = SystemRandomNumberGenerator()
        for k in 0..<messages {
            // Random spacing, longer than the 20 ms ramp, so sends fall at every phase of a cycle.
            Thread.sleep(forTimeInterval: Double.random(in: 0.025...0.045, using: &generator))
            let message = OSCMessage(path, [.float(k % 2 == 0 ? 0.5 : 1)])
            let frame = probe.client.frameTime
            try control.send(message)
            sendFrames.append(frame)
            _ = try answer(control, to: message)
        }
        Thread.sleep(forTimeInterval: 0.1)
        let take = probe.stopRecording()
        let xrunCount = try xruns(control) - xrunsBefore

        // The JACK frame of every recorded sample.
        let samples = take.channels[0]
        var frameOf = [UInt32](repeating: 0, count: samples.count)
        let starts = take.cycleStarts
        for (c, start) in starts.enumerated() {
            let end = c + 1 < starts.count ? starts[c + 1].index : samples.count
            for j in start.index..<end { frameOf[j] = start.frameTime &+ UInt32(j - start.index) }
        }
        func after(_ a: UInt32, _ b: UInt32) -> Int { Int(Int32(bitPattern: a &- b)) }
        // A message whose change lands after a cycle the probe missed (an xrun: the frame time
        // jumps) cannot be timed: the change may have been in the missing cycle. Those are counted
        // and left out; the xruns themselves are reported.
        let gaps = take.gaps
        var latencies: [Double] = []
        var missed = 0, acrossXrun = 0
        var j = 1
        for sent in sendFrames {
            while j < samples.count && after(frameOf[j], sent) < 0 { j += 1 }
            guard j < samples.count else { missed += 1; continue }
            let steady = samples[j - 1]
            var k = j
            while k < samples.count && samples[k] == steady && after(frameOf[k], sent) < rate / 5 { k += 1 }
            guard k < samples.count, samples[k] != steady else { missed += 1; continue }
            if gaps.contains(where: { $0 >= j && $0 <= k }) { acrossXrun += 1; continue }
            latencies.append(Double(after(frameOf[k], sent)) * 1e6 / Double(rate))
        }
        latencies.sort()
        let periodMicroseconds = Double(period) * 1e6 / Double(rate)
        let target = periodMicroseconds + 1000
        guard !latencies.isEmpty else {
            print("latency: no change was seen at the output")
            return Outcome(row: "| command latency | no change seen | | | |", complete: false)
        }
        let median = percentile(latencies, 0.5), p99 = percentile(latencies, 0.99)
        let mean = latencies.reduce(0, +) / Double(latencies.count)
        let within = Double(latencies.filter { $0 <= target }.count) * 100 / Double(latencies.count)
        print("latency over \(latencies.count) messages (\(missed) not seen, \(acrossXrun) left out: an xrun between send "
              + "and change; \(xrunCount) xruns, \(gaps.count) cycles the probe missed): "
              + "median \(format(median)) µs, mean \(format(mean)) µs, p99 \(format(p99)) µs, max \(format(latencies.last!)) µs; "
              + "target ≤ \(format(target)) µs (1 period + 1 ms): \(p99 <= target ? "met" : "NOT met"), "
              + "\(String(format: "%.1f", within)) % of messages within it")
        return Outcome(row: "| command latency, \(latencies.count) UDP messages (\(acrossXrun) left out: xrun), \(period) frames at \(rate) Hz | median \(format(median)) µs | "
            + "p99 \(format(p99)) µs | max \(format(latencies.last!)) µs | \(String(format: "%.1f", within)) % within \(format(target)) µs; \(xrunCount) xruns |",
                       complete: missed == 0)
    }

    // MARK: Throughput

    private func flood(control: OSCClient, transport: OSCURL.Transport, offered: Double?) throws -> Outcome {
        let path = "/app/\(app)/volume"
        let client = try OSCClient(OSCURL(transport: transport, host: host, port: port))
        let xrunsBefore = try xruns(control)
        var sent = 0, replied = 0, errors = 0
        var lastValue: Float = 0
        let start = now()
        var lastReply = start
        func value(_ n: Int) -> Float { 0.5 + Float(n % 1000) / 2000 }
        func take(_ packet: OSCPacket) {
            for message in OSCClient.messages(in: packet) where message.arguments.first == .string(path) {
                if message.path == "/reply" { replied += 1 } else if message.path == "/error" { errors += 1 }
                lastReply = now()
            }
        }
        while true {
            let elapsed = now() - start
            if elapsed >= floodSeconds { break }
            let allowed = offered.map { $0 > 0 ? Int(elapsed * $0) + 1 : 0 } ?? Int.max
            var wrote = false
            while sent < allowed && sent - replied - errors < window {
                lastValue = value(sent)
                try client.send(OSCMessage(path, [.float(lastValue)]))
                sent += 1
                wrote = true
            }
            // Wait for replies only when nothing may be sent now.
            let wait = wrote ? 0 : offered.map { $0 > 0 ? min(0.001, max(0, Double(sent) / $0 - elapsed)) : 0.01 } ?? 0.001
            while let packet = try client.receive(timeout: wait) {
                take(packet)
                if sent - replied - errors == 0 { break }
            }
        }
        let drainDeadline = now() + 10
        while replied + errors < sent && now() < drainDeadline {
            if let packet = try client.receive(timeout: 0.1) { take(packet) }
        }
        let seconds = sent == 0 ? floodSeconds : lastReply - start
        let xrunsAfter = try xruns(control)
        let final = try ask(control, OSCMessage(path))
        // The router keeps linear gain; the slider position it answers may differ in the last bit.
        var finalOK = sent == 0
        if final.count >= 2, case let .float(volume) = final[1] { finalOK = finalOK || abs(volume - lastValue) < 1e-5 }
        let lost = sent - replied - errors
        let handled = Double(replied + errors) / seconds
        let what = offered == 0 ? "idle, no messages"
            : "flood over \(transport.rawValue.uppercased()), offered \(offered.map { "\(Int($0))/s" } ?? "as fast as possible")"
        let xrunCount = xrunsAfter - xrunsBefore
        print("\(what), window \(window): \(sent) sent, \(replied) replied, \(errors) errors, \(lost) lost "
              + "in \(format(seconds)) s = \(Int(handled)) messages/s; xruns during it: \(xrunCount); "
              + "final volume \(finalOK ? "is the last one sent" : "WRONG: \(final)")")
        return Outcome(row: "| \(what) | \(Int(handled)) messages/s | \(sent) sent, \(replied) replied, "
                           + "\(lost + errors) lost or refused | \(xrunCount) xruns | final state \(finalOK ? "correct" : "wrong") |",
                       complete: lost == 0 && errors == 0 && finalOK)
    }

    // MARK: Helpers

    private func xruns(_ control: OSCClient) throws -> Int {
        let reply = try ask(control, OSCMessage("/state"))
        guard reply.count >= 2, case let .string(json) = reply[1],
              let document = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let engine = document["engine"] as? [String: Any], let xruns = engine["xruns"] as? Int
        else { throw ValidationError("/state has no engine.xruns") }
        return xruns
    }

    private func ask(_ client: OSCClient, _ message: OSCMessage) throws -> [OSCArgument] {
        try client.send(message)
        return try answer(client, to: message)
    }

    /// Waits for the /reply to `message` and returns its arguments; an /error or silence throws.
    private func answer(_ client: OSCClient, to message: OSCMessage) throws -> [OSCArgument] {
        let reply = try client.receive(timeout: 2) { m in
            (m.path == "/reply" || m.path == "/error") && m.arguments.first == .string(message.path)
        }
        guard let reply else { throw ValidationError("no answer to \(message) within 2 s") }
        guard reply.path == "/reply" else { throw ValidationError("\(message) was refused: \(reply)") }
        return reply.arguments
    }

    private func wait(_ what: String, timeout: Double = 10, _ condition: () -> Bool) throws {
        let deadline = now() + timeout
        while now() < deadline {
            if condition() { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw ValidationError("timed out after \(timeout) s waiting for \(what)")
    }
}

private func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// The `q` quantile of sorted values (nearest rank).
private func percentile(_ sorted: [Double], _ q: Double) -> Double {
    sorted[min(sorted.count - 1, max(0, Int((q * Double(sorted.count)).rounded(.up)) - 1))]
}

private func format(_ x: Double) -> String { String(format: "%.0f", x) }
