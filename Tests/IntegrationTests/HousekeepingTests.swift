import Foundation
import JackRig
import Policy
import RouterCore
import Testing

/// The control queue's housekeeping runs every 10 ms only while it has work, every second
/// otherwise (issue 21: an idle router should cost next to nothing). Whatever gives it work must
/// bring the fast pace back at once, or a change made while idle would wait for an idle tick.
/// Here the idle pace is an hour: anything left waiting for it never comes, and the test fails
/// on its wait, not on a timing that a busy machine could upset.
@Suite("Housekeeping pace", .serialized)
struct HousekeepingTests {
    static func rig() throws -> Rig { try Rig { $0.idleHousekeepingInterval = .seconds(3600) } }

    @Test("an idle router slows its housekeeping; a held change, a timed change and a removed app's fade each bring the fast pace back, and are done")
    func pace() throws {
        let rig = try Self.rig()
        let router = try #require(rig.router)
        rig.play(Signals.dc(0.5), on: 0, 1)
        rig.play(Signals.dc(0.25), on: 2, 3)
        try rig.settle()
        try waitFor("housekeeping to go idle once the start's plans and fades are done") { router.housekeepingIsIdle }

        // A change held back (an OSC burst that goes on): housekeeping publishes it at its next
        // tick, which must be a fast one.
        router.beginCoalescing()
        let held = router.status().publishedPlan
        try router.setAppGain("game", decibels: -144)
        try waitFor("housekeeping to publish the held change", timeout: 3) { router.status().publishedPlan > held }
        router.endCoalescing()
        try rig.settle()
        try waitFor("housekeeping to go idle after the held change") { router.housekeepingIsIdle }
        #expect(abs(rig.recorder.record(seconds: 0.05)[.speaker1].last! - 0.5) < 1e-4, "music alone")

        // A timed change (a bundle's timetag) half a second ahead.
        let applied = DispatchSemaphore(value: 0)
        try router.perform([Router.Change(.setAppVolume(app: "game", .decibels(0)))], atUnixTime: Date().timeIntervalSince1970 + 0.5) { _ in
            applied.signal()
        }
        #expect(applied.wait(timeout: .now() + 5) == .success, "the timed change came due")
        try rig.settle()
        try waitFor("housekeeping to go idle after the timed change") { router.housekeepingIsIdle }
        #expect(abs(rig.recorder.record(seconds: 0.05)[.speaker1].last! - 0.75) < 1e-4, "game back at 0 dB")

        // An app removed: its ports go once its fade is over and the plan without it adopted,
        // which only housekeeping sees.
        try router.register(AppConfiguration(name: "extra", category: .ambient), channelCount: 1)
        try waitFor("the new app's port") { rig.recorder.client.portExists("duckrouter:extra_in_1") }
        try rig.settle()
        try waitFor("housekeeping to go idle after the new app") { router.housekeepingIsIdle }
        try router.perform(.unregister(app: "extra"))
        try waitFor("the removed app's port to go", timeout: 3) { !rig.recorder.client.portExists("duckrouter:extra_in_1") }
        try waitFor("housekeeping to go idle after the removal") { router.housekeepingIsIdle }
    }

    @Test("while idle, process times and meters are read from the audio thread when asked, not as of the last tick")
    func freshWhileIdle() throws {
        let rig = try Self.rig()
        let router = try #require(rig.router)
        rig.play(Signals.dc(0.5), on: 0, 1)
        try rig.settle()
        try waitFor("housekeeping to go idle") { router.housekeepingIsIdle }
        // No tick comes now. Each reading has every cycle the one before it counted.
        var readings = [router.status()]
        for _ in 0..<5 {
            try waitFor("more cycles") { router.status().cycles > readings.last!.cycles + 3 }
            readings.append(router.status())
        }
        for (before, after) in zip(readings, readings.dropFirst()) {
            #expect(after.processTime.cycles >= before.cycles, "process times of \(after.processTime.cycles) cycles, \(before.cycles) run before")
        }
        // Peaks, with nothing else reading the engine in between.
        _ = router.takePeaks()
        Thread.sleep(forTimeInterval: 0.1)   // spacing only: however long, the cycles run in it are metered
        let music = router.takePeaks().first { $0.name == "music" }
        #expect(music.map { $0.peaks.count == 2 && $0.peaks.allSatisfy { abs($0 - 0.5) < 1e-4 } } == true, "\(String(describing: music))")
    }

    /// JACK's shutdown callback wakes the control queue itself: a server that goes away while
    /// housekeeping idles is given up at once, not at its next tick (here an hour away). Only the
    /// killed server tests that: a stopping one unregisters its ports first, and those events
    /// reach the router too (which looks at the flag before any event).
    @Test("a server that goes away while housekeeping idles is given up at once", arguments: ["stopped", "killed"])
    func lossWhileIdle(how: String) throws {
        let rig = try Self.rig()
        let router = try #require(rig.router)
        try rig.settle()
        try waitFor("housekeeping to go idle") { router.housekeepingIsIdle }
        #expect(router.status().jackConnected)
        if how == "killed" { rig.server.kill9() } else { rig.server.stop() }
        try waitFor("the router to give the \(how) server up", timeout: 5) { !router.status().jackConnected }
    }
}
