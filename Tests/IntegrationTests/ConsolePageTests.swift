import Foundation
import JackRig
import OSCTransport
import Testing

/// Issue 39: the control page as a sound engineer's console, in headless Chromium against the
/// daemon under jackd: faders on the router's taper heard at the sink, gain reduction as the
/// policy pulls, loudness ducks as /state measures them, the timeline, the connection's honesty,
/// the show lock, and accessibility (axe-core, the keyboard).
@Suite("The page as a console", .serialized)
struct ConsolePageTests {
    static let fader = ".strip[data-app=music] [role=slider]"

    /// The page on `rig`, opened with its key at 1280 x 800 and live.
    static func open(_ rig: OSCRig, width: Int = 1280, height: Int = 800) throws -> JSONLineScript {
        let key = try #require(rig.pageKey())
        let browser = try JSONLineScript("control_page.py", ["http://127.0.0.1:\(rig.httpPort)/ui/#key=\(key)"])
        let opened = try #require(browser.call(["open", width, height]))
        #expect(opened["live"] as? Bool == true, "\(opened)")
        return browser
    }

    /// `settings.apps[name]` of /state.
    static func app(_ rig: OSCRig, _ name: String) throws -> [String: Any] {
        let apps = try #require(try rig.settings()["apps"] as? [[String: Any]])
        return try #require(apps.first { $0["name"] as? String == name })
    }

    static func decibels(_ level: Float, of reference: Float) -> Double { 20 * log10(Double(level) / Double(reference)) }

    /// An element's text ("" for none). Bound before an `#expect` on it: `#expect((x as? String ??
    /// "").contains(y))` expands to a check that never fails.
    static func text(_ browser: JSONLineScript, _ selector: String) -> String {
        browser.call(["text", selector])?["text"] as? String ?? ""
    }

