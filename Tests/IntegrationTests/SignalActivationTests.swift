import Foundation
import JackHost
import JackRig
import OSCTransport
import Policy
import RouterCore
import SessionStore
import Testing

/// Issue 8: apps activated by their own sound, under a real jackd (or PipeWire). Music (a 1 kHz sine) plays to
/// the speaker; a microphone, an announcement player and a navigation app are fed by a test
/// source, whose outputs are also recorded as references in the same cycles as the speaker.
@Suite("Signal activation", .serialized)
struct SignalActivationTests {
    static let period = 256
    static let rate = 48000
    /// 48 samples a cycle of the music's 1 kHz sine: each 1 ms block holds one whole cycle.
    static let block = 48

    final class SignalRig {
        let server: JackServer
        let source: TestClient
        let recorder: TestClient
        let router: Router
        let notifications = NotificationLog()

        /// Recording channels.
        enum Channel: Int { case speaker1, speaker2, mic, announce, nav, music }

        init(apps: [Session.App], ducking: DuckingSettings = DuckingSettings(level: -12, attack: 5, release: 50),
             lookahead: Double = 0) throws {
            server = try JackServer(period: SignalActivationTests.period)
            recorder = try TestClient(name: "recorder", server: server.name,
                                      inputs: ["speaker_1", "speaker_2", "ref_mic", "ref_announce", "ref_nav", "ref_music"])
            source = try TestClient(name: "source", server: server.name, outputs: ["music_L", "music_R", "mic", "announce", "nav"])
            for name in ["mic", "announce", "nav"] { try source.connect("source:\(name)", to: "recorder:ref_\(name)") }
            try source.connect("source:music_L", to: "recorder:ref_music")
            var session = Session()
            session.routes = [Session.Route(name: "speaker", ports: ["recorder:speaker_1", "recorder:speaker_2"])]
            session.routes[0].lookahead = lookahead
            var music = Session.App(name: "music", category: .playback, connect: [try PortPattern("source:music_[LR]")])
            music.startsActive = true
            music.resume = .auto
            session.apps = [music] + apps
            session.ducking = ducking
            // The sources' own sound is not in the speaker: only music is measured there.
            for app in apps { session.volumes.apps[app.name] = 0 }
            var configuration = Router.Configuration(session: session, server: server.name)
            let log = notifications
            configuration.onNotification = { log.append($0) }
            router = try Router(configuration: configuration)
            let sine = Signals.sine(frequency: 1000, amplitude: 0.5, sampleRate: server.sampleRate)
            source.setSignal(sine, output: 0)
            source.setSignal(sine, output: 1)
            try waitFor("the router's connections") {
                recorder.client.connections(of: "recorder:speaker_1").contains("duckrouter:speaker_out_1")
                    && source.client.connections(of: "source:music_L").contains("duckrouter:music_in_1")
            }
            try settle(router)
        }

        deinit {
            router.stop()
            source.close()
            recorder.close()
            server.stop()
        }

        /// Plays `samples` on `name`, looping: from where the previous signal was (its position
        /// modulo the new length), or from the first sample with `fromStart`.
        func play(_ samples: [Float], on name: String, fromStart: Bool = false) {
            let output = ["music_L", "music_R", "mic", "announce", "nav"].firstIndex(of: name)!
            source.setSignal(samples, output: output, fromStart: fromStart)
        }

        func state(_ app: String) -> String { router.status().apps.first { $0.name == app }?.state ?? "?" }

