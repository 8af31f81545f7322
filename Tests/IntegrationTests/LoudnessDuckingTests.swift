import Foundation
import JackRig
import Loudness
import OSCTransport
import Testing

/// Issue 19, ducking that listens, under jackd with real signals: a speech-like voice (pink noise
/// with a 4 Hz syllable envelope, mono) over a music bed (stereo pink noise) at three levels. With
/// `target: 15` the bed sits 15 LU under the voice at the route whatever its level; with a fixed
/// -14 dB it does not. Per-route depth at two routes at once, a volume set while ducked, and the
/// "why" in `/state` and `/duckrouter/app`.
///
/// What is heard is measured by the test itself (libebur128 through `LoudnessMeter`, short-term:
/// the last 3 s) from one recording client: the voice as the source plays it, and the route's
/// two channels. The voice is never ducked (gain exactly 1, the same cycle: JACK runs the source,
/// the router, then the recorder), so the bed at the route is the route less the voice.
@Suite("Loudness-targeted ducking", .serialized)
struct LoudnessDuckingTests {
    static let rate = 48000
    static let voiceLUFS = -23.0

    // MARK: Signals

    /// Pink noise (Paul Kellet's filter on white noise from a fixed seed), about -10 dBFS RMS.
    static func pinkNoise(seconds: Double, seed: UInt64) -> [Float] {
        var state = seed | 1
        func white() -> Float {
            // xorshift64*: the same noise every run.
            state ^= state >> 12; state ^= state << 25; state ^= state >> 27
            return Float(Double((state &* 2685821657736338717) >> 11) / Double(1 << 53)) * 2 - 1
        }
        var b = [Float](repeating: 0, count: 7)
        return (0..<Int(seconds * Double(rate))).map { _ in
            let w = white()
            b[0] = 0.99886 * b[0] + w * 0.0555179; b[1] = 0.99332 * b[1] + w * 0.0750759
            b[2] = 0.96900 * b[2] + w * 0.1538520; b[3] = 0.86650 * b[3] + w * 0.3104856
            b[4] = 0.55000 * b[4] + w * 0.5329522; b[5] = -0.7616 * b[5] - w * 0.0168980
            let pink = b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + w * 0.5362
            b[6] = w * 0.115926
            return pink * 0.11
        }
    }

    /// Speech-like: pink noise in syllables, a raised-cosine envelope at 4 Hz (silent between).
    static func speechLike(seconds: Double) -> [Float] {
        pinkNoise(seconds: seconds, seed: 0x5EEC4).enumerated().map { index, sample in
            sample * Float(0.5 * (1 - cos(2 * Double.pi * 4 * Double(index) / Double(rate))))
        }
    }

    /// Short-term loudness (the last 3 s) of `channels`, LUFS (one channel: dual mono, as a mono
    /// app is heard on a stereo route).
    static func shortTerm(_ channels: [[Float]]) -> Double {
        guard let meter = LoudnessMeter(channels: channels.count, sampleRate: rate), let frames = channels.map(\.count).min(),
              frames >= 3 * rate else { return .nan }
        for channel in channels {
            precondition(channel.count >= frames)
        }
        var copies = channels.map { Array($0.prefix(frames)) }
        copies.withUnsafeMutableBufferPointer { buffers in
            meter.add(frames: frames) { c in buffers[c].withUnsafeBufferPointer { UnsafePointer($0.baseAddress!) } }
        }
        return meter.shortTerm ?? -.infinity
    }

    /// `channels` scaled so that their loudness over the whole (looped) signal is `lufs`.
    static func scaled(_ channels: [[Float]], to lufs: Double) -> [[Float]] {
        let now = shortTerm(channels.map { Array($0.suffix(3 * rate)) })
        let gain = Float(pow(10, (lufs - now) / 20))
        return channels.map { $0.map { $0 * gain } }
    }

    static let voice = scaled([speechLike(seconds: 4)], to: voiceLUFS)[0]
    static let bed = [pinkNoise(seconds: 4, seed: 0xBED1), pinkNoise(seconds: 4, seed: 0xBED2)]

    // MARK: The rig

    /// OSCRig with a `meter` client recording the voice as played and both routes, in one take.
    struct Stage {
        let rig: OSCRig
        let meter: TestClient

        init(apps: String = "", http: Bool = false, show: String = "") throws {
            rig = try OSCRig(apps: apps, show: show, http: http)
            meter = try TestClient(name: "meter", server: rig.server.name, inputs: ["voice", "speaker_1", "speaker_2", "phones_1", "phones_2"])
            try meter.connect("source:nav", to: "meter:voice")
            for (route, port) in [("speaker_out_1", "speaker_1"), ("speaker_out_2", "speaker_2"),
                                  ("headphones_out_1", "phones_1"), ("headphones_out_2", "phones_2")] {
                try meter.connect("duckrouter:\(route)", to: "meter:\(port)")
            }
            rig.source.setSignal(LoudnessDuckingTests.voice, output: 2)
        }

