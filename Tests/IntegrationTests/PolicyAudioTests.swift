import Foundation
import JackRig
import Policy
import RouterCore
import SessionStore
import Testing

/// Issue 3, acceptance 2: policy decisions heard at the speaker route of a real jackd (dummy).
@Suite("Policy decisions heard at the route", .serialized)
struct PolicyAudioTests {
    /// Records while `actions` run at the given offsets (seconds from the start of the take).
    func take(_ rig: Rig, seconds: Double, _ actions: [(at: Double, action: () throws -> Void)]) throws -> (Recording, xruns: Int) {
        try rig.countingXruns {
            rig.recorder.startRecording()
            let start = Date()
            for (at, action) in actions {
                let wait = at - Date().timeIntervalSince(start)
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                try action()
            }
            let rest = seconds - Date().timeIntervalSince(start)
            if rest > 0 { Thread.sleep(forTimeInterval: rest) }
            return rig.recorder.stopRecording()
        }
    }

    @Test("activating the navigation prompt ducks music by 14 dB over the attack and releases it over the release")
    func navigationDucksMusic() throws {
        let rig = try Rig()
        let router = try #require(rig.router)
        let level: Float = 0.5
        rig.play(Signals.dc(level), on: 0, 1)
        try rig.settle()
        let (recording, xruns) = try take(rig, seconds: 1.6, [
            (0.2, { try router.perform(.activate(app: "nav")) }),
            (0.6, { #expect(router.status().apps.first { $0.name == "music" }?.state == "ducked") }),
            (0.7, { try router.perform(.deactivate(app: "nav", notifyOthers: false)) }),
        ])
        let out = recording[.speaker1]
        let rate = Float(rig.sampleRate)
        let ducked = level * Decibels.linear(-14)
        // Before: full level. The plateau between attack and release: -14 dB ± 0.5 dB.
        #expect(abs(out[0] - level) < 1e-6)
        let firstMove = try #require(out.firstIndex { $0 < level - 1e-4 }, "the duck starts")
        let attackEnd = try #require(out[firstMove...].firstIndex { abs($0 - ducked) < 1e-5 }, "the duck reaches its level")
        let plateau = out[attackEnd..<min(attackEnd + 2048, out.count)]
        let plateauDecibels = Double(Decibels.level(plateau.max()! / level))
        #expect(abs(plateauDecibels - -14) <= 0.5, "ducked by \(plateauDecibels) dB")
        // The attack lasts 100 ms (±5 %, and a missed cycle in between may shift it by a period).
        // Durations by JACK's frame time, which counts the cycles the recorder missed too.
        func frames(_ from: Int, _ to: Int) -> Int {
            guard let a = recording.frameTime(at: from), let b = recording.frameTime(at: to) else { return to - from }
            return Int(b &- a)
        }
        let attackFrames = Float(frames(firstMove, attackEnd))
        let slack = Float(xruns * rig.server.period) + rate * 0.005
        #expect(abs(attackFrames - rate * 0.1) <= slack + 1, "attack took \(attackFrames) frames")
        // The release: back to full level over 500 ms.
        let releaseStart = try #require(out[attackEnd...].firstIndex { $0 > ducked + 1e-4 }, "the release starts")
        let releaseEnd = try #require(out[releaseStart...].firstIndex { abs($0 - level) < 1e-5 }, "the release finishes")
        #expect(abs(Float(frames(releaseStart, releaseEnd)) - rate * 0.5) <= slack + 1 + rate * 0.02,
                "release took \(frames(releaseStart, releaseEnd)) frames")
        #expect(abs(out.last! - level) < 1e-5)
        // Heard as ramps: no step larger than the attack's own per-sample step.
        let boundaries = xruns == 0 ? recording.gaps : recording.cycleStarts.map(\.index)
        let allowed = (level - ducked) / (rate * 0.1)
        #expect(Signals.largestStep(out, excluding: boundaries) <= allowed * 1.01)
    }

    @Test("an interrupted app falls to silence (below -90 dBFS) over the fade, without a click")
    func interruptionFadesToSilence() throws {
        let rig = try Rig()
        let router = try #require(rig.router)
        rig.play(Signals.dc(0.5), on: 0, 1)
        try rig.settle()
        let (recording, xruns) = try take(rig, seconds: 0.7, [
            (0.2, {
                // A second player (non-mixable) interrupts music.
                let effects = try router.perform(.activate(app: "idle"))
                #expect(effects.contains(.notify(.interruption(app: "music", phase: .began, shouldResume: false, reason: .default))))
            }),
        ])
        let out = recording[.speaker1]
        #expect(abs(out[0] - 0.5) < 1e-6, "music played before")
        let tail = out.suffix(rig.sampleRate / 5)
        #expect(Signals.rmsDecibels(tail) < -90, "silent after: \(Signals.rmsDecibels(tail)) dBFS")
        #expect(tail.allSatisfy { abs($0) < 3.2e-5 })
        let boundaries = xruns == 0 ? recording.gaps : recording.cycleStarts.map(\.index)
        let allowed = Float(0.5) / (Float(rig.sampleRate) * 0.020)
        let largest = Signals.largestStep(out, excluding: boundaries)
        #expect(largest <= allowed * 1.01, "largest step \(largest); a 20 ms fade allows \(allowed)")
        #expect(router.status().apps.first { $0.name == "music" }?.state == "interrupted")
    }

    @Test("the silent switch silences the ambient game and leaves playback music untouched")
    func silentSwitch() throws {
        let rig = try Rig()
        let router = try #require(rig.router)
        rig.play(rig.sine(440, 0.4), on: 0, 1)
        rig.play(rig.sine(1000, 0.3), on: 2, 3)
        try router.perform(.setSilentSwitch(true))
        let (silent, xruns) = try rig.countingXruns { try rig.record(seconds: 0.4) }
        expectSameAudio(silent[.speaker1], silent[.musicL], take: silent, xruns: xruns, "silent on: music alone")
        let states = Dictionary(uniqueKeysWithValues: router.status().apps.map { ($0.name, $0.state) })
        #expect(states["game"] == "silenced" && states["music"] == "active")

        try router.perform(.setSilentSwitch(false))
        let (loud, xruns2) = try rig.countingXruns { try rig.record(seconds: 0.4) }
        let both = zip(loud[.musicL], loud[.gameL]).map { $0 + $1 }
        expectSameAudio(loud[.speaker1], both, take: loud, xruns: xruns2, "silent off: music and game")
    }

    @Test("an outside interruption silences everything and refuses music until it ends; auto apps come back")
    func outsideInterruption() throws {
        let rig = try Rig()
        let router = try #require(rig.router)
        rig.play(rig.sine(440, 0.4), on: 0, 1)
        rig.play(rig.sine(1000, 0.3), on: 2, 3)
        try router.perform(.outsideInterruptionBegan(source: "phone"))
        let quiet = try rig.record(seconds: 0.3)
        #expect(quiet[.speaker1].suffix(rig.sampleRate / 10).allSatisfy { $0 == 0 }, "the call silences everything")
        let refusal = #expect(throws: RouterError.self) { try router.perform(.activate(app: "music")) }
        #expect(refusal.map { "\($0)" }?.contains("outside interruption 'phone'") == true)
        #expect(refusal == nil ? false : { if case let .policy(error) = refusal! { error.code == .insufficientPriority } else { false } }())
        try router.perform(.outsideInterruptionEnded(source: "phone", shouldResume: true))
        try router.perform(.activate(app: "music"))
        let (back, xruns) = try rig.countingXruns { try rig.record(seconds: 0.4) }
        // game is an ambient app without resume=auto in this rig, so only music plays again.
        expectSameAudio(back[.speaker1], back[.musicL], take: back, xruns: xruns, "music after the call")
    }

    @Test("an app registered at run time gets ports, plays when active, and its ports go when it unregisters")
    func runtimeRegistration() throws {
        let rig = try Rig()
        let router = try #require(rig.router)
        try router.register(AppConfiguration(name: "synth", category: .ambient), channelCount: 1,
                            connect: [try PortPattern("source:nav")])
        try waitFor("the synth's port to be connected") {
            rig.source.client.connections(of: "source:nav").contains("duckrouter:synth_in_1")
        }
        try router.perform(.activate(app: "synth"))
        rig.play(rig.sine(330, 0.3), on: 4)
        let (take, xruns) = try rig.countingXruns { try rig.record(seconds: 0.3) }
        expectSameAudio(take[.speaker1], take[.nav], take: take, xruns: xruns, "synth alone")
        try router.perform(.unregister(app: "synth"))
        try waitFor("the synth's port to go") { !rig.recorder.client.portExists("duckrouter:synth_in_1") }
        #expect(router.policyState.app("synth") == nil)
        #expect(throws: RouterError.self) { try router.perform(.activate(app: "synth")) }
    }
}
