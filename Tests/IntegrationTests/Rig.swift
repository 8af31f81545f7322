import Foundation
import JackHost
import JackRig
import Policy
import RouterCore
import SessionStore
import Testing

/// A private jackd with a tone source, a recorder and a router wired as a small rig:
///
///     source:music_L/R, game_L/R, nav ──connect patterns──▶ duckrouter:<app>_in_<n>
///     duckrouter:speaker_out_1/2 ──route──▶ recorder:speaker_1/2
///     source:* ──────────────────────────▶ recorder:ref_* (what went in, same cycle)
final class Rig {
    let server: JackServer
    let source: TestClient
    let recorder: TestClient
    private(set) var router: Router?
    let sampleRate: Int

    static let referenceInputs = ["ref_music_L", "ref_music_R", "ref_game_L", "ref_game_R", "ref_nav"]
    static let sourceOutputs = ["music_L", "music_R", "game_L", "game_R", "nav"]

    /// Channel indices in recordings.
    enum Channel: Int { case speaker1, speaker2, musicL, musicR, gameL, gameR, nav }

    static var session: Session {
        var session = Session()
        session.routes = [Session.Route(name: "speaker", ports: ["recorder:speaker_1", "recorder:speaker_2"])]
        // music and game play from the start (ambient mixes with playback); nav is a navigation
        // prompt (ducks others, pauses spoken audio) and idle a second player, both inactive.
        var music = Session.App(name: "music", category: .playback, connect: [try! PortPattern("source:music_[LR]")])
        music.startsActive = true
        var game = Session.App(name: "game", category: .ambient, connect: [try! PortPattern("source:game_.*")])
        game.startsActive = true
        var nav = Session.App(name: "nav", category: .playback, channelCount: 1, connect: [try! PortPattern("source:nav")])
        nav.options = [.duckOthers, .interruptSpokenAudioAndMixWithOthers]
        nav.mode = .voicePrompt
        session.apps = [music, game, nav, Session.App(name: "idle", category: .playback)]
        return session
    }

    init(period: Int = 256, startRouterFirst: Bool = false,
         configure: (inout Router.Configuration) -> Void = { _ in }) throws {
        var configuration = Router.Configuration(session: Self.session, server: "")
        server = try JackServer(period: period)
        sampleRate = server.sampleRate
        configuration.server = server.name
        configure(&configuration)
        if startRouterFirst {
            router = try Router(configuration: configuration)
        }
        recorder = try TestClient(name: "recorder", server: server.name,
                                  inputs: ["speaker_1", "speaker_2"] + Self.referenceInputs)
        source = try TestClient(name: "source", server: server.name, outputs: Self.sourceOutputs)
        for (output, input) in zip(Self.sourceOutputs, Self.referenceInputs) {
            try source.connect("source:\(output)", to: "recorder:\(input)")
        }
        if router == nil {
            router = try Router(configuration: configuration)
        }
        try waitFor("the router to connect its route and app ports") {
            recorder.client.connections(of: "recorder:speaker_2").contains("duckrouter:speaker_out_2")
                && source.client.connections(of: "source:nav").contains("duckrouter:nav_in_1")
        }
    }

    deinit { close() }

    func close() {
        router?.stop()
        router = nil
        source.close()
        recorder.close()
        server.stop()
    }

    func play(_ samples: [Float], on outputs: Int...) {
        for output in outputs { source.setSignal(samples, output: output) }
    }

    func sine(_ frequency: Int, _ amplitude: Float) -> [Float] {
        Signals.sine(frequency: frequency, amplitude: amplitude, sampleRate: sampleRate)
    }

    /// Lets the router's ramps settle (`settle()`), then records.
    func record(seconds: Double) throws -> Recording {
        try settle()
        return recorder.record(seconds: seconds)
    }

    /// Waits, on the router's own counters rather than the clock, until the audio thread has
    /// taken the latest published plan and has run long enough since then for its gain ramps
    /// to end (the ramp time, plus two periods for signal changes made meanwhile to arrive).
    /// Changes made through the router's API are published before the call returns, so after
    /// them this is the moment they are fully heard. (Policy ramps longer than the ramp time,
    /// such as a duck's attack and release, are measured on the recording itself.)
    func settle(timeout: Double = 5) throws {
        try IntegrationTests.settle(try #require(router), timeout: timeout)
    }
}

/// `Rig.settle()` for any router: waits until its audio thread has taken the latest published
/// plan and run the ramp time (plus two periods) since.
func settle(_ router: Router, timeout: Double = 5) throws {
    var adoptedBy: UInt64 = 0
    try waitFor("the audio thread to take the latest plan", timeout: timeout) {
        let status = router.status()
        adoptedBy = status.cycles
        return status.adoptedPlan == status.publishedPlan
    }
    let status = router.status()
    let rampFrames = status.rampMilliseconds / 1000 * Double(status.sampleRate)
    let cycles = UInt64((rampFrames / Double(max(status.bufferSize, 1))).rounded(.up)) + 2
    try waitFor("\(cycles) cycles after the plan was taken", timeout: timeout) { router.status().cycles >= adoptedBy + cycles }
}

extension Recording {
    subscript(_ channel: Rig.Channel) -> [Float] { channels[channel.rawValue] }
}

func waitFor(_ what: String, timeout: Double = 5, _ condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return }
        Thread.sleep(forTimeInterval: 0.02)
    }
    struct TimedOut: Error, CustomStringConvertible { let description: String }
    throw TimedOut(description: "timed out after \(timeout) s waiting for \(what)")
}

