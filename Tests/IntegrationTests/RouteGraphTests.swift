import Foundation
import JackRig
import OSCTransport
import Policy
import Testing

/// Issue 5: routes follow the JACK graph. A device is a JACK client whose ports appear and vanish;
/// the daemon sees it through port registration, with no OSC from anyone.
@Suite("Routes that follow the JACK graph", .serialized)
struct RouteGraphTests {
    /// The speaker is the recorder; the headphones are a client `usbphones` the test plugs in.
    static let routes = """
        {"name": "speaker", "ports": ["recorder:speaker_1", "recorder:speaker_2"]},
        {"name": "headphones", "ports": ["usbphones:playback_1", "usbphones:playback_2"], "private": true}
        """

    @Test("usbphones plugged in (its client running 8 ms after its ports appear): music moves there within 100 ms without a jump, from its first cycle (newDeviceAvailable); pulled: music interrupted (routeDisconnected), the speaker silent in every period, oldDeviceUnavailable")
    func headphonesPluggedAndPulled() throws {
        let rig = try OSCRig(routes: Self.routes)
        defer { rig.close() }
        let rate = rig.server.sampleRate
        rig.play(music: 0.5)
        let watcher = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(watcher, OSCMessage("/subscribe"))?.path == "/reply")
        rig.expectLevel(.speaker1, 0.5, within: 2e-3, "music on the speaker while there are no headphones")
        let routes = try #require(rig.settings()["routes"] as? [[String: Any]])
        #expect(routes.map { $0["available"] as? Bool } == [true, false], "the headphones' ports do not exist yet")