        func close() {
            meter.close()
            rig.close()
        }

        /// Sends a command and waits for its reply; an error reply fails the test.
        @discardableResult
        func send(_ path: String, _ arguments: [OSCArgument] = [], sourceLocation: SourceLocation = #_sourceLocation) throws -> OSCMessage {
            let reply = try #require(try rig.query(path, arguments, transport: .tcp), "no answer to \(path)", sourceLocation: sourceLocation)
            #expect(reply.path == "/reply", "\(path) \(arguments): \(reply)", sourceLocation: sourceLocation)
            return reply
        }

        /// Loudness heard over the last 3 s of a 3.3 s take: the voice, the bed at the speaker
        /// (the route, less the voice while nav is active: `voiceHeard`) and the headphones
        /// (where the voice does not play).
        /// The router's xruns (as JACK reports them) and where its frame clock skipped
        /// (`/state` engine `xruns`, `recentGaps`).
        func routerMisses() -> (xruns: Int, gaps: [(firstFrame: UInt32, frames: UInt32)])? {
            guard case let .string(json)? = try? rig.query("/state", transport: .tcp)?.arguments.last,
                  let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
                  let engine = object["engine"] as? [String: Any], let xruns = engine["xruns"] as? Int,
                  let gaps = engine["recentGaps"] as? [[Int]] else { return nil }
            return (xruns, gaps.compactMap { $0.count == 2 ? (UInt32($0[0]), UInt32($0[1])) : nil })
        }

        /// Only what the router missed and the recording client did not can spoil a take: there
        /// the route lacks a cycle the voice has, and the difference is the voice, not the bed.
        /// A cycle the recorder missed is missing from every channel it records alike, and one
        /// the whole graph skipped from all of them. So a take is taken again (4 times at most,
        /// the cleanest heard) when JACK reported xruns during it (they cannot be located: a late
        /// router's output) or the router's frame clock skipped where the recorder's did not,
        /// more than 2 cycles in all: one such cycle of 256 frames in 3 s leaves the voice 27 dB
        /// under itself there, which moves a bed 15 LU under the voice by about 0.1 dB.
        /// `after`: seconds of each take left out before its last 3 s (a ramp still moving).
        /// `settled`: a loudness-targeted duck (app, target) that must be back near its target
        /// (the router's own measure) before each take after the first: a storm of missed cycles
        /// on this VM moves the loop too.
        func hear(voiceHeard: Bool = true, after: Double = 0.3, settled: (String, Double)? = nil) throws
            -> (voice: Double, speakerBed: Double, phones: Double) {
            var best: (spoiled: Int, recording: Recording)?
            let period = meter.client.bufferSize
            for attempt in 1...4 {
                if attempt > 1, let (app, target) = settled { try settle(app, target: target, since: .distantPast) }
                let before = routerMisses()
                let recording = meter.record(seconds: 3 + after)
                let past = routerMisses()
                var spoiled = 1_000
                if let before, let past {
                    let own = recording.missedStretches
                    let routerOnly = past.gaps.filter { gap in !before.gaps.contains { $0 == gap } && !own.contains { $0 == gap } }
                    spoiled = (past.xruns - before.xruns) + recording.cyclesMissed(within: routerOnly, period: period)
                }
                if spoiled < (best?.spoiled ?? .max) { best = (spoiled, recording) }
                if spoiled <= 2 { break }
                print("LoudnessDuckingTests: take \(attempt) had \(spoiled) cycles the router missed or was late for: taken again")
            }
            let recording = best!.recording
            let take = recording.channels
            let voice = take[0]
            let speakerBed = [1, 2].map { c in voiceHeard ? zip(take[c], voice).map { $0 - $1 } : take[c] }
            return (LoudnessDuckingTests.shortTerm([voice]), LoudnessDuckingTests.shortTerm(speakerBed),
                    LoudnessDuckingTests.shortTerm([take[3], take[4]]))
        }

        /// `/state` settings.apps[name].
        func app(_ name: String) throws -> [String: Any] {
            let apps = try #require(try rig.settings()["apps"] as? [[String: Any]])
            return try #require(apps.first { $0["name"] as? String == name })
        }

        /// Waits until the router's own loop says the duck of `app` has settled near `target`
        /// (its measured difference within 1 LU) and the ducker's window is full (3.5 s after
        /// `since`); the verdict is the test's own measurement that follows.
        func settle(_ app: String, target: Double, since: Date) throws {
            try waitFor("\(app)'s duck to settle near \(target) LU", timeout: 15) {
                guard Date().timeIntervalSince(since) > 4,
                      let ducks = (try? self.app(app))?["ducking"] as? [[String: Any]],
                      let difference = ducks.compactMap({ $0["differenceLu"] as? Double }).first else { return false }
                return abs(difference - target) < 0.5
            }
        }
    }