extension Rig {
    /// Runs `body` and returns its result with the xruns meanwhile: those JACK told the router
    /// of, and the cycles the router saw missed (`missedCycles`: its frame clock moved past it).
    /// PipeWire 0.3.65 tells JACK clients of no xrun, and a router that misses a cycle there
    /// leaves the recorder a buffer it did not fill (a step in a ramp, a cycle that differs).
    func countingXruns<T>(_ body: () throws -> T) rethrows -> (T, xruns: Int) {
        let before = router!.status()
        let result = try body()
        let after = router!.status()
        return (result, after.xruns - before.xruns + Int(after.missedCycles - before.missedCycles))
    }
}

extension Rig {
    /// Takes a recording with `take` until one has no xrun and no cycle the recorder missed, at
    /// most `attempts` times, and returns it with its xruns (`countingXruns`); after as many
    /// spoiled takes, the last. A take the machine's load spoiled measures the machine, not the
    /// router: a ramp whose start the recorder missed looks short, one the router paused looks
    /// long. `take` must begin from the same state each time. A take set aside is still shown to
    /// `setAside`, for what holds under load too (every cycle that differs explained by an xrun).
    func quietTake(_ what: String, attempts: Int = 3, setAside: (Recording, Int) -> Void = { _, _ in },
                   _ take: () throws -> Recording) rethrows -> (Recording, xruns: Int) {
        var spoiled: [String] = []
        while true {
            let (recording, xruns) = try countingXruns(take)
            let quiet = xruns == 0 && recording.gaps.isEmpty
            if !quiet && spoiled.count + 1 < attempts { setAside(recording, xruns) }
            if quiet || spoiled.count + 1 == attempts {
                if !spoiled.isEmpty { print("\(what): played again after takes with \(spoiled.joined(separator: "; ")); this one \(xruns) xruns, \(recording.gaps.count) cycles the recorder missed") }
                return (recording, xruns)
            }
            spoiled.append("\(xruns) xruns, \(recording.gaps.count) cycles the recorder missed")
        }
    }
}

/// Checks that `actual` equals `expected` sample for sample (within `tolerance`).
///
/// On a shared machine a JACK cycle can be missed (an xrun); the recorder then reads a stale
/// buffer for that cycle. So: a take without xruns must match everywhere; a take with xruns must
/// match in every cycle but at most two per xrun (a real fault spoils every cycle, not a few).
/// Xruns are those the server reported (`xruns`) and the cycles the recorder saw missed.
/// `mostlyClean: false` asks only that every differing cycle be explained by an xrun (a take the
/// machine's load spoiled throughout, judged again in a later take).
func expectSameAudio(_ actual: [Float], _ expected: [Float], take: Recording, xruns: Int,
                     tolerance: Float = 1e-6, mostlyClean: Bool = true, _ label: String = "",
                     sourceLocation: SourceLocation = #_sourceLocation) {
    let starts = take.cycleStarts.map(\.index) + [actual.count]
    var total = 0
    var spoiled = 0
    var which: [Int] = []
    for (start, end) in zip(starts, starts.dropFirst()) where end > start {
        total += 1
        if largestDifference(Array(actual[start..<end]), Array(expected[start..<end])) >= tolerance {
            spoiled += 1
            which.append(total - 1)
        }
    }
    #expect(total > 0, "\(label): no cycles recorded", sourceLocation: sourceLocation)
    // Cycles the recorder missed (its frame time jumped) are xruns too, whether or not the server
    // says so: PipeWire 0.3.65 does not tell JACK clients of its own, and at 64-128 frames on a
    // loaded machine the spoiled cycles fall on or beside such gaps.
    let missed = take.gaps.count
    let xruns = xruns + missed
    if xruns == 0 {
        #expect(largestDifference(actual, expected) < tolerance,
                "\(label): \(spoiled) of \(total) cycles differ without any xrun (cycles \(which.prefix(10)) of the take; the recorder missed cycles at \(take.gaps.prefix(10).map { i in take.cycleStarts.firstIndex { $0.index == i } ?? -1 }))", sourceLocation: sourceLocation)
    } else {
        // Under ThreadSanitizer xruns are the rule: every spoiled cycle must still be explained by
        // one, but more than a quarter may be spoiled (never all).
        let enoughClean = !mostlyClean || (ThreadSanitizer.isActive ? spoiled < total : spoiled * 4 <= total)
        #expect(spoiled <= 2 * xruns && enoughClean,
                "\(label): \(spoiled) of \(total) cycles differ, \(xruns) xruns (\(missed) of them cycles the recorder missed)", sourceLocation: sourceLocation)
    }
}

/// The largest |a[i] - b[i]|.
func largestDifference(_ a: [Float], _ b: [Float]) -> Float {
    zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
}
