import Foundation
import JackRig
import OSCTransport
import SessionStore
import Testing

/// `/app/<app>/mute` end to end, on a real jackd: heard at the route's sink, refused when it
/// should be, shown in `/state`, `duckctl status` and the control page, kept across a restart.
/// (That a peer other than the owner gets -5 for it is `OSCControlTests.everyAppPathIsTheOwners`,
/// which sends every app path of the table.)
@Suite("Mute, heard and kept", .serialized)
struct MuteTests {
    /// music's entry in `/state`'s settings.
    static func music(_ rig: OSCRig) throws -> [String: Any] {
        let apps = try #require(try rig.settings()["apps"] as? [[String: Any]])
        return try #require(apps.first { $0["name"] as? String == "music" })
    }

    /// The speaker's left channel from just before `change` until 0.2 s of frames after it was
    /// answered (the answer comes once the change stands; its fade takes 20 ms). Waits on the
    /// recorder's frames, not the clock: the take begins before the change, whatever the load.
    static func take(_ rig: OSCRig, _ change: () throws -> Void) throws -> (samples: [Float], gaps: [Int]) {
        let recorder = rig.recorder
        let rate = Int(recorder.client.sampleRate)
        recorder.startRecording()
        try waitFor("the recorder to begin", timeout: 5) { recorder.recordedFrames >= rate / 50 }
        try change()
        let answered = recorder.recordedFrames
        try waitFor("0.2 s recorded after the change", timeout: 10) { recorder.recordedFrames >= answered + rate / 5 }
        let recording = recorder.stopRecording()
        return (recording.channels[OSCRig.Channel.speaker1.rawValue], recording.gaps)
    }