    static func round(_ value: Double) -> String { String(format: "%.1f", value) }

    // MARK: Acceptance 1

    @Test("a speech-like voice over music at -30, -20 and -10 LUFS: target 15 keeps the bed 15 ±1.5 LU under the voice at the route every time; a fixed -14 dB does not")
    func targetAgainstFixedLevel() throws {
        let stage = try Stage()
        defer { stage.close() }
        var lines = ["music    | target 15: voice, bed, difference | level -14: voice, bed, difference"]
        for musicLUFS in [-30.0, -20.0, -10.0] {
            let music = Self.scaled(Self.bed, to: musicLUFS)
            stage.rig.source.setSignal(music[0], output: 0)
            stage.rig.source.setSignal(music[1], output: 1)

            try stage.send("/duck/target", [.float(15)])
            let onset = Date()
            try stage.send("/app/nav/activate")
            try stage.settle("music", target: 15, since: onset)
            let targeted = try stage.hear(settled: ("music", 15))
            try stage.send("/app/nav/deactivate")

            try stage.send("/duck/target", [.string("off")])
            try stage.send("/duck/level", [.float(-14)])
            try stage.send("/app/nav/activate")
            let fixed = try stage.hear()
            try stage.send("/app/nav/deactivate")

            let differences = (targeted.voice - targeted.speakerBed, fixed.voice - fixed.speakerBed)
            lines.append("\(Self.round(musicLUFS)) LUFS | \(Self.round(targeted.voice)), \(Self.round(targeted.speakerBed)), \(Self.round(differences.0)) LU"
                         + " | \(Self.round(fixed.voice)), \(Self.round(fixed.speakerBed)), \(Self.round(differences.1)) LU")
            #expect(abs(targeted.voice - Self.voiceLUFS) < 0.5, "the voice is never ducked: \(targeted.voice) LUFS")
            #expect(abs(differences.0 - 15) <= 1.5, "music at \(musicLUFS) LUFS, target 15: \(differences.0) LU")
            #expect(abs(differences.1 - 15) > 1.5, "music at \(musicLUFS) LUFS, fixed -14 dB: \(differences.1) LU")
            // The fixed duck is what it says: the bed 14 dB under its own loudness.
            #expect(abs(fixed.speakerBed - (musicLUFS - 14)) < 1, "fixed: the bed at \(fixed.speakerBed) LUFS")
        }
        print("LoudnessDuckingTests, short-term loudness at the speaker (voice -23 LUFS):\n" + lines.joined(separator: "\n"))
    }