        // Plug in.
        let xrunsBefore = try rig.xruns()
        rig.recorder.startRecording()
        Thread.sleep(forTimeInterval: 0.1)
        // A device's ports exist before its client runs (and on PipeWire a connection carries
        // audio a cycle or two after it is made): the fade in must not have begun before. On
        // PipeWire, that is (the PipeWire pass of make test); jackd shows other clients a
        // client's ports only once it is active.
        let phones = try TestClient(name: "usbphones", server: rig.server.name, inputs: ["playback_1", "playback_2"],
                                    activateAfter: 0.008, recordingFromFirstCycle: true)
        defer { phones.close() }
        let plugged = try watcher.receive(timeout: 2) { $0.path == "/duckrouter/route" }
        #expect(plugged?.arguments == [.string("newDeviceAvailable"), .string("headphones"), .string("speaker")])
        Thread.sleep(forTimeInterval: 0.4)
        let heard = phones.stopRecording()
        let left = rig.recorder.stopRecording()
        let arrived = heard.channels[0].firstIndex { abs($0 - 0.5) < 1e-4 }
        #expect(arrived.map { $0 <= rate / 10 } == true,
                "music at full level at usbphones \(arrived.map { "\(Double($0) * 1000 / Double(rate)) ms" } ?? "never") after it appeared")
        // On PipeWire, whole cycles of exact silence amid the music (a late graph, below) are
        // left out here too: a PipeWire pass failed this check on one such cycle in its last 0.1 s.
        let lateOnRight = heard.lateGraphCycles(channel: 1)
        let lastTenth = ((heard.channels[1].count - rate / 10)..<heard.channels[1].count)
            .filter { index in !lateOnRight.contains { $0.contains(index) } }.map { heard.channels[1][$0] }
        #expect(!lastTenth.isEmpty && lastTenth.allSatisfy { abs($0 - 0.5) < 1e-4 }, "both channels")
        #expect(left.channels[0].suffix(rate / 10).allSatisfy { abs($0) < 1e-6 }, "and no longer at the speaker")
        // A crossfade over the 20 ms fade: no sample moves more than the ramp allows. After an
        // xrun a recorder may have read a stale buffer for a cycle, which is not the router's
        // doing: then steps across cycle boundaries are left out (as in RouterAudioTests).
        let xruns = try rig.xruns() - xrunsBefore
        let allowed = Float(0.5) / (Float(rate) * 0.020) * 1.01
        // On PipeWire a client can read a whole cycle of silence where the graph ran late, with
        // neither it nor the router missing a cycle by the frame clock (PipeWire tells no one):
        // the edges of such a cycle (exact zeros amid the music) are left out there, and counted.
        let lateCycles = heard.lateGraphCycles(channel: 0)
        if !lateCycles.isEmpty { print("RouteGraphTests: usbphones read \(lateCycles.count) whole cycle(s) of silence amid the music") }
        let speakerStep = Signals.largestStepAt(left.channels[0], excluding: xruns == 0 ? left.gaps : left.cycleStarts.map(\.index))
        // From silence before the device's first sample (which no xrun excuses).
        let phonesStep = Signals.largestStepAt([0] + heard.channels[0],
                                               excluding: ((xruns == 0 ? heard.gaps : heard.cycleStarts.dropFirst().map(\.index)) + lateCycles.flatMap { [$0.lowerBound, $0.upperBound] }).map { $0 + 1 })
        #expect(speakerStep.size <= allowed && phonesStep.size <= allowed,
                "largest steps: speaker \(speakerStep.size) at sample \(speakerStep.index - 1)→\(speakerStep.index) of \(left.channels[0].count), usbphones \(phonesStep.size) at sample \(phonesStep.index - 2)→\(phonesStep.index - 1) (-1: before its first); allowed \(allowed) (\(xruns) xruns; usbphones' cycles start at \(heard.cycleStarts.prefix(4).map(\.index)))")

        // Pull out.
        rig.recorder.startRecording()
        Thread.sleep(forTimeInterval: 0.1)
        phones.close()
        let interrupted = try watcher.receive(timeout: 2) { $0.path == "/duckrouter/interruption" && $0.arguments.first == .string("music") }
        #expect(interrupted?.arguments == [.string("music"), .string("began"), .int32(0), .string("routeDisconnected")])
        let pulled = try watcher.receive(timeout: 2) { $0.path == "/duckrouter/route" }
        #expect(pulled?.arguments == [.string("oldDeviceUnavailable"), .string("speaker"), .string("headphones")])
        Thread.sleep(forTimeInterval: 0.4)
        let after = rig.recorder.stopRecording()
        let loudest = max(after.channels[0].map(abs).max() ?? 1, after.channels[1].map(abs).max() ?? 1)
        #expect(loudest < 3.2e-5, "the speaker stays below -90 dBFS in every period: peak \(Decibels.level(loudest)) dBFS")
        let music = try #require((rig.settings()["apps"] as? [[String: Any]])?.first { $0["name"] as? String == "music" })
        #expect(music["state"] as? String == "interrupted" && music["interruptedBy"] as? String == "routeDisconnected:headphones")

        // Only the app itself (or a person) brings it back: on the speaker.
        #expect(try ask(watcher, OSCMessage("/app/music/activate"))?.path == "/reply")
        rig.expectLevel(.speaker1, 0.5, within: 2e-3)
    }

    @Test("/route/<route>/available speaks for devices JACK cannot see; a route whose ports are missing stays unavailable")
    func availabilityOverOSC() throws {
        let rig = try OSCRig(routes: Self.routes)
        defer { rig.close() }
        rig.play(music: 0.5)
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(client, OSCMessage("/route/headphones/available", [.int32(1)]))?.arguments
                == [.string("/route/headphones/available"), .int32(0)], "its ports are missing")
        let phones = try TestClient(name: "usbphones", server: rig.server.name, inputs: ["playback_1", "playback_2"])
        defer { phones.close() }
        try waitFor("the headphones to become current") {
            (try? ask(client, OSCMessage("/route/select")))??.arguments.last == .string("headphones")
        }
        // Someone says the speaker is off (an amplifier JACK cannot see): the headphones stay;
        // pulling them then leaves no route at all.
        #expect(try ask(client, OSCMessage("/route/speaker/available", [.int32(0)]))?.arguments
                == [.string("/route/speaker/available"), .int32(0)])
        phones.close()
        try waitFor("no route") { (try? rig.settings()["route"] as? String) == nil }
        #expect(try ask(client, OSCMessage("/route/speaker/available", [.int32(1)]))?.arguments
                == [.string("/route/speaker/available"), .int32(1)])
        #expect(try rig.settings()["route"] as? String == "speaker")
    }

    @Test("the system volume is remembered per route and restored when that route is current again")
    func volumePerRoute() throws {
        let rig = try OSCRig()   // speaker and headphones, both present (the recorder)
        defer { rig.close() }
        rig.play(music: 0.5)
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(client, OSCMessage("/system/volume", [.float(0.8)]))?.arguments == [.string("/system/volume"), .float(0.8), .string("speaker")])
        _ = try ask(client, OSCMessage("/route/select", [.string("headphones")]))
        #expect(try ask(client, OSCMessage("/system/volume", [.float(0.25)]))?.arguments == [.string("/system/volume"), .float(0.25), .string("headphones")])
        rig.expectLevel(.phones1, 0.5 * Decibels.linear(sliderPosition: 0.25), within: 2e-3)
        _ = try ask(client, OSCMessage("/route/select", [.string("speaker")]))
        #expect(try ask(client, OSCMessage("/system/volume"))?.arguments == [.string("/system/volume"), .float(0.8), .string("speaker")])
        rig.expectLevel(.speaker1, 0.5 * Decibels.linear(sliderPosition: 0.8), within: 2e-3)
        _ = try ask(client, OSCMessage("/route/select", [.string("headphones")]))
        rig.expectLevel(.phones1, 0.5 * Decibels.linear(sliderPosition: 0.25), within: 2e-3)
    }

    @Test("a multiRoute app plays channel 1 to the headphones and channel 2 to the speaker at once, by its channel map; others follow the current route")
    func multiRoute() throws {
        let dj = """
            {"name": "dj", "category": "multiRoute", "options": ["mixWithOthers"], "connect": ["source:extra_[LR]"], "active": true,
             "channelmap": [[1, "headphones:1"], [1, "headphones:2"], [2, "speaker:1"], [2, "speaker:2"]]}
            """
        let rig = try OSCRig(apps: dj)
        defer { rig.close() }
        rig.play(music: 0.1, extra: 0)
        rig.source.setSignal([0.3], output: 5)   // extra_L: the cue
        rig.source.setSignal([0.6], output: 6)   // extra_R: the main mix
        let channels: [OSCRig.Channel] = [.phones1, .phones2, .speaker1, .speaker2]
        func expectLevels(_ expected: [Float], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let measured = rig.levels(channels, reaching: expected)
            #expect(zip(measured, expected).allSatisfy { abs($0 - $1) < 2e-3 }, "\(what): measured \(measured), expected \(expected)",
                    sourceLocation: sourceLocation)
        }
        // The cue on both headphone channels, the main mix (and music, on the current route) on the speaker.
        expectLevels([0.3, 0.3, 0.7, 0.7], "session map")

        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(client, OSCMessage("/app/dj/channelmap"))?.arguments == [.string("/app/dj/channelmap"),
                .int32(1), .string("headphones:1"), .int32(1), .string("headphones:2"), .int32(2), .string("speaker:1"), .int32(2), .string("speaker:2")])
        #expect(try ask(client, OSCMessage("/app/dj/channelmap", [.int32(2), .string("headphones:1")]))?.path == "/reply")
        expectLevels([0.6, 0, 0.1, 0.1], "channel 2 to the left headphone only")
        #expect(try ask(client, OSCMessage("/app/dj/channelmap", [.string("default")]))?.path == "/reply")
        expectLevels([0.3, 0.6, 0.4, 0.7], "every channel to every route")

        // Refused, and nothing changes: a map for an app that is not multiRoute, an unknown
        // route, a channel the route does not have.
        let refusals: [(OSCMessage, Int32)] = [
            (OSCMessage("/app/music/channelmap", [.int32(1), .string("speaker:1")]), -2),
            (OSCMessage("/app/dj/channelmap", [.int32(1), .string("hdmi:1")]), -4),
            (OSCMessage("/app/dj/channelmap", [.int32(1), .string("speaker:3")]), -2),
            (OSCMessage("/app/dj/channelmap", [.int32(3), .string("speaker:1")]), -2),
            (OSCMessage("/app/dj/channelmap", [.int32(1)]), -2),
        ]
        for (message, code) in refusals {
            let answer = try ask(client, message)
            #expect(answer?.path == "/error" && answer?.arguments.dropFirst().first == .int32(code), "\(message): \(String(describing: answer))")
        }
        for (channel, level) in zip(channels, [Float(0.3), 0.6, 0.4, 0.7]) { rig.expectSteady(channel, level, "unchanged") }
    }

    @Test("a record app's capture ports carry the input only while it is active; after an outside interruption they stay silent until the app activates again, even when it resumes by itself")
    func recordInput() throws {
        let rec = """
            {"name": "rec", "category": "record", "channels": 1, "resume": "auto"}
            """
        let rig = try OSCRig(apps: rec, input: ["source:extra_L"])
        defer { rig.close() }
        let taker = try TestClient(name: "taker", server: rig.server.name, inputs: ["in_1"])
        defer { taker.close() }
        try taker.connect("duckrouter:rec_capture_1", to: "taker:in_1")
        rig.source.setSignal([0.4], output: 5)   // extra_L: the microphone
        /// What the capture port carries once every sample of a 50 ms window is `expected`
        /// (waited for, up to 3 s), or over a plain `window` (for "stays silent").
        func captured(reaching expected: Float? = nil, window: Double = 0.05) -> Float {
            let deadline = Date().addingTimeInterval(3)
            while true {
                let take = taker.record(seconds: window).channels[0]
                let peak = take.map(abs).max() ?? .nan
                if expected == nil || take.allSatisfy({ abs($0 - expected!) < 1e-6 }) || Date() >= deadline { return peak }
            }
        }
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        func send(_ path: String, _ arguments: [OSCArgument] = []) throws {
            let answer = try ask(client, OSCMessage(path, arguments))
            #expect(answer?.path == "/reply", "\(path): \(String(describing: answer))")
        }
        #expect(captured(window: 0.3) == 0, "inactive: silence")
        try send("/app/rec/activate")
        #expect(abs(captured(reaching: 0.4) - 0.4) < 1e-6, "active: the input, exactly")
        try send("/system/interruption/begin", [.string("phone")])
        #expect(captured(reaching: 0) == 0, "interrupted: silence")
        try send("/system/interruption/end", [.string("phone"), .int32(1)])
        func recState() -> String? {
            ((try? rig.settings()["apps"] as? [[String: Any]]) ?? nil)?.first { $0["name"] as? String == "rec" }?["state"] as? String
        }
        try waitFor("rec to resume by itself (resume auto)") { recState() == "active" }
        #expect(captured(window: 0.3) == 0, "but the input stays closed")
        try send("/app/rec/activate")
        #expect(abs(captured(reaching: 0.4) - 0.4) < 1e-6, "until the app activates again")
        try send("/app/rec/deactivate")
        #expect(captured(reaching: 0) == 0)
    }

    @Test("patchbay rules: a plain JACK client named by a connect pattern is connected when it starts and again when it restarts, a hand-made connection survives, an exclusive app keeps only its own; ports carry pretty names")
    func patchbay() throws {
        let apps = """
            {"name": "synth", "category": "ambient", "connect": ["tone:out_[12]"], "active": true},
            {"name": "strict", "category": "ambient", "connect": ["tone:out_1"], "exclusive": true}
            """
        let rig = try OSCRig(apps: apps)
        defer { rig.close() }
        let observer = rig.recorder.client
        func sources(_ port: String) -> Set<String> { Set(observer.connections(of: "duckrouter:\(port)")) }

        var tone = try TestClient(name: "tone", server: rig.server.name, outputs: ["out_1", "out_2"])
        try waitFor("the tone generator to be connected when it starts") {
            sources("synth_in_1") == ["tone:out_1"] && sources("synth_in_2") == ["tone:out_2"] && sources("strict_in_1") == ["tone:out_1"]
        }
        // A person patches more by hand. The router says when it undoes a connection to an
        // exclusive app: waiting for that line (not only for the port to show none) keeps the
        // check from passing before the hand-made connection existed at all (PipeWire shows
        // connections to other clients a little later than jackd).
        try rig.source.connect("source:extra_L", to: "duckrouter:synth_in_1")
        try rig.source.connect("source:extra_R", to: "duckrouter:strict_in_1")
        try waitFor("the exclusive app to drop the hand-made connection") {
            rig.log.split(separator: "\n").contains { $0.contains("removed a connection to an exclusive app") && $0.contains("source:extra_R") }
                && sources("strict_in_1") == ["tone:out_1"] && sources("synth_in_1") == ["tone:out_1", "source:extra_L"]
        }
        #expect(sources("synth_in_1") == ["tone:out_1", "source:extra_L"], "kept on the app that is not exclusive")

        // The tone generator quits and starts again.
        tone.close()
        try waitFor("its connections to go") { sources("synth_in_1") == ["source:extra_L"] }
        tone = try TestClient(name: "tone", server: rig.server.name, outputs: ["out_1", "out_2"])
        defer { tone.close() }
        try waitFor("the tone generator to be connected again when it restarts") {
            sources("synth_in_1") == ["tone:out_1", "source:extra_L"] && sources("synth_in_2") == ["tone:out_2"]
                && sources("strict_in_1") == ["tone:out_1"]
        }
        // And its audio arrives: synth (ambient, active) plays 0.2 on the speaker.
        tone.setSignal([0.2], output: 0)
        tone.setSignal([0.2], output: 1)
        rig.expectLevel(.speaker2, 0.2, within: 2e-3)

        #expect(observer.prettyName(of: "duckrouter:synth_in_1") == "synth L")
        #expect(observer.prettyName(of: "duckrouter:synth_in_2") == "synth R")
        #expect(observer.prettyName(of: "duckrouter:nav_in_1") == "nav")
        #expect(observer.prettyName(of: "duckrouter:headphones_out_2") == "headphones R")
    }
}
