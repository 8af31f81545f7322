import Foundation
import JackRig
import OSCTransport
import Testing

/// Issue 19, metering: EBU Tech 3341's first cases played through JACK into an app, read in the
/// daemon's `/state` for the app and the route it plays to. The meter itself against the same
/// cases, without JACK: LoudnessTests.
@Suite("Loudness metering", .serialized)
struct LoudnessMeteringTests {
    /// `"loudness": {"meter": true}` at the session's top level, after "osc" (OSCRig writes
    /// `"osc": {"port": N<extra>}`).
    static let meterOn = #"}, "loudness": {"meter": true"#

    /// `/state` engine.loudnessLufs: `(momentary, shortTerm)` of an app or a route.
    static func loudness(_ rig: OSCRig, _ kind: String, _ name: String) throws -> (Double, Double)? {
        guard case let .string(json)? = try rig.query("/state", transport: .tcp)?.arguments.last,
              let document = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let meters = (document["engine"] as? [String: Any])?["loudnessLufs"] as? [String: Any],
              let reading = (meters[kind] as? [String: Any])?[name] as? [String: Any],
              let momentary = reading["momentary"] as? Double, let shortTerm = reading["shortTerm"] as? Double else { return nil }
        return (momentary, shortTerm)
    }

    @Test("a stereo 1 kHz sine at -23 dBFS into music reads -23.0 LUFS (±0.1), momentary and short-term, for music and for the speaker it plays to; at -33 dBFS, -33.0; silence reads -144")
    func ebuCasesThroughJack() throws {
        let rig = try OSCRig(osc: Self.meterOn)
        defer { rig.close() }
        // The metering thread's first look (every 50 ms) may come after the rig is up.
        try waitFor("music's first reading") { ((try? Self.loudness(rig, "apps", "music")) ?? nil) != nil }
        #expect(try Self.loudness(rig, "apps", "music")?.1 == -144, "music silent: -144")
        for level in [-23.0, -33.0] {
            let sine = Signals.sine(frequency: 1000, amplitude: Float(pow(10, level / 20)), sampleRate: 48000)
            rig.source.setSignal(sine, output: 0)
            rig.source.setSignal(sine, output: 1)
            var last: [String: (Double, Double)] = [:]
            do {
                // Short-term needs 3 s of the new level (and the worker's look every 20 ms).
                try waitFor("music and the speaker at \(level) LUFS", timeout: 10) {
                    for (kind, name) in [("apps", "music"), ("routes", "speaker")] { last[name] = try? Self.loudness(rig, kind, name) ?? nil }
                    return ["music", "speaker"].allSatisfy { name in
                        last[name].map { abs($0.0 - level) <= 0.1 && abs($0.1 - level) <= 0.1 } ?? false
                    }
                }
            } catch {
                Issue.record("at \(level) dBFS: \(last)")
                throw error
            }
            print("LoudnessMeteringTests: \(level) dBFS sine: music \(last["music"]!), speaker \(last["speaker"]!) LUFS (momentary, short-term)")
        }
    }

    /// The names of the daemon's threads (as the kernel has them: 15 characters at most).
    static func threadNames(_ rig: OSCRig) -> [String] {
        let tasks = "/proc/\(rig.daemon.processIdentifier)/task"
        return ((try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []).compactMap {
            try? String(contentsOfFile: "\(tasks)/\($0)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    @Test("loudness.meter true in the session: a metering thread; off by default: no loudness in /state and no metering thread")
    func meteringOff() throws {
        let on = try OSCRig(osc: Self.meterOn)
        defer { on.close() }
        #expect(Self.threadNames(on).contains("duckrouter.lufs"), "\(Self.threadNames(on))")
        on.close()
        let off = try OSCRig()
        defer { off.close() }
        let sine = Signals.sine(frequency: 1000, amplitude: 0.07, sampleRate: 48000)
        off.source.setSignal(sine, output: 0)
        guard case let .string(json)? = try off.query("/state", transport: .tcp)?.arguments.last,
              let document = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let engine = document["engine"] as? [String: Any] else { throw Unexpected(description: "no /state") }
        #expect(engine["loudnessLufs"] == nil && engine["peaksDbfs"] != nil, "\(engine.keys.sorted())")
        #expect(!Self.threadNames(off).contains("duckrouter.lufs"), "\(Self.threadNames(off))")
    }

    @Test("/meters/loudness: every app's and route's loudness in bundles of /duckrouter/loudness at up to 10 Hz; refused (-1) while nothing is metered; 0 stops it")
    func loudnessSubscription() throws {
        let on = try OSCRig(osc: Self.meterOn)
        defer { on.close() }
        let sine = Signals.sine(frequency: 1000, amplitude: Float(pow(10, -23.0 / 20)), sampleRate: 48000)
        on.source.setSignal(sine, output: 0)
        on.source.setSignal(sine, output: 1)
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: on.port))
        try client.send(OSCMessage("/meters/loudness", [.float(50)]))
        let reply = try #require(try client.receive(timeout: 2) { $0.path == "/reply" || $0.path == "/error" })
        #expect(reply.path == "/reply" && reply.arguments.dropFirst().first == .float(10), "capped at 10 Hz: \(reply)")
        // 3.5 s of bundles: music's short-term reaches -23 LUFS; the bundles come about 10 a second.
        var music: [(Double, Double)] = []
        var speakerSeen = false
        let start = Date()
        while Date().timeIntervalSince(start) < 4.5 {
            _ = try client.receive(timeout: 0.5, until: { _ in false }) { message in
                guard message.path == "/duckrouter/loudness", message.arguments.count == 4,
                      case let .float(momentary) = message.arguments[2], case let .float(shortTerm) = message.arguments[3] else { return }
                if message.arguments.prefix(2) == [.string("app"), .string("music")] { music.append((Double(momentary), Double(shortTerm))) }
                if message.arguments.prefix(2) == [.string("route"), .string("speaker")] { speakerSeen = true }
            }
        }
        // At most 10 a second (the cap), and they keep coming (how many a busy machine delivers in
        // a window of wall-clock time is not the verdict).
        #expect(music.count >= 10 && music.count <= 47, "readings of music in 4.5 s: \(music.count)")
        #expect(speakerSeen, "routes are in the bundles too")
        let last = try #require(music.last)
        #expect(abs(last.0 - -23) <= 0.2 && abs(last.1 - -23) <= 0.2, "music's last reading: \(last)")
        try client.send(OSCMessage("/meters/loudness", [.float(0)]))
        _ = try client.receive(timeout: 2) { $0.path == "/reply" }
        while try client.receive(timeout: 0.3) != nil {}
        #expect(try client.receive(timeout: 0.5) == nil, "0 stops the bundles")
        on.close()

        let off = try OSCRig()
        defer { off.close() }
        let refusal = try #require(try off.query("/meters/loudness"))
        #expect(refusal.path == "/error" && refusal.arguments.dropFirst().first == .int32(-1), "\(refusal)")
    }
}