        /// Plays `samples` on `name` from silence and records `seconds` of it, for checks that
        /// look at `judged`: seconds around the sound's onset in its reference channel. A take in
        /// which the router or the recorder missed a cycle there (an xrun; or a cycle PipeWire
        /// drops when a client is late on a loaded machine, and does not report) is timing the
        /// machine, not the router, so the scene is played again, at most `attempts` times in
        /// all, from the sound falling silent and listening again. A cycle missed elsewhere in
        /// the take touches nothing judged, and neither does one both missed (the whole graph
        /// skipped it: PipeWire's driver woke too late); the router's missed cycles are located
        /// by its `recentGaps`, a period either side; xruns JACK reports are not, and spoil a take.
        func cleanTake(playing samples: [Float], on name: String, seconds: Double, judged: ClosedRange<Double>,
                       attempts: Int = 5) throws -> Recording {
            let reference = [("mic", Channel.mic), ("announce", .announce), ("nav", .nav)].first { $0.0 == name }!.1
            var spoiled: [String] = []
            while true {
                notifications.clear()
                let before = router.status()
                // From its first sample: the take starts with the signal's lead of silence, so
                // the first onset in it, around which the take is judged, is the signal's first,
                // whatever was played before.
                play(samples, on: name, fromStart: true)
                let take = recorder.record(seconds: seconds)
                let after = router.status()
                let xruns = after.xruns - before.xruns, missed = Int(after.missedCycles - before.missedCycles)
                let period = SignalActivationTests.period
                let routerGaps = after.recentGaps.map { ($0.firstFrame, $0.frames) }
                let touched = take.touchedByMissedCycles(others: routerGaps, margin: period)
                // Every cycle the router missed must be located, or the whole take counts as touched.
                let located = take.cyclesMissed(within: routerGaps, period: period)
                let onset = SignalActivationTests.onset(take.channels[reference.rawValue]) ?? 0
                let window = (onset + Int(judged.lowerBound * Double(rate)))..<(onset + Int(judged.upperBound * Double(rate)))
                // On PipeWire a late graph can hand the recorder a whole cycle of exact silence on the
                // router's outputs amid the music, with no cycle missed on the frame clock (PipeWire
                // tells no one): such a take is played again too.
                let late = [Channel.speaker1, .speaker2].flatMap { take.lateGraphCycles(channel: $0.rawValue) }.filter { $0.overlaps(window) }
                let clean = xruns == 0 && located >= missed && !touched.contains { $0.overlaps(window) } && late.isEmpty
                let what = "\(xruns) xruns, \(missed) cycles the router missed (\(located) located), \(take.gaps.count) the recorder missed, \(late.count) silent (late graph), "
                    + (clean ? "none in the judged \(judged) s around the onset" : "in or around the judged \(judged) s")
                if clean || spoiled.count + 1 == attempts {
                    if !spoiled.isEmpty || missed + take.gaps.count > 0 {
                        print("cleanTake: \(spoiled.isEmpty ? "" : "played again after takes with \(spoiled.joined(separator: "; ")); ")this one \(what)")
                    }
                    if !clean { print("cleanTake: judging a take with \(what), after \(attempts) tries") }
                    return take
                }
                spoiled.append(what)
                play([0], on: name)
                try waitFor("\(name) to fall silent and listen again", timeout: 5) { state(name) == "listening" }
                Thread.sleep(forTimeInterval: 0.3)
            }
        }
    }

    /// Bursts of noise (peak 0.3) and silences, in seconds: `[(noise, pause), …]`, then `tail` of
    /// silence; the whole pattern loops, so it is long enough to be recorded once.
    static func voice(_ pattern: [(Double, Double)], lead: Double = 0.5, tail: Double) -> [Float] {
        var generator = SystemRandomNumberGenerator()
        var samples = [Float](repeating: 0, count: Int(lead * Double(rate)))
        for (noise, pause) in pattern {
            samples += (0..<Int(noise * Double(rate))).map { _ in Float.random(in: -0.3...0.3, using: &generator) }
            samples += [Float](repeating: 0, count: Int(pause * Double(rate)))
        }
        return samples + [Float](repeating: 0, count: Int(tail * Double(rate)))
    }

    /// The peak of each 1 ms block of a channel.
    static func envelope(_ samples: [Float]) -> [Float] {
        stride(from: 0, to: samples.count - block + 1, by: block).map { start in
            samples[start..<start + block].reduce(0) { max($0, abs($1)) }
        }
    }