    @Test("the fader dragged to the -20 dB mark is -20 dB at the sink, and a level set by another client shows within 200 ms; nav's duck reads -14 dB of gain reduction, by nav and its rule; the timeline tells an interruption and an unplugged route with their reasons, in order, also after a reload; locked, a drag and a press change nothing")
    func console() throws {
        let rig = try OSCRig(routes: ControlPageTests.routes, http: true)
        defer { rig.close() }
        let browser = try Self.open(rig)

        // 1. The fader's scale is what is heard: dragged with the mouse to the -20 mark.
        rig.play(music: 0.5)
        rig.expectLevel(.speaker1, 0.5)
        let dragged = try #require(browser.call(["drag_mark", "music", "20"]))
        #expect(browser.call(["wait_slider", Self.fader, 0.464159, 2])?["found"] as? Bool == true, "\(dragged)")
        let atMark = rig.level(.speaker1, reaching: 0.05, within: 0.05 * 0.035)
        let heard = Self.decibels(atMark, of: 0.5)
        print("ConsolePageTests: music's fader at the -20 mark → \(String(format: "%.2f", heard)) dB at recorder:speaker_1")
        #expect(abs(heard - -20) < 0.3, "\(heard) dB")
        #expect(browser.call(["attr", Self.fader, "aria-valuetext"])?["value"] as? String == "−20.0 dB")

        // Set over OSC by another client: on the page within 200 ms.
        browser.write(["wait_slider", Self.fader, 0.630957, 3])
        let sent = Date()
        #expect(try rig.query("/app/music/volume", [.float(0.630957)])?.path == "/reply")
        let shown = try #require(browser.readLine())
        let latency = Date().timeIntervalSince(sent)
        print("ConsolePageTests: -12 dB set over OSC shown on the fader \(String(format: "%.0f", latency * 1000)) ms after it was sent")
        #expect(shown["found"] as? Bool == true && latency < 0.2, "\(shown), \(latency) s")
        #expect(browser.call(["attr", Self.fader, "aria-valuetext"])?["value"] as? String == "−12.0 dB")

        // 2. nav ducks music by 14 dB: the strip's gain reduction says so, and who and which rule.
        #expect(try rig.query("/app/nav/activate")?.path == "/reply")
        #expect(browser.call(["wait_text", ".strip[data-app=music] .reduction", "GR", 2])?["found"] as? Bool == true)
        let reduction = Double(browser.call(["attr", ".strip[data-app=music] .reduction", "data-reduction"])?["value"] as? String ?? "") ?? .nan
        print("ConsolePageTests: gain reduction shown while nav ducks music: \(reduction) dB")
        #expect(abs(reduction - -14) <= 0.5, "\(reduction)")
        let why = Self.text(browser, ".strip[data-app=music] .why")
        #expect(why.contains("ducked by nav · session rule"), "\(why)")
        #expect(try rig.query("/app/nav/deactivate")?.path == "/reply")
        #expect(browser.call(["wait_attr", ".strip[data-app=music] .reduction", "data-reduction", "0", 3])?["found"] as? Bool == true)

        // 3. The timeline: an outside interruption that begins and ends, then the headphones
        // plugged (last in wins) and pulled (music was on them: paused, routeDisconnected).
        #expect(try rig.query("/system/interruption/begin", [.string("phone")])?.path == "/reply")
        #expect(try rig.query("/system/interruption/end", [.string("phone"), .int32(1)])?.path == "/reply")
        // Told it should resume, music does (an app resumes itself).
        #expect(try rig.query("/app/music/activate")?.path == "/reply")
        var phones: TestClient? = try TestClient(name: "phones", server: rig.server.name, inputs: ["in_1", "in_2"])
        #expect(browser.call(["wait_attr", "[data-route=headphones]", "aria-pressed", "true", 3])?["found"] as? Bool == true)
        phones?.close()
        phones = nil
        #expect(browser.call(["wait_text", "#timeline-list", "oldDeviceUnavailable", 3])?["found"] as? Bool == true)
        #expect(browser.call(["wait_text", "#timeline-list", "interruption began (routeDisconnected)", 3])?["found"] as? Bool == true)
        // Pulled: music is paused first, then the route moves (the order the router tells them).
        let expected = ["music: interruption began", "music: interruption ended, should resume",
                        "route speaker → headphones (newDeviceAvailable)", "music: interruption began (routeDisconnected)",
                        "route headphones → speaker (oldDeviceUnavailable)"]
        func told(_ texts: [String]) -> [String] {
            // Newest first on the page; in the order they happened here.
            texts.reversed().filter { text in expected.contains { text.hasSuffix($0) } }.map { text in expected.first { text.hasSuffix($0) }! }
        }
        let before = browser.call(["texts", "#timeline-list .text"])?["texts"] as? [String] ?? []
        #expect(told(before) == expected, "\(before)")
        _ = browser.call(["click", "#timeline-list li[data-kind=route] .event"])
        let details = Self.text(browser, "#timeline-list li[data-kind=route] dl")
        #expect(details.contains("reasonoldDeviceUnavailable"), "a tap shows the state it changed: \(details)")
        let reloaded = try #require(browser.call(["reload"]))
        #expect(reloaded["live"] as? Bool == true)
        #expect(browser.call(["wait_text", "#timeline-list", "oldDeviceUnavailable", 3])?["found"] as? Bool == true)
        let after = browser.call(["texts", "#timeline-list .text"])?["texts"] as? [String] ?? []
        #expect(told(after) == expected, "after a reload: \(after)")
        // duckctl reads the same timeline.
        let printed = try DuckctlTests.duckctl(["--port", "\(rig.port)", "timeline", "--changed"])
        #expect(printed.status == 0 && printed.stdout.contains("route        route headphones → speaker (oldDeviceUnavailable)")
                && printed.stdout.contains("    reason: oldDeviceUnavailable"), "\(printed)")