    /// Regression: the loop's onsets outlived a duck when its timer stopped, so a second duck of the
    /// same pair took the ducker's last 3 s (mostly silence before it spoke) at once, read the
    /// voice 10-15 dB low and pushed the bed towards the floor before the voice had played 400 ms.
    @Test("a second duck of the same pair, metering still on, starts at the rule's level and holds it for the voice's first 400 ms, as the first did")
    func secondDuckStartsAfresh() throws {
        let stage = try Stage()
        defer { stage.close() }
        let music = Self.scaled(Self.bed, to: -20)
        stage.rig.source.setSignal(music[0], output: 0)
        stage.rig.source.setSignal(music[1], output: 1)
        try stage.send("/duck/target", [.float(15)])
        for round in 1...2 {
            try stage.send("/app/nav/activate")
            let onset = Date()
            // Until the voice has played 400 ms the duck is the level (-14 dB): every look at
            // /state in the first 350 ms after the activation was answered says so.
            var seen: [Double] = []
            while Date().timeIntervalSince(onset) < 0.35 {
                if let ducks = (try? stage.app("music"))?["ducking"] as? [[String: Any]], let gain = ducks.first?["gainDb"] as? Double,
                   Date().timeIntervalSince(onset) < 0.35 {
                    seen.append(gain)
                }
            }
            #expect(!seen.isEmpty && seen.allSatisfy { $0 == -14 },
                    "round \(round): the depths /state gave in the first 350 ms: \(Array(Set(seen)).sorted()) (\(seen.count) looks)")
            guard round == 1 else { break }
            // The first duck runs its course (the loop moves it), then ends.
            try stage.settle("music", target: 15, since: onset)
            try stage.send("/app/nav/deactivate")
            try waitFor("music undducked") { (try? stage.app("music")["state"] as? String) == "active" }
        }
    }

    // MARK: Acceptance 3

    @Test("per-route depth at two routes at once (the DJ bed -6 dB on the headphones, 18 LU under the voice on the speaker); a volume set while ducked is where it comes back; the why in /state and /duckrouter/app")
    func perRouteRestoreAndWhy() throws {
        let stage = try Stage(apps: #"{"name": "bed", "category": "multiRoute", "options": ["mixWithOthers"], "connect": ["source:extra_[LR]"], "active": true}"#)
        defer { stage.close() }
        stage.rig.play(music: 0, nav: 0, game: 0, extra: 0)
        stage.rig.source.setSignal(Self.voice, output: 2)
        let bed = Self.scaled(Self.bed, to: -18)
        stage.rig.source.setSignal(bed[0], output: 5)
        stage.rig.source.setSignal(bed[1], output: 6)
        let alone = try stage.hear(voiceHeard: false)
        #expect(abs(alone.phones - -18) < 0.5 && abs(alone.speakerBed - -18) < 0.5, "the bed alone on both routes: \(alone)")

        try stage.send("/duck/rule", [.string("nav"), .string("bed"), .string("headphones"), .string("level"), .float(-6)])
        try stage.send("/duck/rule", [.string("nav"), .string("bed"), .string("speaker"), .string("target"), .float(18)])
        let subscriber = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: stage.rig.port))
        try subscriber.send(OSCMessage("/subscribe"))
        _ = try subscriber.receive(timeout: 2) { $0.path == "/reply" }
        let onset = Date()
        try stage.send("/app/nav/activate")
        try stage.settle("bed", target: 18, since: onset)
        let ducked = try stage.hear(settled: ("bed", 18))
        print("LoudnessDuckingTests, per route: bed alone \(Self.round(alone.phones)) LUFS; ducked: headphones \(Self.round(ducked.phones)) LUFS,"
              + " speaker \(Self.round(ducked.voice - ducked.speakerBed)) LU under the voice")
        #expect(abs(ducked.phones - (alone.phones - 6)) < 0.5, "headphones: the bed 6 dB down: \(ducked.phones) LUFS")
        #expect(abs(ducked.voice - ducked.speakerBed - 18) <= 1.5, "speaker: 18 LU under the voice: \(ducked.voice - ducked.speakerBed) LU")

        // Why: every route the bed is ducked on, its rule, and what the loop measured.
        let ducks = try #require(try stage.app("bed")["ducking"] as? [[String: Any]])
        let byRoute = Dictionary(uniqueKeysWithValues: ducks.map { ($0["route"] as? String ?? "", $0) })
        #expect(byRoute["headphones"]?["by"] as? String == "nav" && byRoute["headphones"]?["rule"] as? String == "route"
                && byRoute["headphones"]?["gainDb"] as? Double == -6 && byRoute["headphones"]?["target"] == nil, "\(ducks)")
        let speaker = try #require(byRoute["speaker"])
        #expect(speaker["by"] as? String == "nav" && speaker["rule"] as? String == "route" && speaker["target"] as? Double == 18
                && speaker["floorDb"] as? Double == -40, "\(speaker)")
        let gain = try #require(speaker["gainDb"] as? Double), duckerLufs = try #require(speaker["duckerLufs"] as? Double)
        let duckedLufs = try #require(speaker["duckedLufs"] as? Double), difference = try #require(speaker["differenceLu"] as? Double)
        #expect(abs(duckerLufs - Self.voiceLUFS) < 1 && abs(duckedLufs - -18) < 1 && abs(difference - 18) < 1, "\(speaker)")
        #expect(abs(gain - (duckerLufs - 18 - duckedLufs)) < 0.6, "the depth is the measured difference less the target: \(speaker)")
        #expect(try stage.app("bed")["why"] as? String == "ducked by nav")
        // The notification that said the bed is ducked carries who, the rule and (loudness) its target.
        let note = try #require(try subscriber.receive(timeout: 5) { $0.path == "/duckrouter/app" && $0.arguments.first == .string("bed") })
        #expect(note.arguments.count >= 6 && note.arguments[1] == .string("ducked") && note.arguments[4] == .string("nav"), "\(note)")

        // A volume set while ducked is what the bed comes back to.
        try stage.send("/app/bed/gain", [.float(-6)])
        try stage.send("/app/nav/deactivate")
        try waitFor("the bed to be undducked") { (try? stage.app("bed")["state"] as? String) == "active" }
        #expect(try stage.app("bed")["gainDb"] as? Double == -6)
        // The release (500 ms) has the first second to finish.
        let after = try stage.hear(voiceHeard: false, after: 1)
        #expect(abs(after.phones - (alone.phones - 6)) < 0.5 && abs(after.speakerBed - (alone.speakerBed - 6)) < 0.5,
                "back at the volume set while ducked: \(after)")
    }
}