    /// The first sample at or after `from` whose magnitude passes `level`.
    static func onset(_ samples: [Float], after from: Int = 0, level: Float = 0.01) -> Int? {
        samples[from...].firstIndex { abs($0) >= level }
    }

    static func ms(_ frames: Int) -> Double { Double(frames) * 1000 / Double(rate) }

    @Test("a voice on a signal-activated mic ducks the music within one period plus the attack, holds through short pauses, and lets go after the hold time")
    func talkover() throws {
        var mic = Session.App(name: "mic", category: .playback, channelCount: 1, connect: [try PortPattern("source:mic")])
        mic.options = [.duckOthers, .mixWithOthers]
        mic.activation = .signal
        mic.signal = SignalDetection(threshold: -40, attack: 10, hold: 500, hysteresis: 6)
        let rig = try SignalRig(apps: [mic])
        #expect(rig.state("mic") == "listening")
        // Silent for its hold, the mic leaves nothing to decide: the level timer sleeps, and the
        // voice below must wake it through the audio thread (the latency bound holds from sleep;
        // a take played again after a spoiled one may start awake).
        try waitFor("the level timer to sleep while the mic is silent") { rig.router.levelWatchingIsAsleep }
        // Three 300 ms phrases with 150 ms pauses (shorter than the hold), then silence.
        let take = try rig.cleanTake(playing: Self.voice([(0.3, 0.15), (0.3, 0.15), (0.3, 0)], tail: 2.6), on: "mic", seconds: 4.2,
                                     judged: -0.12...2.05)
        let speaker = take.channels[SignalRig.Channel.speaker1.rawValue]
        let reference = take.channels[SignalRig.Channel.mic.rawValue]
        // The first phrase that follows at least 300 ms of silence in the reference.
        var search = 0
        var start: Int?
        while let candidate = Self.onset(reference, after: search) {
            if candidate >= Int(0.3 * Double(Self.rate)), reference[(candidate - Int(0.3 * Double(Self.rate)))..<candidate].allSatisfy({ abs($0) < 0.01 }) {
                start = candidate
                break
            }
            search = candidate + 1
        }
        let voiceStart = try #require(start, "a phrase onset in the recording")
        let envelope = Self.envelope(speaker)
        let startBlock = voiceStart / Self.block
        let steady = envelope[(startBlock - 100)..<(startBlock - 2)]
        let full = steady.reduce(0, +) / Float(steady.count)
        #expect(abs(Decibels.level(full) - Decibels.level(0.5)) < 0.5, "music at full level before the voice: \(Decibels.level(full)) dBFS")
        // The duck starts: the first block 0.5 dB under the steady level.
        let duckBlock = try #require(envelope[startBlock...].firstIndex { $0 < full * Decibels.linear(-0.5) })
        let latency = Self.ms(duckBlock * Self.block - voiceStart)
        let bound = Self.ms(Self.period) + 10
        print("talkover: the duck starts \(String(format: "%.1f", latency)) ms after the voice crosses -40 dBFS (bound: one period + attack = \(String(format: "%.1f", bound)) ms)")
        // One block of tolerance: the envelope's own resolution.
        #expect(latency <= bound + Self.ms(Self.block), "duck started \(latency) ms after the voice")
        #expect(latency >= 10 - Self.ms(Self.period), "not before the attack time could have passed")
        // Fully ducked (-12 dB) once the 5 ms duck ramp is over, and through both short pauses.
        let phrases = (startBlock + Int(bound) + 10)..<(startBlock + 1200)
        let ducked = envelope[phrases]
        #expect(ducked.allSatisfy { abs(Decibels.level($0) - (Decibels.level(full) - 12)) < 1 },
                "ducked by 12 dB through the pauses: \(Decibels.level(ducked.min() ?? 0))...\(Decibels.level(ducked.max() ?? 0)) dBFS")
        // The last phrase ends at 1.2 s; the duck holds for the 500 ms hold, then releases (50 ms).
        let lastEnd = try #require(reference[..<(voiceStart + Int(1.3 * Double(Self.rate)))].lastIndex { abs($0) >= 0.01 })
        let holdEnd = (lastEnd + Int(0.5 * Double(Self.rate))) / Self.block
        let stillDucked = envelope[(lastEnd / Self.block + 5)..<(holdEnd - 5)]
        #expect(stillDucked.allSatisfy { $0 < full * Decibels.linear(-11) }, "still ducked during the hold")
        let back = envelope[(holdEnd + 80)..<(holdEnd + 200)]
        #expect(back.allSatisfy { abs(Decibels.level($0) - Decibels.level(full)) < 0.5 },
                "music back after hold and release: \(Decibels.level(back.min() ?? 0))...\(Decibels.level(back.max() ?? 0)) dBFS against \(Decibels.level(full)), first off at \(Self.ms(((back.firstIndex { abs(Decibels.level($0) - Decibels.level(full)) >= 0.5 } ?? 0) - voiceStart / Self.block) * Self.block)) ms after the voice; states \(rig.notifications.all.map { "\($0)" }.suffix(6))")
        let release = try #require(envelope[(holdEnd - 5)...].firstIndex { $0 > full * Decibels.linear(-11.5) })
        print("talkover: the duck lets go \(String(format: "%.0f", Self.ms((release - lastEnd / Self.block) * Self.block))) ms after the last sound (hold 500 ms)")
        #expect(rig.notifications.contains { if case .policy(.appState("mic", .active, _, .signal, _)) = $0 { true } else { false } },
                "the mic was reported active because of its signal")
        #expect(rig.state("mic") == "listening")
        // The recorded voice loops: silenced for good, the mic lets the timer sleep again.
        rig.play([0], on: "mic")
        try waitFor("the level timer to sleep again once the mic has been silent for its hold") { rig.router.levelWatchingIsAsleep }
    }

    @Test("a 30 ms look-ahead on the route: the voice is heard 30 ms late, the music at once, and the duck the voice causes is complete before the voice is heard")
    func lookahead() throws {
        var mic = Session.App(name: "mic", category: .playback, channelCount: 1, connect: [try PortPattern("source:mic")])
        mic.options = [.duckOthers, .mixWithOthers]
        mic.activation = .signal
        let rig = try SignalRig(apps: [mic], lookahead: 30)
        // The delay: with the music silent and the mic audible, the voice reaches the speaker
        // 30 ms (1,440 frames) after it entered; the music is not delayed at all.
        rig.play([0], on: "music_L")
        try rig.router.setAppVolume("mic", position: 1)
        let voiceTake = try rig.cleanTake(playing: Self.voice([(0.2, 0)], lead: 0.3, tail: 1.5), on: "mic", seconds: 2.0,
                                          judged: -0.01...0.05)
        let said = try #require(Self.onset(voiceTake.channels[SignalRig.Channel.mic.rawValue]))
        let heardVoice = try #require(Self.onset(voiceTake.channels[SignalRig.Channel.speaker1.rawValue], after: said))
        #expect(heardVoice - said == 1440, "the voice heard \(heardVoice - said) frames late")
        try rig.router.setAppVolume("mic", position: 0)
        rig.play([0], on: "mic")
        try waitFor("the mic to fall silent and listen again", timeout: 5) { rig.state("mic") == "listening" }
        try settle(rig.router)
        // Paced: 0.1 s of silence, then the music starts, and 0.3 s of it.
        rig.recorder.startRecording()
        Thread.sleep(forTimeInterval: 0.1)
        rig.play(Signals.sine(frequency: 1000, amplitude: 0.5, sampleRate: Self.rate), on: "music_L")
        Thread.sleep(forTimeInterval: 0.3)
        let start = rig.recorder.stopRecording()
        let sent = try #require(Self.onset(start.channels[SignalRig.Channel.music.rawValue]))
        let heard = try #require(Self.onset(start.channels[SignalRig.Channel.speaker1.rawValue]))
        #expect(heard == sent, "music heard \(heard - sent) frames late")
        // JACK knows: the route's ports carry 0 to 1,440 frames of capture latency.
        #expect(rig.recorder.client.captureLatency(of: "duckrouter:speaker_out_1") == 0...1440)

        let take = try rig.cleanTake(playing: Self.voice([(0.4, 0)], lead: 0.5, tail: 2), on: "mic", seconds: 2.6,
                                     judged: -0.11...0.06)
        let reference = take.channels[SignalRig.Channel.mic.rawValue]
        let voiceStart = try #require(Self.onset(reference, after: 0))
        let envelope = Self.envelope(take.channels[SignalRig.Channel.speaker1.rawValue])
        let startBlock = voiceStart / Self.block
        let full = envelope[(startBlock - 100)..<(startBlock - 2)].reduce(0, +) / 98
        // The voice is heard 30 ms after it was spoken; the duck (5 ms ramp) must be over by then.
        let duckBlock = try #require(envelope[startBlock...].firstIndex { $0 < full * Decibels.linear(-0.5) })
        let duckStart = Self.ms(duckBlock * Self.block - voiceStart)
        let fullyDucked = try #require(envelope[startBlock...].firstIndex { $0 < full * Decibels.linear(-11) })
        let complete = Self.ms(fullyDucked * Self.block + Self.block - voiceStart)
        print("lookahead: the duck starts \(String(format: "%.1f", duckStart)) ms and is complete \(String(format: "%.1f", complete)) ms after the voice starts; the voice is heard at 30.0 ms")
        #expect(complete <= 30, "the music is fully ducked before the voice is heard")
    }

    @Test("a signal-activated announcement (non-mixable) interrupts the music; after it, the music resumes by itself")
    func announcementInterrupts() throws {
        var announce = Session.App(name: "announce", category: .playback, channelCount: 1, connect: [try PortPattern("source:announce")])
        announce.activation = .signal
        announce.signal = SignalDetection(threshold: -40, attack: 10, hold: 300, hysteresis: 6)
        let rig = try SignalRig(apps: [announce])
        let take = try rig.cleanTake(playing: Self.voice([(0.5, 0)], lead: 0.3, tail: 3.2), on: "announce", seconds: 4.0,
                                     judged: -0.01...1.35)
        let speaker = take.channels[SignalRig.Channel.speaker1.rawValue]
        let reference = take.channels[SignalRig.Channel.announce.rawValue]
        let begin = try #require(Self.onset(reference, after: 0))
        let end = try #require(reference[begin...].lastIndex { abs($0) >= 0.01 })
        let envelope = Self.envelope(speaker)
        // Interrupted: silent from shortly after the onset (attack, a period, the 20 ms fade) to the end.
        let during = envelope[(begin / Self.block + 50)..<(end / Self.block)]
        #expect(during.allSatisfy { Decibels.level($0) < -90 }, "music silent while the announcement plays: \(Decibels.level(during.max() ?? 0)) dBFS")
        // Resumed (resume: auto) once the announcement has been silent for its 300 ms hold.
        let after = envelope[(end / Self.block + 300 + 60)..<min(envelope.count, end / Self.block + 800)]
        #expect(!after.isEmpty && after.allSatisfy { abs(Decibels.level($0) - Decibels.level(0.5)) < 0.5 }, "music back after the announcement")
        #expect(rig.notifications.contains { if case .policy(.interruption("music", .began, _, _)) = $0 { true } else { false } })
        #expect(rig.notifications.contains { if case .policy(.interruption("music", .ended, true, _)) = $0 { true } else { false } })
        #expect(rig.notifications.contains { if case .policy(.appState("music", .active, _, .autoResume, _)) = $0 { true } else { false } },
                "music active again because it auto-resumed")
    }

    @Test("an OSC app with duckOthers that goes silent releases the duck after unduckAfter, says so, and ducks again when it sounds")
    func unduckAfterSilence() throws {
        var nav = Session.App(name: "nav", category: .playback, channelCount: 1, connect: [try PortPattern("source:nav")])
        nav.options = [.duckOthers, .mixWithOthers]
        nav.unduckAfter = 400
        let rig = try SignalRig(apps: [nav])
        try rig.router.perform(.activate(app: "nav"))
        // At once (the activation's effects are carried out before `perform` returns): a pause
        // here would race the 400 ms unduckAfter on a busy machine.
        #expect(rig.state("music") == "ducked")
        // Silent: the duck is released 400 ms after activation (the level was silent all along).
        try waitFor("the duck to be released", timeout: 2) { rig.state("music") == "active" }
        #expect(rig.state("nav") == "active", "nav stays active")
        #expect(rig.notifications.contains { if case .policy(.duckReleased("nav", true)) = $0 { true } else { false } })
        let level = Signals.peakDecibels(rig.recorder.record(seconds: 0.2).channels[0])
        #expect(abs(level - Double(Decibels.level(0.5))) < 0.5, "music at full level: \(level) dBFS")
        // It speaks again: ducked again.
        rig.play(Self.voice([(1.0, 0)], lead: 0, tail: 1), on: "nav")
        try waitFor("the duck to hold again", timeout: 2) { rig.state("music") == "ducked" }
        #expect(rig.notifications.contains { if case .policy(.duckReleased("nav", false)) = $0 { true } else { false } })
    }
}