        // 5. The show lock: a drag and presses change nothing, at the sink or in /state.
        #expect(try rig.query("/app/music/activate")?.path == "/reply")
        _ = browser.call(["click", "#lock"])
        #expect(browser.call(["attr", "#lock", "aria-pressed"])?["value"] as? String == "true")
        let music = try Self.app(rig, "music")
        let level = rig.level(.speaker1, reaching: 0.5 * 0.2512, within: 0.5 * 0.2512 * 0.035)
        _ = browser.call(["drag_by", ".strip[data-app=music] .fader .cap", 0, -80])
        _ = browser.call(["click", ".strip[data-app=music] .mute"])
        _ = browser.call(["click", ".strip[data-app=nav] .activate"])
        _ = browser.call(["click", "#silent"])
        _ = browser.call(["click", "[data-route=speaker]"])
        #expect(browser.call(["click", "[data-remote=pause]"])?["done"] as? Bool == true, "music's Pause is on the page")
        #expect(browser.call(["fader", "music", 1.0])?["done"] as? Bool == false, "locked: the level field takes no typing")
        #expect(browser.call(["tab_to", Self.fader, 200])?["found"] as? Bool == true)
        _ = browser.call(["keys", ["home", "up", "pageup"]])
        #expect(browser.call(["wait_attr", "#locked-note", "class", "locked-note flash", 2])?["found"] as? Bool == true, "the page says it is locked")
        rig.expectSteady(.speaker1, level, within: 0.5 * 0.25 * 0.01, seconds: 0.5, "locked: the drag changed nothing heard")
        let unchanged = try Self.app(rig, "music")
        #expect(unchanged["volume"] as? Double == music["volume"] as? Double && (unchanged["settings"] as? [String: Bool])?["muted"] == false)
        #expect(try Self.app(rig, "nav")["state"] as? String == "inactive")
        #expect(try rig.query("/system/silent")?.arguments.last == .int32(0))
        #expect(try rig.settings()["selectedRoute"] == nil, "no route was picked")
        let locked = browser.call(["texts", "#timeline-list .text"])?["texts"] as? [String] ?? []
        #expect(!locked.contains { $0.contains("sent to music") }, "no remote command went: \(locked.prefix(3))")
        // Unlocked with two presses.
        _ = browser.call(["click", "#lock"])
        #expect(browser.call(["attr", "#lock", "aria-pressed"])?["value"] as? String == "true", "one press only arms the unlock")
        _ = browser.call(["click", "#lock"])
        #expect(browser.call(["attr", "#lock", "aria-pressed"])?["value"] as? String == "false")
        _ = browser.call(["click", ".strip[data-app=music] .mute"])
        try waitFor("music muted from the page, unlocked") { ((try? Self.app(rig, "music"))?["settings"] as? [String: Bool])?["muted"] == true }