    /// A take that goes from one level to the other by a fade: no step between two samples of more
    /// than a quarter of the distance (a cut would step it all at once).
    static func expectFade(_ take: (samples: [Float], gaps: [Int]), from start: Float, to end: Float,
                           sourceLocation: SourceLocation = #_sourceLocation) {
        let tolerance = max(start, end) * 0.02
        #expect(take.samples.count > 1000 && abs(take.samples[0] - start) < tolerance && abs(take.samples.last! - end) < tolerance,
                "from \(take.samples.first ?? .nan) to \(take.samples.last ?? .nan), \(take.samples.count) samples", sourceLocation: sourceLocation)
        let step = Signals.largestStep(take.samples, excluding: take.gaps)
        #expect(step < abs(start - end) / 4, "faded, not cut: the largest step was \(step) of \(abs(start - end))", sourceLocation: sourceLocation)
    }

    @Test("muted music is silent at the sink, with a fade and no click, and keeps its volume; a muted nav ducks no one; bad arguments change nothing; kept across a kill -9")
    func heardAndKept() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        rig.play(music: 0.5, nav: 0.25)
        rig.expectLevel(.speaker1, 0.5)
        #expect(try rig.query("/app/music/volume", [.float(0.5)])?.path == "/reply")
        let atHalf: Float = 0.5 * 0.125   // volume 0.5 is -18.06 dB (cubic taper)
        rig.expectLevel(.speaker1, atHalf, within: atHalf * 0.02)

        // Muted: silence, reached by a fade, not a step.
        let muting = try Self.take(rig) {
            let reply = try rig.query("/app/music/mute", [.int32(1)])
            #expect(reply?.path == "/reply" && reply?.arguments == [.string("/app/music/mute"), .int32(1)], "\(String(describing: reply))")
        }
        Self.expectFade(muting, from: atHalf, to: 0)
        rig.expectLevel(.speaker1, 0, within: 1e-5)
        #expect(try rig.query("/app/music/mute")?.arguments == [.string("/app/music/mute"), .int32(1)])
        #expect(try rig.query("/app/music/volume")?.arguments == [.string("/app/music/volume"), .float(0.5)], "the volume is kept")
        let shown = try Self.music(rig)
        #expect((shown["settings"] as? [String: Any])?["muted"] as? Bool == true, "\(shown)")
        #expect(shown["why"] as? String == "muted" && shown["state"] as? String == "active", "\(shown)")

        // duckctl says so, beside the app.
        let status = try DuckctlTests.duckctl(["--port", "\(rig.port)", "status"])
        let line = status.stdout.split(separator: "\n").first { $0.hasPrefix(" │     music") }
        #expect(line?.hasSuffix("muted") == true, "\(status.stdout)")

        // Bad arguments and an unknown app: refused, and nothing changes.
        for (arguments, code) in [([OSCArgument.int32(2)], Int32(-2)), ([.string("yes")], -2), ([.float(.nan)], -2), ([.int32(0), .int32(1)], -2)] {
            let answer = try rig.query("/app/music/mute", arguments)
            #expect(answer?.path == "/error" && answer?.arguments.dropFirst().first == .int32(code), "\(arguments): \(String(describing: answer))")
        }
        let unknown = try rig.query("/app/ghost/mute", [.int32(1)])
        #expect(unknown?.path == "/error" && unknown?.arguments.dropFirst().first == .int32(-3), "\(String(describing: unknown))")
        #expect(try rig.query("/app/music/mute")?.arguments.last == .int32(1), "still muted")

        // Unmuted: back at its volume, by a fade.
        let unmuting = try Self.take(rig) {
            let reply = try rig.query("/app/music/mute", [.int32(0)])
            #expect(reply?.arguments == [.string("/app/music/mute"), .int32(0)])
        }
        Self.expectFade(unmuting, from: 0, to: atHalf)
        rig.expectLevel(.speaker1, atHalf, within: atHalf * 0.02)
        #expect(try rig.query("/app/music/volume", [.float(1)])?.path == "/reply")
        rig.expectLevel(.speaker1, 0.5)

        // A muted nav, active, ducks no one: the speaker hears music alone, unducked.
        #expect(try rig.query("/app/nav/mute", [.int32(1)])?.path == "/reply")
        #expect(try rig.query("/app/nav/activate")?.path == "/reply")
        rig.expectSteady(.speaker1, 0.5, seconds: 0.3, "music not ducked, nav not heard")
        // Unmuted: nav is heard and ducks music by 14 dB.
        #expect(try rig.query("/app/nav/mute", [.int32(0)])?.path == "/reply")
        let ducked = 0.5 * Float(pow(10, -14.0 / 20)) + 0.25
        rig.expectLevel(.speaker1, ducked, within: 0.005)
        #expect(try rig.query("/app/nav/deactivate")?.path == "/reply")

        // Kept across a crash of the router: once the state file has it, kill -9 and start again.
        #expect(try rig.query("/app/music/mute", [.int32(1)])?.path == "/reply")
        try waitFor("the state file to keep music muted") {
            rig.savedState()?.apps.first { $0.name == "music" }?.settings?.muted == true
        }
        try rig.killAndRestart()
        #expect(try rig.query("/app/music/mute")?.arguments == [.string("/app/music/mute"), .int32(1)], "muted after the restart")
        #expect(try rig.query("/app/music/volume")?.arguments == [.string("/app/music/volume"), .float(1)])
        rig.expectSteady(.speaker1, 0, within: 1e-5, seconds: 0.3, "silent after the restart")
    }

    @Test("the control page's Mute button mutes and unmutes the app, shows it pressed and the app's why as muted")
    func page() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let key = try #require(rig.pageKey())
        let browser = try JSONLineScript("control_page.py", ["http://127.0.0.1:\(rig.httpPort)/ui/#key=\(key)"])
        let opened = try #require(browser.call(["open", 1280, 800]))
        #expect(opened["live"] as? Bool == true, "\(opened)")
        rig.play(music: 0.5)
        rig.expectLevel(.speaker1, 0.5)
        #expect(browser.call(["attr", ".strip[data-app=music] .mute", "aria-pressed"])?["value"] as? String == "false")

        _ = browser.call(["click", ".strip[data-app=music] .mute"])
        try waitFor("music muted by the page") { (try? rig.query("/app/music/mute"))??.arguments.last == .int32(1) }
        rig.expectLevel(.speaker1, 0, within: 1e-5)
        #expect(browser.call(["wait_attr", ".strip[data-app=music] .mute", "aria-pressed", "true", 2])?["found"] as? Bool == true)
        #expect(browser.call(["wait_text", ".strip[data-app=music] .why", "muted", 2])?["found"] as? Bool == true)

        // Muted over OSC is shown too; the page's button unmutes.
        _ = browser.call(["click", ".strip[data-app=music] .mute"])
        try waitFor("music unmuted by the page") { (try? rig.query("/app/music/mute"))??.arguments.last == .int32(0) }
        rig.expectLevel(.speaker1, 0.5)
        #expect(try rig.query("/app/game/mute", [.int32(1)])?.path == "/reply")
        #expect(browser.call(["wait_attr", ".strip[data-app=game] .mute", "aria-pressed", "true", 2])?["found"] as? Bool == true)
        #expect(browser.call(["wait_attr", ".strip[data-app=music] .mute", "aria-pressed", "false", 2])?["found"] as? Bool == true)
        let errors = browser.call(["console"])?["errors"] as? [String] ?? ["no answer"]
        #expect(errors.isEmpty, "\(errors)")
        _ = browser.call(["quit"])
    }
}
