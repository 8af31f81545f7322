import Foundation
import JackTestSupport
import Policy
import RouterCore
import Testing

/// The control queue's housekeeping runs every 10 ms only while it has work, every 100 ms
/// otherwise (issue 21: an idle router should cost next to nothing). Whatever gives it work must
/// bring the fast pace back before the call that gave it returns, or a change made while idle
/// would wait up to 100 ms for its plan, its fade or its timed moment.
@Suite("Housekeeping pace", .serialized)
struct HousekeepingTests {
    @Test("an idle router slows its housekeeping; a change, a held change and a timed change each bring the fast pace back at once, and are heard")
    func pace() throws {
        let rig = try Rig()
        let router = try #require(rig.router)
        rig.play(Signals.dc(0.5), on: 0, 1)
        rig.play(Signals.dc(0.25), on: 2, 3)
        try rig.settle()
        try waitFor("housekeeping to go idle once the start's plans and fades are done") { router.housekeepingIsIdle }

        // A change: its plan is published, and housekeeping follows its fade.
        try router.setAppGain("music", decibels: -20)
        #expect(!router.housekeepingIsIdle, "a published plan gives housekeeping work")
        try rig.settle()
        try waitFor("housekeeping to go idle after the change") { router.housekeepingIsIdle }
        #expect(abs(rig.recorder.record(seconds: 0.05)[.speaker1].last! - 0.3) < 1e-4, "music at -20 dB (0.05) plus game (0.25)")

        // A change held back (an OSC burst that goes on): housekeeping must publish it at its
        // next tick, which must be a fast one.
        router.beginCoalescing()
        let held = router.status().publishedPlan
        try router.setAppGain("game", decibels: -144)
        #expect(!router.housekeepingIsIdle, "a held change gives housekeeping work")
        try waitFor("housekeeping to publish the held change") { router.status().publishedPlan > held }
        router.endCoalescing()
        try rig.settle()
        try waitFor("housekeeping to go idle after the held change") { router.housekeepingIsIdle }
        #expect(abs(rig.recorder.record(seconds: 0.05)[.speaker1].last! - 0.05) < 1e-4, "game silent")

        // A timed change (a bundle's timetag) half a second ahead.
        let applied = DispatchSemaphore(value: 0)
        try router.perform([Router.Change(.setAppVolume(app: "game", .decibels(0)))], atUnixTime: Date().timeIntervalSince1970 + 0.5) { _ in
            applied.signal()
        }
        #expect(!router.housekeepingIsIdle, "a timed change gives housekeeping work")
        #expect(applied.wait(timeout: .now() + 5) == .success)
        try rig.settle()
        try waitFor("housekeeping to go idle after the timed change") { router.housekeepingIsIdle }
        #expect(abs(rig.recorder.record(seconds: 0.05)[.speaker1].last! - 0.3) < 1e-4, "game back at 0 dB")
    }

    @Test("while idle, status and meters are read from the audio thread when asked, not as of the last tick")
    func freshWhileIdle() throws {
        let rig = try Rig()
        let router = try #require(rig.router)
        rig.play(Signals.dc(0.5), on: 0, 1)
        try rig.settle()
        try waitFor("housekeeping to go idle") { router.housekeepingIsIdle }
        _ = router.takePeaks()
        // Each reading has every cycle's time up to that moment (a cycle may end between the two
        // counts), where a reading as of the last tick would lag by up to 19 cycles (100 ms of
        // 5.3 ms cycles). The waits only space the readings.
        var gaps: [UInt64] = []
        for _ in 0..<10 {
            Thread.sleep(forTimeInterval: 0.03)
            let status = router.status()
            gaps.append(status.cycles - status.processTime.cycles)
        }
        #expect(gaps.allSatisfy { $0 <= 2 }, "cycles not yet in the process times at each reading: \(gaps)")
        let music = router.takePeaks().first { $0.name == "music" }
        #expect(music.map { $0.peaks.allSatisfy { abs($0 - 0.5) < 1e-4 } } == true, "\(String(describing: music))")
    }
}