        let errors = (browser.call(["console"])?["errors"] as? [String] ?? ["no answer"])
        #expect(errors.isEmpty, "\(errors)")
        _ = browser.call(["quit"])
    }

    @Test("the router stopped: the page greys within 2 s and says since when; started again: live values without a reload")
    func disconnect() throws {
        let rig = try OSCRig(routes: ControlPageTests.routes, http: true)
        defer { rig.close() }
        let browser = try Self.open(rig)
        browser.write(["wait_attr", "body", "data-connected", "no", 5])
        let stopped = Date()
        rig.kill9()
        let greyed = try #require(browser.readLine())
        let seconds = Date().timeIntervalSince(stopped)
        print("ConsolePageTests: the page greyed \(String(format: "%.2f", seconds)) s after the router was stopped")
        #expect(greyed["found"] as? Bool == true && seconds < 2, "\(greyed), \(seconds) s")
        let notice = Self.text(browser, "#lost"), link = Self.text(browser, "#link")
        #expect(notice.contains("Not connected to the router since"), "\(notice)")
        #expect(link.hasPrefix("not live since"), "\(link)")
        try rig.restart()
        #expect(browser.call(["wait_attr", "body", "data-connected", "yes", 5])?["found"] as? Bool == true)
        #expect(browser.call(["attr", "#lost", "hidden"])?["value"] as? String != nil)
        #expect(try rig.query("/app/music/volume", [.float(0.25)])?.path == "/reply")
        #expect(browser.call(["wait_slider", Self.fader, 0.25, 2])?["found"] as? Bool == true, "values are live again")

        // A router that stops answering without closing anything (a machine gone from the
        // network, a frozen process): greyed after 3 s of silence, live again when it answers.
        browser.write(["wait_attr", "body", "data-connected", "no", 8])
        let frozen = Date()
        kill(rig.daemon.processIdentifier, SIGSTOP)
        let silent = try #require(browser.readLine())
        let after = Date().timeIntervalSince(frozen)
        kill(rig.daemon.processIdentifier, SIGCONT)
        print("ConsolePageTests: the page greyed \(String(format: "%.2f", after)) s after the router froze")
        #expect(silent["found"] as? Bool == true && after < 5, "\(silent), \(after) s")
        #expect(browser.call(["wait_attr", "body", "data-connected", "yes", 8])?["found"] as? Bool == true, "live again once it answers")
        _ = browser.call(["quit"])
    }

    @Test("a loudness duck: the strip shows its target and the difference heard now, as /state measures it (within 0.5 LU), and loudness in LUFS per strip and route; the README's pictures, a loudness duck and a level duck at once")
    func loudnessDuck() throws {
        let synth = #"{"name": "synth", "category": "playback", "options": ["mixWithOthers"], "connect": ["source:extra_[LR]"], "active": true}"#
        let stage = try LoudnessDuckingTests.Stage(apps: synth, http: true, show: "\"loudness\": {\"meter\": true}")
        defer { stage.close() }
        let rig = stage.rig
        rig.source.setSignal(LoudnessDuckingTests.bed[0], output: 0)
        rig.source.setSignal(LoudnessDuckingTests.bed[1], output: 1)
        // game and synth under nav at the session's fixed -14 dB, beside music's loudness duck.
        for (output, seed) in [(3, 0x6A3E1), (4, 0x6A3E2), (5, 0x5E7A1), (6, 0x5E7A2)] as [(Int, UInt64)] {
            rig.source.setSignal(LoudnessDuckingTests.pinkNoise(seconds: 4, seed: seed).map { $0 * 0.5 }, output: output)
        }
        let browser = try Self.open(rig)
        #expect(browser.call(["wait_text", ".strip[data-app=music] .lufs", "S −", 10])?["found"] as? Bool == true, "loudness per strip")
        #expect(browser.call(["wait_text", ".route[data-current=yes] .route-lufs", "LUFS", 10])?["found"] as? Bool == true, "loudness per route")
        try stage.send("/duck/rule", [.string("nav"), .string("music"), .string(""), .string("target"), .float(15)])
        let onset = Date()
        try stage.send("/app/nav/activate")
        try stage.settle("music", target: 15, since: onset)
        #expect(browser.call(["wait_text", ".strip[data-app=music] .target-text", "now", 5])?["found"] as? Bool == true)
        var worst = 0.0
        for _ in 0..<3 {
            let text = browser.call(["text", ".strip[data-app=music] .target-text"])?["text"] as? String ?? ""
            let ducks = try #require(try Self.app(rig, "music")["ducking"] as? [[String: Any]])
            let measured = try #require(ducks.compactMap { $0["differenceLu"] as? Double }.first)
            let shown = try #require(Double(text.components(separatedBy: "now ").last?.replacingOccurrences(of: " LU", with: "") ?? ""), "\(text)")
            print("ConsolePageTests: loudness duck shown '\(text)', /state differenceLu \(measured)")
            #expect(text.hasPrefix("15 LU under nav"), "\(text)")
            worst = max(worst, abs(shown - measured))
            Thread.sleep(forTimeInterval: 0.7)
        }
        #expect(worst <= 0.5, "shown and measured differ by \(worst) LU")
        #expect((browser.call(["text", ".strip[data-app=game] .reduction"])?["text"] as? String ?? "") == "GR −14.0 dB", "game's duck is by level")

        try FileManager.default.createDirectory(at: ControlPageTests.screenshots, withIntermediateDirectories: true)
        _ = browser.call(["screenshot", ControlPageTests.screenshots.appendingPathComponent("console-1280x800.png").path])
        _ = browser.call(["size", 390, 844])
        _ = browser.call(["screenshot", ControlPageTests.screenshots.appendingPathComponent("console-390x844.png").path])
        _ = browser.call(["quit"])
    }

    @Test("axe-core finds no WCAG 2.1 A or AA violation at 1280x800 and 390x844, ducked; a fader and a button work from the keyboard alone")
    func accessibility() throws {
        let rig = try OSCRig(routes: ControlPageTests.routes, http: true)
        defer { rig.close() }
        let browser = try Self.open(rig)
        #expect(try rig.query("/app/nav/activate")?.path == "/reply")
        #expect(browser.call(["wait_attr", ".strip[data-app=music]", "data-state", "ducked", 2])?["found"] as? Bool == true)
        for (width, height) in [(1280, 800), (390, 844)] {
            _ = browser.call(["size", width, height])
            let report = try #require(browser.call(["axe"]))
            let violations = report["violations"] as? [[String: Any]] ?? [["id": "no answer"]]
            print("ConsolePageTests: axe-core \(report["versions"] ?? "?") at \(width)x\(height): \(violations.count) violations")
            #expect(violations.isEmpty, "\(width)x\(height): \(violations)")
        }
        _ = browser.call(["size", 1280, 800])
        // The keyboard alone: Tab to music's fader, End (silence), Home (unity), three steps down.
        let reached = try #require(browser.call(["tab_to", Self.fader, 200]))
        #expect(reached["found"] as? Bool == true, "\(reached)")
        _ = browser.call(["keys", ["end"]])
        try waitFor("music at -inf from the keyboard") { (try? rig.query("/app/music/volume"))??.arguments.last == .float(0) }
        _ = browser.call(["keys", ["home", "down", "down", "down"]])
        try waitFor("music at -3 dB from the keyboard") {
            guard case let .float(volume)? = (try? rig.query("/app/music/volume"))??.arguments.last else { return false }
            return abs(Double(volume) - pow(10, -3.0 / 60)) < 1e-4
        }
        #expect(browser.call(["wait_attr", Self.fader, "aria-valuetext", "−3.0 dB", 2])?["found"] as? Bool == true)
        // A button: Tab to nav's Deactivate and press Enter, then Space.
        #expect(browser.call(["tab_to", ".strip[data-app=nav] .activate", 200])?["found"] as? Bool == true)
        _ = browser.call(["keys", ["enter"]])
        try waitFor("nav deactivated from the keyboard") { (try? Self.app(rig, "nav"))?["state"] as? String == "inactive" }
        #expect(browser.call(["wait_text", ".strip[data-app=nav] .activate", "Activate", 2])?["found"] as? Bool == true)
        _ = browser.call(["keys", ["space"]])
        try waitFor("nav activated from the keyboard") { (try? Self.app(rig, "nav"))?["state"] as? String == "active" }

        // The page's meters are peak and RMS: the router measures RMS while the page is open, and
        // stops when its WebSocket closes.
        func measuresRMS() -> Bool? { ((try? rig.state())?["engine"] as? [String: Any])?["measuresRMS"] as? Bool }
        #expect(measuresRMS() == true)
        _ = browser.call(["quit"])
        try waitFor("RMS no longer measured once the page is closed") { measuresRMS() == false }
    }

    @Test("with a show: a checkbox and the Lock keep the space bar (the silent switch toggles, the Lock locks, no cue fires); elsewhere it is GO, but not while locked; Escape in a level field sends nothing")
    func showKeyboard() throws {
        let rig = try OSCRig(routes: ControlPageTests.routes, show: ShowTests.show, http: true)
        defer { rig.close() }
        let browser = try Self.open(rig)
        #expect(browser.call(["wait_text", "#cue-next", "1 · half", 3])?["found"] as? Bool == true)
        /// `/cue/state`'s answer after the path: the cue last fired, its scene, the next, its scene, how many.
        func cueState() throws -> [OSCArgument] { Array(try #require(try rig.query("/cue/state")).arguments.dropFirst()) }
        let before = try cueState()
        // Tab to the silent switch: the space bar toggles it and fires no cue.
        #expect(browser.call(["tab_to", "#silent", 300])?["found"] as? Bool == true)
        _ = browser.call(["keys", ["space"]])
        try waitFor("the silent switch on from the keyboard") { (try? rig.query("/system/silent"))??.arguments.last == .int32(1) }
        #expect(try cueState() == before, "no cue fired")
        // Escape gives up a typed level.
        let field = ".strip[data-app=music] .level"
        let volume = try rig.query("/app/music/volume")?.arguments
        _ = browser.call(["type", field, "-30"])
        _ = browser.call(["keys", ["escape"]])
        Thread.sleep(forTimeInterval: 0.3)   // a change would be sent at once; nothing may come
        #expect(try rig.query("/app/music/volume")?.arguments == volume, "Escape sent nothing")
        // Tab to the Lock: the space bar locks the page, and fires no cue.
        #expect(browser.call(["tab_to", "#lock", 300])?["found"] as? Bool == true)
        _ = browser.call(["keys", ["space"]])
        #expect(browser.call(["wait_attr", "#lock", "aria-pressed", "true", 2])?["found"] as? Bool == true)
        #expect(try cueState() == before, "no cue fired")
        // Elsewhere the space bar is GO, unless the page is locked.
        _ = browser.call(["click", "h1"])
        _ = browser.call(["keys", ["space"]])
        Thread.sleep(forTimeInterval: 0.3)   // a GO would be answered at once; none may come
        #expect(try cueState() == before, "locked: no GO")
        _ = browser.call(["click", "#lock"])
        _ = browser.call(["click", "#lock"])
        #expect(browser.call(["attr", "#lock", "aria-pressed"])?["value"] as? String == "false", "unlocked")
        _ = browser.call(["click", "h1"])
        _ = browser.call(["keys", ["space"]])
        try waitFor("GO from the space bar") { (try? cueState())?.first == .int32(1) }
        _ = browser.call(["quit"])
    }
}
