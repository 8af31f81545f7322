import Foundation
import JackRig
import OSCTransport
import Policy
import Testing

/// Scenes and the cue list end to end, on a real jackd: fades measured at the route's sink along
/// each curve, under a duck, at a time tag; stored scenes and the playhead across a kill -9; bad
/// input refused and a broken reload changing nothing. (docs/OSC.md, "Scenes and cues".)
@Suite("Scenes and cues, heard", .serialized)
struct ShowTests {
    /// music from 1.0 to 0.5 over 2 s (the fader curve) and back at once; a quieter scene that
    /// names the recall-safe game; and a cue list, its second cue going on by itself.
    static let show = #"""
        "scenes": {"safe": ["game"], "list": [
          {"name": "full", "apps": {"music": {"volume": 1}, "game": {"volume": 1}}},
          {"name": "half", "fade": 2000, "apps": {"music": {"volume": 0.5}}},
          {"name": "quiet", "fade": 1000, "apps": {"music": {"volume": 0.5}, "game": {"volume": 0.2}}},
          {"name": "lift", "fade": 200, "apps": {"music": {"volume": 0.8}}}
        ]},
        "cues": ["half", "full", {"scene": "lift", "continue": true, "wait": 300}, "half"]
        """#

    static let rate = 48000

    /// One take of the speaker's left channel around `change`: from 0.1 s before it until
    /// `seconds` of frames after it was answered.
    static func take(_ rig: OSCRig, seconds: Double, _ change: () throws -> Void) throws -> Recording {
        let recorder = rig.recorder
        recorder.startRecording()
        try waitFor("the recorder to begin", timeout: 5) { recorder.recordedFrames >= rate / 10 }
        try change()
        let answered = recorder.recordedFrames
        try waitFor("the take", timeout: seconds + 10) { recorder.recordedFrames >= answered + Int(seconds * Double(rate)) }
        return recorder.stopRecording()
    }

    /// Where a take leaves `level` (the fade's first sample), as a sample index and a JACK frame.
    /// A whole cycle of exact silence amid the level is a late graph on PipeWire, which it reports
    /// to no one (`Recording.lateGraphCycles`): no sample of the fade's.
    static func start(of take: Recording, leaving level: Float) -> (index: Int, frame: UInt32)? {
        let samples = take.channels[OSCRig.Channel.speaker1.rawValue]
        let late = take.lateGraphCycles(channel: OSCRig.Channel.speaker1.rawValue)
        guard let index = samples.indices.first(where: { i in abs(samples[i] - level) > level * 2e-4 && !late.contains { $0.contains(i) } }),
              let frame = take.frameTime(at: index) else { return nil }
        return (index, frame)
    }

    /// What spoils a take, whatever the fade did: cycles the router or the recorder missed, and
    /// cycles PipeWire's late graph left silent.
    static func spoilers(_ take: Recording, routerMissed: Int) -> (count: Int, what: String) {
        let late = take.lateGraphCycles(channel: OSCRig.Channel.speaker1.rawValue).count
        return (routerMissed + take.gaps.count + late,
                "\(routerMissed) cycles the router missed, \(take.gaps.count) the recorder missed, \(late) late-graph silent cycles")
    }

    /// The sample heard `seconds` of JACK frames after `frame` (nil: the recorder missed it).
    static func sample(_ take: Recording, _ frame: UInt32, after seconds: Double) -> Float? {
        take.samples(OSCRig.Channel.speaker1.rawValue, fromFrame: frame &+ UInt32(seconds * Double(rate)), frames: 1).first
    }

    static func dB(_ x: Float, _ reference: Float) -> Double { Double(Decibels.level(x / reference)) }

    @Test("a 2 s fade from volume 1.0 to 0.5: the fader curve at -7.5 dB after 1 s, -18.06 dB at the end; linear and equal power at their midpoints; never a step", arguments: [
        (FadeCurve.fader, 20 * log10(0.421875)), (.linear, 20 * log10(0.5625)), (.equalPower, 20 * log10(((1 + 0.015625) / 2).squareRoot())),
    ])
    func curves(curve: FadeCurve, midpoint: Double) throws {
        let rig = try OSCRig(show: Self.show)
        defer { rig.close() }
        rig.play(music: 0.5)
        // A take is judged only when no cycle was missed in it, or when it passes anyway: a cycle
        // the router missed is a step in what the recorder hears, whatever the fade did. Such a
        // take is played again, three at most.
        try Self.judged("curves") { _ in
            #expect(try rig.query("/scene/recall", [.string("full")])?.path == "/reply")
            rig.expectLevel(.speaker1, 0.5)
            let missedBefore = try rig.xruns()
            let take = try Self.take(rig, seconds: 2.3) {
                let reply = try rig.query("/scene/recall", [.string("half"), .float(2000), .string(curve.rawValue)])
                #expect(reply?.arguments == [.string("/scene/recall"), .string("half"), .float(2000)], "\(String(describing: reply))")
            }
            let missed = try rig.xruns() - missedBefore
            var problems: [String] = []
            if let start = Self.start(of: take, leaving: 0.5),
               let middle = Self.sample(take, start.frame, after: 1), let end = Self.sample(take, start.frame, after: 2.05) {
                print("scene fade, \(curve): \(String(format: "%.2f", Self.dB(middle, 0.5))) dB after 1 s (\(String(format: "%.2f", midpoint)) expected), \(String(format: "%.3f", Self.dB(end, 0.5))) dB at the end")
                if !(abs(Self.dB(middle, 0.5) - midpoint) < 1.0) { problems.append("after 1 s: \(Self.dB(middle, 0.5)) dB") }
                if !(abs(Self.dB(end, 0.5) - (-18.06)) < 0.1) { problems.append("at the end: \(Self.dB(end, 0.5)) dB") }
                // The steepest any of these curves gets is under twice the average slope (0.4375 over
                // 96,000 samples): a step would be the whole 0.44 at once.
                let step = Self.largestStep(take, from: max(start.index - 1, 0))
                if !(step < 2 * 0.4375 / 96000) { problems.append("largest step \(step)") }
            } else {
                problems.append("the fade never began, or the recorder missed its midpoint or end")
            }
            return (problems, take, missed)
        }
    }

    /// Plays a take (`attempt`: 1, 2, 3) and judges it: its problems, unless cycles missed or
    /// left silent spoiled it (`spoilers`), when it is played again, three times at most; the
    /// takes played again are printed.
    static func judged(_ name: String, sourceLocation: SourceLocation = #_sourceLocation,
                       _ attempt: (Int) throws -> (problems: [String], take: Recording, routerMissed: Int)) throws {
        var spoiled: [String] = []
        for number in 1...3 {
            let (problems, take, missed) = try attempt(number)
            let (spoilers, what) = Self.spoilers(take, routerMissed: missed)
            if !problems.isEmpty && spoilers > 0 && number < 3 {
                spoiled.append("\(what): \(problems.joined(separator: "; "))")
                continue
            }
            if !spoiled.isEmpty { print("\(name): played again after takes with \(spoiled.joined(separator: " / ")); this one \(what)") }
            #expect(problems.isEmpty, "\(problems.joined(separator: "; ")) (\(what))", sourceLocation: sourceLocation)
            return
        }
    }

    /// The largest step between two samples of the speaker's left channel from `start` on that the
    /// recorder heard one JACK frame apart (a cycle it missed is no step of the signal's).
    static func largestStep(_ take: Recording, from start: Int) -> Float {
        let samples = take.channels[OSCRig.Channel.speaker1.rawValue]
        let cycles = take.cycleStarts
        let late = take.lateGraphCycles(channel: OSCRig.Channel.speaker1.rawValue)
        func heard(_ i: Int) -> Bool { !late.contains { $0.contains(i) } }
        var largest: Float = 0
        for (c, cycle) in cycles.enumerated() {
            let end = c + 1 < cycles.count ? cycles[c + 1].index : samples.count
            var i = max(cycle.index, start)
            while i + 1 < end {
                if heard(i) && heard(i + 1) { largest = max(largest, abs(samples[i + 1] - samples[i])) }
                i += 1
            }
            if c + 1 < cycles.count, end > start, end - 1 >= cycle.index, cycles[c + 1].frameTime == cycle.frameTime &+ UInt32(end - cycle.index),
               heard(end - 1), heard(end) {
                largest = max(largest, abs(samples[end] - samples[end - 1]))
            }
        }
        return largest
    }

    @Test("a recall-safe app keeps its volume through a recall that names it; a scene recalled under a duck fades under it, and the duck releases to the scene's level")
    func safeAndDucked() throws {
        let rig = try OSCRig(show: Self.show)
        defer { rig.close() }
        rig.play(game: 0.5)
        rig.expectLevel(.speaker1, 0.5)
        #expect(try rig.query("/scene/recall", [.string("quiet")])?.path == "/reply")
        try waitFor("quiet's fade to be over", timeout: 5) { (try? rig.query("/scene/current"))??.arguments.last == .int32(0) }
        rig.expectSteady(.speaker1, 0.5, within: 1e-4, "the recall-safe game kept its volume")
        #expect(try rig.query("/app/game/volume")?.arguments.last == .float(1))
        rig.play(music: 0.5)
        #expect(try rig.query("/scene/recall", [.string("full")])?.path == "/reply")
        rig.expectLevel(.speaker1, 0.5)

        // nav ducks the music by the session's 14 dB; the scene fades it to 0.5 (-18 dB) under
        // the duck; nav stops, and the music comes back to the scene's level.
        #expect(try rig.query("/app/nav/activate")?.path == "/reply")
        let duck = Decibels.linear(-14)
        try Self.judged("safeAndDucked") { attempt in
            if attempt > 1 { #expect(try rig.query("/scene/recall", [.string("full")])?.path == "/reply") }
            rig.expectLevel(.speaker1, 0.5 * duck, within: 1e-3)
            let missedBefore = try rig.xruns()
            let take = try Self.take(rig, seconds: 1.2) {
                let reply = try rig.query("/scene/recall", [.string("quiet")])
                #expect(reply?.path == "/reply")
            }
            let missed = try rig.xruns() - missedBefore
            var problems: [String] = []
            if let start = Self.start(of: take, leaving: 0.5 * duck),
               let middle = Self.sample(take, start.frame, after: 0.5), let end = Self.sample(take, start.frame, after: 1.05) {
                if !(abs(Self.dB(middle, 0.5 * duck) - 20 * log10(0.421875)) < 1.0) { problems.append("the fade under the duck, halfway: \(Self.dB(middle, 0.5 * duck)) dB") }
                if !(abs(Self.dB(end, 0.5 * duck) - (-18.06)) < 0.1) { problems.append("at its end, still ducked: \(Self.dB(end, 0.5 * duck)) dB") }
            } else {
                problems.append("the fade never began, or the recorder missed its midpoint or end")
            }
            return (problems, take, missed)
        }
        #expect(try rig.query("/app/nav/deactivate")?.path == "/reply")
        rig.expectLevel(.speaker1, 0.5 * 0.125, within: 1e-4, "the duck released to the scene's level")
    }

    @Test("a recall in a bundle timed 0.5 s ahead starts its fade within one JACK period of the time tag")
    func timeTagged() throws {
        let rig = try OSCRig(show: Self.show)
        defer { rig.close() }
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        try Self.judged("timeTagged") { _ in
            #expect(try ask(client, OSCMessage("/scene/recall", [.string("full")]))?.path == "/reply")
            rig.play(music: 0.5)
            rig.expectLevel(.speaker1, 0.5, within: 1e-4)
            let missedBefore = try rig.xruns()
            rig.recorder.startRecording()
            Thread.sleep(forTimeInterval: 0.1)   // paced: the take starts with 0.1 s before the bundle
            let when = Date().timeIntervalSince1970 + 0.5
            let expectedFrame = rig.recorder.client.frameTime(atMicroseconds: rig.recorder.client.microseconds + 500_000)
            let drift = Date().timeIntervalSince1970 + 0.5 - when
            try client.send(packet: OSCCodec.encodeBundle([OSCMessage("/scene/recall", [.string("half")])], timetag: OSCTimetag(unixTime: when)))
            #expect(try client.receive(timeout: 2) { $0.path == "/reply" || $0.path == "/error" }?.path == "/reply")
            try waitFor("JACK's clock to pass the time tag", timeout: 5) {
                Int32(bitPattern: rig.recorder.client.frameTime(atMicroseconds: rig.recorder.client.microseconds) &- expectedFrame) > Int32(Self.rate / 10)
            }
            let take = rig.recorder.stopRecording()
            let missed = try rig.xruns() - missedBefore
            var problems: [String] = []
            if let start = Self.start(of: take, leaving: 0.5) {
                let error = Int(Int32(bitPattern: start.frame &- expectedFrame)) - Int(drift * Double(Self.rate))
                if abs(error) > 256 { problems.append("the fade began at frame \(start.frame), expected \(expectedFrame): \(error) frames off") }
                // Its first sample is a ramp's first step, not a jump (the fader curve from 1.0
                // to 0.5 over 2 s moves by 8e-6 a sample here).
                let samples = take.channels[OSCRig.Channel.speaker1.rawValue]
                if abs(samples[start.index] - 0.5) > 1e-3 { problems.append("the first sample of the fade is \(samples[start.index])") }
            } else {
                problems.append("the fade never began")
            }
            return (problems, take, missed)
        }
    }

    @Test("stored scenes and the cue list's playhead survive a kill -9; delete brings the file's scene back; GO walks the list, back and goto recall nothing, a cue that continues fires the next by itself")
    func storedAndCues() throws {
        let rig = try OSCRig(osc: #", "admin": ["127.0.0.1/32"]"#, show: Self.show)
        defer { rig.close() }
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        rig.play(music: 0.5)
        #expect(try ask(client, OSCMessage("/app/music/volume", [.float(0.6)]))?.path == "/reply")
        #expect(try ask(client, OSCMessage("/scene/store", [.string("half"), .string("music")]))?.arguments == [.string("/scene/store"), .string("half")])
        #expect(try ask(client, OSCMessage("/scene/store", [.string("snap")]))?.path == "/reply")
        #expect(try ask(client, OSCMessage("/cue/go"))?.arguments == [.string("/cue/go"), .int32(1), .string("half")])
        try waitFor("the saved state") { rig.savedState()?.show?.scenes.count == 2 && rig.savedState()?.show?.next == 2 }

        try rig.killAndRestart()
        let again = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(again, OSCMessage("/scene/list"))?.arguments == [.string("/scene/list")] + ["full", "half", "quiet", "lift", "snap"].map { .string($0) })
        let half = try #require(try ask(again, OSCMessage("/scene/half")))
        #expect(half.arguments.prefix(5) == [.string("/scene/half"), .string("half"), .float(2000), .string("fader"), .int32(1)], "\(half)")
        #expect(try ask(again, OSCMessage("/cue/state"))?.arguments == [.string("/cue/state"), .int32(1), .string("half"), .int32(2), .string("full"), .int32(4)])
        #expect(try ask(again, OSCMessage("/scene/current"))?.arguments == [.string("/scene/current"), .string("half"), .int32(0)])

        // The stored half: music at 0.6, heard once its fade is over.
        #expect(try ask(again, OSCMessage("/app/music/volume", [.float(1)]))?.path == "/reply")
        rig.expectLevel(.speaker1, 0.5)
        #expect(try ask(again, OSCMessage("/scene/recall", [.string("half"), .float(100)]))?.path == "/reply")
        rig.expectLevel(.speaker1, 0.5 * 0.216, within: 1e-4, "the stored scene")
        #expect(try ask(again, OSCMessage("/scene/delete", [.string("half")]))?.path == "/reply")
        #expect(try ask(again, OSCMessage("/scene/recall", [.string("half"), .float(100)]))?.path == "/reply")
        rig.expectLevel(.speaker1, 0.5 * 0.125, within: 1e-4, "the file's scene again")

        // The playhead moves without recalling: nothing is heard to change.
        #expect(try ask(again, OSCMessage("/cue/back"))?.arguments == [.string("/cue/back"), .int32(1), .string("half")])
        #expect(try ask(again, OSCMessage("/cue/goto", [.string("lift")]))?.arguments == [.string("/cue/goto"), .int32(3), .string("lift")])
        #expect(try ask(again, OSCMessage("/cue/goto", [.int32(2)]))?.arguments == [.string("/cue/goto"), .int32(2), .string("full")])
        rig.expectSteady(.speaker1, 0.5 * 0.125, within: 1e-4, "nothing recalled")

        // GO: full; GO: lift (200 ms), which goes on by itself to half 300 ms after its fade.
        let watcher = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(watcher, OSCMessage("/subscribe"))?.path == "/reply")
        #expect(try ask(again, OSCMessage("/cue/go"))?.arguments == [.string("/cue/go"), .int32(2), .string("full")])
        rig.expectLevel(.speaker1, 0.5)
        let liftAt = Date()
        #expect(try ask(again, OSCMessage("/cue/go"))?.arguments == [.string("/cue/go"), .int32(3), .string("lift")])
        let lift = Decibels.linear(sliderPosition: 0.8)
        rig.expectLevel(.speaker1, 0.5 * lift, within: 1e-4, "lift heard")
        let fired = try watcher.receive(timeout: 5) { $0.path == "/duckrouter/cue" && $0.arguments.first == .int32(4) }
        let after = Date().timeIntervalSince(liftAt)
        #expect(fired?.arguments == [.int32(4), .string("half")], "the cue after lift fired by itself")
        // lift's fade (200 ms), then its wait (300 ms), counted from when the router took the GO
        // (after liftAt): never sooner.
        #expect(after >= 0.5 && after < 3, "the next cue followed \(after) s after lift")
        rig.expectLevel(.speaker1, 0.5 * 0.125, within: 1e-4, timeout: 5, "and half is heard")
        let done = try watcher.receive(timeout: 5) { $0.path == "/duckrouter/scene" && $0.arguments == [.string("half"), .string("done")] }
        #expect(done != nil, "half's fade was said to be done")
        #expect(try ask(again, OSCMessage("/cue/state"))?.arguments == [.string("/cue/state"), .int32(4), .string("half"), .int32(0), .string(""), .int32(4)])
        try waitFor("the playhead saved") { rig.savedState()?.show?.next == 5 }
        try rig.killAndRestart()
        let third = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(third, OSCMessage("/cue/state"))?.arguments == [.string("/cue/state"), .int32(4), .string("half"), .int32(0), .string(""), .int32(4)])
        let end = try ask(third, OSCMessage("/cue/go"))
        #expect(end?.path == "/error" && end?.arguments.dropFirst().first == .int32(-9), "\(String(describing: end))")
    }

    @Test("bad input changes nothing: an unknown scene or cue (-9), a fade NaN or negative and an unknown curve (-2), storing without the right (-5); a broken scenes section on SIGHUP is refused with its line and the router keeps the show it had")
    func badInput() throws {
        let rig = try OSCRig(show: Self.show)
        defer { rig.close() }
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        rig.play(music: 0.5)
        rig.expectLevel(.speaker1, 0.5)
        let before = try rig.settings()["show"] as? [String: Any]
        let cases: [(OSCMessage, Int32)] = [
            (OSCMessage("/scene/recall", [.string("ghost")]), -9),
            (OSCMessage("/scene/recall", [.string("half"), .float(.nan)]), -2),
            (OSCMessage("/scene/recall", [.string("half"), .float(-5)]), -2),
            (OSCMessage("/scene/recall", [.string("half"), .float(100), .string("exponential")]), -2),
            (OSCMessage("/scene/recall", []), -2),
            (OSCMessage("/scene/ghost"), -9),
            (OSCMessage("/cue/goto", [.int32(9)]), -9),
            (OSCMessage("/cue/goto", [.int32(0)]), -9),
            (OSCMessage("/cue/goto", [.string("ghost")]), -9),
            (OSCMessage("/scene/store", [.string("mine")]), -5),
            (OSCMessage("/scene/delete", [.string("half")]), -5),
        ]
        for (message, code) in cases {
            let answer = try ask(client, message)
            #expect(answer?.path == "/error" && answer?.arguments.dropFirst().first == .int32(code), "\(message): \(String(describing: answer))")
        }
        rig.expectSteady(.speaker1, 0.5, within: 1e-5)
        #expect(NSDictionary(dictionary: try #require(try rig.settings()["show"] as? [String: Any])) == NSDictionary(dictionary: try #require(before)))

        // duckctl speaks the same paths.
        func duckctl(_ arguments: [String]) throws -> CommandOutput { try DuckctlTests.duckctl(["--port", "\(rig.port)"] + arguments) }
        #expect(try duckctl(["scene", "list"]).stdout == "full\nhalf\nquiet\nlift\n")
        let state = try duckctl(["cue", "state"])
        #expect(state.status == 0 && state.stdout == "last none · next 1 half · 4 cues\n", "\(state)")
        let recall = try duckctl(["scene", "recall", "quiet", "--fade", "50", "--curve", "linear"])
        #expect(recall.status == 0 && recall.stdout == "quiet 50.0\n", "\(recall)")
        rig.expectLevel(.speaker1, 0.0625, within: 1e-4)
        let unknown = try duckctl(["scene", "recall", "ghost"])
        #expect(unknown.status == 1 && unknown.stderr.contains("-9"), "\(unknown)")
        let curve = try duckctl(["scene", "recall", "quiet", "--fade", "50", "--curve", "log"])
        #expect(curve.status == 64, "\(curve)")
        #expect(try rig.query("/scene/recall", [.string("full")])?.path == "/reply")
        rig.expectLevel(.speaker1, 0.5)

        // A broken scenes section: refused with its line, the show as it was.
        let original = try String(contentsOf: rig.sessionFile, encoding: .utf8)
        let broken = original.replacingOccurrences(of: #""fade": 1000"#, with: #""fade": -1000"#)
        #expect(broken != original)
        try broken.write(to: rig.sessionFile, atomically: true, encoding: .utf8)
        kill(rig.daemon.processIdentifier, SIGHUP)
        try waitFor("the refusal in the log") { rig.log.contains("reload refused") }
        #expect(rig.log.contains(".json:5 scenes.list[2].fade: expected a number from 0 to 600000 milliseconds, got -1000"), "\(rig.log.suffix(2000))")
        #expect(rig.daemon.isRunning)
        #expect(try ask(client, OSCMessage("/scene/quiet"))?.arguments.prefix(3) == [.string("/scene/quiet"), .string("quiet"), .float(1000)])
    }

    @Test("the control page: GO, a scene button and the space bar are heard at the sink; the cue list shows the last and the next cue; screenshots at 390×844 and 1280×800")
    func page() throws {
        let rig = try OSCRig(show: Self.show, http: true)
        defer { rig.close() }
        let key = try #require(rig.pageKey())
        let browser = try JSONLineScript("control_page.py", ["http://127.0.0.1:\(rig.httpPort)/ui/#key=\(key)"])
        let opened = try #require(browser.call(["open", 1280, 800]))
        #expect(opened["live"] as? Bool == true, "\(opened)")
        rig.play(music: 0.5)
        rig.expectLevel(.speaker1, 0.5)
        #expect(browser.call(["wait_text", "#cue-next", "1 · half", 3])?["found"] as? Bool == true, "the next cue shown")
        #expect(browser.call(["attr", "#show", "hidden"])?["value"] is NSNull, "the show is shown")

        // GO: cue 1, half, faded over 2 s.
        _ = browser.call(["click", "#go"])
        rig.expectLevel(.speaker1, 0.5 * 0.125, within: 1e-4, timeout: 5, "GO: half")
        #expect(browser.call(["wait_text", "#cue-current", "1 · half", 3])?["found"] as? Bool == true)
        #expect(browser.call(["wait_text", "#cue-next", "2 · full", 3])?["found"] as? Bool == true)
        #expect(browser.call(["wait_attr", "#cue-list li[data-cue='2']", "class", "next", 3])?["found"] as? Bool == true)
        #expect(browser.call(["wait_attr", "[data-scene=half]", "aria-pressed", "true", 3])?["found"] as? Bool == true)

        // A scene button: lift, music to 0.8 in 200 ms.
        _ = browser.call(["click", "[data-scene=lift]"])
        rig.expectLevel(.speaker1, 0.5 * Decibels.linear(sliderPosition: 0.8), within: 1e-4, "the lift button")
        #expect(browser.call(["wait_attr", "[data-scene=lift]", "aria-pressed", "true", 3])?["found"] as? Bool == true)

        // Back, then the space bar with Back focused (clicked last): the space is GO, cue 1 (half)
        // heard; Back does not take it too (it would only step back, and nothing would be heard).
        _ = browser.call(["click", "#cue-back"])
        #expect(browser.call(["wait_text", "#cue-next", "1 · half", 3])?["found"] as? Bool == true)
        #expect(browser.call(["focused"])?["selector"] as? String == "#cue-back")
        _ = browser.call(["key", "space"])
        rig.expectLevel(.speaker1, 0.5 * 0.125, within: 1e-4, timeout: 5, "space: half")
        #expect(browser.call(["wait_text", "#cue-next", "2 · full", 3])?["found"] as? Bool == true)

        // A cue's button moves the playhead and recalls nothing.
        _ = browser.call(["click", "#cue-list li[data-cue='4'] button"])
        #expect(browser.call(["wait_text", "#cue-next", "4 · half", 3])?["found"] as? Bool == true)
        rig.expectSteady(.speaker1, 0.5 * 0.125, within: 1e-4)

        // A double click on GO fires one cue: 2 (full), not 3 (lift) after it.
        _ = browser.call(["click", "#cue-list li[data-cue='2'] button"])
        #expect(browser.call(["wait_text", "#cue-next", "2 · full", 3])?["found"] as? Bool == true)
        _ = browser.call(["double_click", "#go"])
        rig.expectLevel(.speaker1, 0.5, within: 1e-4, timeout: 5, "GO: full")
        #expect(browser.call(["wait_text", "#cue-next", "3 · lift", 3])?["found"] as? Bool == true)
        rig.expectSteady(.speaker1, 0.5, within: 1e-4)
        #expect(try rig.query("/cue/state")?.arguments.prefix(3) == [.string("/cue/state"), .int32(2), .string("full")], "one cue fired")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-show-page")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (width, height) in [(390, 844), (1280, 800)] {
            _ = browser.call(["size", width, height])
            let path = folder.appendingPathComponent("show-\(width)x\(height).png").path
            #expect(browser.call(["screenshot", path])?["saved"] as? String == path)
        }
        let errors = browser.call(["console"])?["errors"] as? [String] ?? ["no answer"]
        #expect(errors.isEmpty, "\(errors)")
        _ = browser.call(["quit"])
    }

    @Test("a router whose session has no scenes and no cues: recalls and GO are -9, the list is empty")
    func noShow() throws {
        let plain = try OSCRig()
        defer { plain.close() }
        let other = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: plain.port))
        for message in [OSCMessage("/scene/recall", [.string("half")]), OSCMessage("/cue/go")] {
            let answer = try ask(other, message)
            #expect(answer?.path == "/error" && answer?.arguments.dropFirst().first == .int32(-9), "\(message): \(String(describing: answer))")
        }
        #expect(try ask(other, OSCMessage("/scene/list"))?.arguments == [.string("/scene/list")])
    }
}
