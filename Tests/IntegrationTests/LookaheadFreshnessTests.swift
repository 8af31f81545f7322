import Foundation
import JackHost
import JackRig
import Policy
import RouterCore
import SessionStore
import Testing

/// Issue 15, defect 4: a look-ahead route's delay lines never replay audio from before a change.
@Suite("Look-ahead routes never replay old audio", .serialized)
struct LookaheadFreshnessTests {
    static func session() -> Session {
        var session = ControlPlaneTests.Bench.session(apps: [])
        session.routes[0].lookahead = 30
        return session
    }

    /// The largest |sample| the speaker carries over `seconds`.
    static func loudest(_ bench: ControlPlaneTests.Bench, seconds: Double) -> Float {
        let take = bench.recorder.record(seconds: seconds)
        return take.channels.flatMap { $0 }.map(abs).max() ?? 0
    }

    @Test("a new voice on the slot of one removed a moment ago starts from silence, not from the old voice's last 30 ms")
    func reusedSlot() throws {
        let bench = try ControlPlaneTests.Bench(session: Self.session())
        let router = try #require(bench.router)
        var voice = AppConfiguration(name: "v1", category: .playback, options: [.mixWithOthers])
        voice.activation = .signal
        bench.source.setSignal(Signals.dc(0.5), output: 0)
        try router.register(voice, channelCount: 1, connect: [try PortPattern("source:out_1")])
        try waitFor("v1 to hear itself and activate") { router.policyState.app("v1")?.isActive == true }
        #expect(Self.loudest(bench, seconds: 0.2) > 0.4, "v1 is heard")
        // v1 goes while it still sounds (its delay line full of 0.5 to the end); once its ports are
        // gone its slot is free for the next voice, which listens to a silent source.
        try router.perform(.unregister(app: "v1"))
        try waitFor("v1's ports to go", timeout: 3) { !bench.portExists("duckrouter:v1_in_1") }
        voice.name = "v2"
        try router.register(voice, channelCount: 1, connect: [try PortPattern("source:out_2")])
        try waitFor("v2's port to be connected") { bench.source.client.connections(of: "source:out_2").contains("duckrouter:v2_in_1") }
        try router.perform(.activate(app: "v2"))
        #expect(Self.loudest(bench, seconds: 0.3) < 1e-6, "v2 is silent: nothing of v1 may come back")
    }

    @Test("a voice switched from signal to osc activation and back starts its delay afresh: what it said before is not heard again")
    func activationSwitch() throws {
        var mic = Session.App(name: "mic", category: .playback, channelCount: 1, connect: [try PortPattern("source:out_1")])
        mic.options = [.mixWithOthers]
        mic.activation = .signal
        var session = Self.session()
        session.apps = [mic]
        let bench = try ControlPlaneTests.Bench(session: session)
        let router = try #require(bench.router)
        bench.source.setSignal(Signals.dc(0.5), output: 0)
        try waitFor("the mic to hear itself and activate") { router.policyState.app("mic")?.isActive == true }
        try router.perform(.activate(app: "mic"))   // a person's activation: it stays active in silence
        #expect(Self.loudest(bench, seconds: 0.2) > 0.4)
        // Heard at once for a while, then silent, then delayed again.
        try router.perform(.setActivation(app: "mic", .osc, nil))
        Thread.sleep(forTimeInterval: 0.1)
        bench.source.setSignal(Signals.dc(0), output: 0)
        Thread.sleep(forTimeInterval: 0.1)
        try router.perform(.setActivation(app: "mic", .signal, nil))
        #expect(router.policyState.app("mic")?.isActive == true)
        #expect(Self.loudest(bench, seconds: 0.3) < 1e-6, "the delayed path must not replay the 0.5 it held from before")
    }

    @Test("a switch from heard-at-once to heard-late crossfades: the voice goes on without a step")
    func switchCrossfades() throws {
        var mic = Session.App(name: "mic", category: .playback, channelCount: 1, connect: [try PortPattern("source:out_1")])
        mic.options = [.mixWithOthers]
        mic.startsActive = true
        var session = Self.session()
        session.apps = [mic]
        // A cycle the router misses (PipeWire's graph ran late) is a step to silence that says
        // nothing of the crossfade: the samples around each one the router's recentGaps locate
        // are left out, as are the recorder's own gaps and a whole cycle of exact silence amid
        // sound on PipeWire (its late graph, reported to no one: `Recording.lateGraphCycles`). A
        // take with a missed cycle that cannot be located, a late-graph cycle or an xrun is played
        // again (five takes at most; the last is judged anyway).
        let period = 256
        for take in 1...5 {
            let bench = try ControlPlaneTests.Bench(session: session)
            let router = try #require(bench.router)
            bench.source.setSignal(Signals.dc(0.5), output: 0)
            try waitFor("the mic's port to be connected") { bench.source.client.connections(of: "source:out_1").contains("duckrouter:mic_in_1") }
            Thread.sleep(forTimeInterval: 0.1)
            let before = router.status()
            bench.recorder.startRecording()
            Thread.sleep(forTimeInterval: 0.1)
            try router.perform(.setActivation(app: "mic", .signal, nil))
            Thread.sleep(forTimeInterval: 0.2)
            let recording = bench.recorder.stopRecording()
            let after = router.status()
            let out = recording.channels[0]
            let xruns = after.xruns - before.xruns, missed = Int(after.missedCycles - before.missedCycles)
            let routerGaps = after.recentGaps.map { ($0.firstFrame, $0.frames) }
            let late = recording.lateGraphCycles(channel: 0)
            let touched = recording.touchedByMissedCycles(others: routerGaps, margin: period) + late
            let located = recording.cyclesMissed(within: routerGaps, period: period)
            let clean = xruns == 0 && located >= missed && late.isEmpty
            let what = "take \(take): \(xruns) xruns, \(missed) cycles the router missed (\(located) located), \(recording.gaps.count) the recorder missed, \(late.count) late-graph silent cycles"
            if !clean && take < 5 {
                print("switchCrossfades: played again after \(what)")
                continue
            }
            if missed + recording.gaps.count + late.count > 0 { print("switchCrossfades: judged \(what)") }
            // The undelayed path fades out over the 20 ms ramp while the delayed one (silent for
            // its first 30 ms, then 0.5) fades in: at most one ramp step at a time, never a jump.
            let allowed = Float(0.5) / Float(48000 * 20 / 1000)
            let gaps = Set(recording.gaps)
            var step: (size: Float, index: Int) = (0, 0)
            for i in 1..<out.count where !gaps.contains(i) && !touched.contains(where: { $0.contains(i) || $0.contains(i - 1) }) {
                let size = abs(out[i] - out[i - 1])
                if size > step.size { step = (size, i) }
            }
            #expect(step.size <= allowed * 1.01 + 1e-6, "a step of \(step.size) at sample \(step.index) of \(out.count); \(what)")
            #expect(out.min()! < 1e-3, "the crossfade passed through the delay's silence")
            #expect(abs(out.last! - 0.5) < 1e-6, "the voice is heard again, late")
            return
        }
    }
}