/// `/app/<app>/activation` over OSC, on the daemon: set, query, refuse bad values, kept across a
/// restart, and the sound then does the rest.
@Suite("Signal activation over OSC", .serialized)
struct SignalActivationOSCTests {
    @Test("/app/nav/activation signal -30 5 200: answered, shown in /state, refused when wrong, kept after a crash, and nav's sound then ducks music")
    func activationOverOSC() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        rig.play(music: 0.5)
        let reply = try #require(try rig.query("/app/nav/activation", [.string("signal"), .float(-30), .float(5), .float(200)]))
        #expect(reply.path == "/reply")
        #expect(Array(reply.arguments.dropFirst()) == [.string("signal"), .float(-30), .float(5), .float(200), .float(6)])
        #expect(try rig.query("/app/nav/activation")?.arguments.dropFirst().first == .string("signal"))
        #expect(try rig.query("/app/nav/activation", [.string("loud")])?.path == "/error")
        #expect(try rig.query("/app/nav/activation", [.string("signal"), .float(10)])?.path == "/error")
        #expect(try rig.query("/app/nosuch/activation", [.string("signal")])?.path == "/error")
        func nav() throws -> [String: Any] {
            try #require((try rig.settings()["apps"] as? [[String: Any]])?.first { $0["name"] as? String == "nav" })
        }
        #expect(try nav()["activation"] as? String == "signal")
        #expect(try nav()["state"] as? String == "listening")
        // Kept across a crash (the state file, once written), then the sound activates it.
        try waitFor("the state file to keep nav's activation", timeout: 5) {
            rig.savedState()?.apps.first { $0.name == "nav" }?.activation == "signal"
        }
        try rig.killAndRestart()
        #expect(try nav()["activation"] as? String == "signal")
        rig.play(music: 0.5, nav: 0.2)
        try waitFor("nav's sound to activate it", timeout: 3) { (try? nav()["state"] as? String) == "active" }
        #expect(try nav()["activeBecause"] as? String == "signal")
        rig.play(music: 0.5, nav: 0)
        try waitFor("nav's silence to end it after the 200 ms hold", timeout: 3) { (try? nav()["state"] as? String) == "listening" }
    }
}

/// Notifications a router sent, for checks.
final class NotificationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [RouterNotification] = []
    func append(_ notification: RouterNotification) { lock.withLock { items.append(notification) } }
    func contains(where predicate: (RouterNotification) -> Bool) -> Bool { lock.withLock { items.contains(where: predicate) } }
    /// Forgets what came so far (a scene played again is judged on its own notifications).
    func clear() { lock.withLock { items.removeAll() } }
    var all: [RouterNotification] { lock.withLock { items } }
}
