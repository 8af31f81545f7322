import Foundation
import JackRig
import OSCTransport
import Testing

/// Issue 17: the control page in a real browser (headless Chromium through selenium,
/// Resources/control_page.py) against the running daemon under jackd, with audio measured at
/// JACK ports and changes made over OSC and by plugging ports.
@Suite("The control page in a browser", .serialized)
struct ControlPageTests {
    /// The routes: the speaker on the recorder, the headphones on a client of their own that the
    /// test plugs and unplugs.
    static let routes = """
        {"name": "speaker", "ports": ["recorder:speaker_1", "recorder:speaker_2"]},
        {"name": "headphones", "ports": ["phones:in_1", "phones:in_2"], "private": true}
        """

    /// Where the screenshots go (not committed): .build/screenshots.
    static let screenshots = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/screenshots")

    @Test("the page lists the session's apps and routes; music's fader at 0.5 is -18 dB at the sink; nav activated over OSC shows music ducked by nav within 200 ms; plugging and unplugging the headphones moves the route picker; the page's switches reach the router")
    func page() throws {
        let rig = try OSCRig(routes: Self.routes, http: true)
        defer { rig.close() }
        try FileManager.default.createDirectory(at: Self.screenshots, withIntermediateDirectories: true)
        let key = try #require(rig.pageKey())
        let link = "http://127.0.0.1:\(rig.httpPort)/ui/#key=\(key)"
        #expect(rig.log.contains("control page: \(link)"), "the daemon says where the page is, with its key")
        let served = try HTTPClient.send(port: rig.httpPort, Data("GET /ui/ HTTP/1.1\r\nHost: 127.0.0.1:\(rig.httpPort)\r\nConnection: close\r\n\r\n".utf8))
        #expect(served.status == 200 && served.headers["content-type"] == "text/html; charset=utf-8")
        #expect(served.headers["x-frame-options"] == "DENY" && served.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true,
                "never framed by another site: \(served.headers)")
        let browser = try JSONLineScript("control_page.py", [link])
        let opened = try #require(browser.call(["open", 1280, 800]))
        #expect(opened["live"] as? Bool == true, "\(opened)")
        #expect(opened["apps"] as? [String] == ["game", "music", "nav"])
        #expect(opened["routes"] as? [String] == ["headphones", "speaker"])
        #expect(opened["current"] as? String == "speaker")
        #expect(browser.call(["text", ".strip[data-app=music] .state"])?["text"] as? String == "active")
        // The meters move: music plays, its bar grows from nothing.
        rig.play(music: 0.5)
        #expect(browser.call(["wait_meter", ".strip[data-app=music] canvas.meter", 3])?["found"] as? Bool == true, "music's meter moves")

        // The fader: 0.5 is -18.06 dB (cubic taper), measured at the speaker's sink.
        rig.play(music: 0.5)
        rig.expectLevel(.speaker1, 0.5)
        _ = browser.call(["fader", "music", 0.5])
        let level = rig.level(.speaker1, reaching: 0.5 * 0.125, within: 0.5 * 0.125 * 0.035)
        let decibels = 20 * log10(Double(level) / 0.5)
        print("ControlPageTests: music's fader at 0.5 → \(String(format: "%.2f", decibels)) dB at recorder:speaker_1")
        #expect(abs(decibels - -18.06) < 0.3, "\(decibels) dB")
        #expect(try rig.query("/app/music/volume")?.arguments == [.string("/app/music/volume"), .float(0.5)])

        // nav activated over OSC: the page says music is ducked by nav.
        browser.write(["wait_text", ".strip[data-app=music] .why", "ducked by nav", 3])
        let started = Date()
        #expect(try rig.query("/app/nav/activate")?.path == "/reply")
        let ducked = try #require(browser.readLine())
        let latency = Date().timeIntervalSince(started)
        print("ControlPageTests: 'ducked by nav' on the page \(String(format: "%.0f", latency * 1000)) ms after the OSC command was sent")
        #expect(ducked["found"] as? Bool == true)
        #expect(latency < 0.2, "\(latency) s")
        #expect(browser.call(["attr", ".strip[data-app=music]", "data-state"])?["value"] as? String == "ducked")
        _ = browser.call(["screenshot", Self.screenshots.appendingPathComponent("control-page-1280x800.png").path])
        _ = browser.call(["size", 390, 844])
        _ = browser.call(["screenshot", Self.screenshots.appendingPathComponent("control-page-390x844.png").path])
        _ = browser.call(["size", 1280, 800])
        #expect(try rig.query("/app/nav/deactivate")?.path == "/reply")
        #expect(browser.call(["wait_attr", ".strip[data-app=music]", "data-state", "active", 2])?["found"] as? Bool == true)

        // The silent switch on the page silences the ambient game.
        _ = browser.call(["click", "#silent"])
        try waitFor("the silent switch on") { (try? rig.query("/system/silent"))??.arguments.last == .int32(1) }
        #expect(browser.call(["wait_attr", ".strip[data-app=game]", "data-state", "silenced", 2])?["found"] as? Bool == true)
        _ = browser.call(["click", "#silent"])
        try waitFor("the silent switch off") { (try? rig.query("/system/silent"))??.arguments.last == .int32(0) }

        // Headphones plugged: last in wins, the picker follows; unplugged: back to the speaker,
        // and music (which played on the private route) is paused, as the page says.
        var phones: TestClient? = try TestClient(name: "phones", server: rig.server.name, inputs: ["in_1", "in_2"])
        #expect(browser.call(["wait_attr", "[data-route=headphones]", "aria-pressed", "true", 3])?["found"] as? Bool == true)
        phones?.close()
        phones = nil
        #expect(browser.call(["wait_attr", "[data-route=speaker]", "aria-pressed", "true", 3])?["found"] as? Bool == true)
        #expect(browser.call(["wait_text", ".strip[data-app=music] .why", "headphones went away", 3])?["found"] as? Bool == true)
        #expect(browser.call(["attr", "[data-route=headphones]", "disabled"])?["value"] as? String != nil, "an absent route cannot be picked")

        // The page's own controls reach the router.
        _ = browser.call(["click", ".strip[data-app=nav] .activate"])
        try waitFor("nav active") { (try? rig.settings())?["apps"].flatMap { ($0 as? [[String: Any]])?.first { $0["name"] as? String == "nav" }?["state"] as? String } == "active" }
        #expect(browser.call(["wait_text", ".strip[data-app=nav] .activate", "Deactivate", 2])?["found"] as? Bool == true)
        // The router restarts: the page says it is disconnected, comes back by itself, and shows
        // what the router has then, not what it showed before.
        rig.kill9()
        #expect(browser.call(["wait_attr", "body", "data-connected", "no", 3])?["found"] as? Bool == true)
        try rig.restart()
        #expect(browser.call(["wait_attr", "body", "data-connected", "yes", 5])?["found"] as? Bool == true)
        #expect(try rig.query("/app/music/volume", [.float(0.25)])?.path == "/reply")
        #expect(browser.call(["wait_slider", ".strip[data-app=music] [role=slider]", 0.25, 2])?["found"] as? Bool == true)
        let errors = (browser.call(["console"])?["errors"] as? [String] ?? ["no answer"])
            .filter { !$0.contains("WebSocket connection to") && !$0.contains("ERR_CONNECTION_REFUSED") }
        #expect(errors.isEmpty, "\(errors)")
        _ = browser.call(["quit"])
    }

    @Test("opened with the key in its link, the page may change an app another client registered, and the key leaves the address bar (kept for the tab across a reload); opened without it, it says it has its address's rights only, and the router refuses it that app")
    func rights() throws {
        let rig = try OSCRig(routes: Self.routes, http: true)
        defer { rig.close() }
        try FileManager.default.createDirectory(at: Self.screenshots, withIntermediateDirectories: true)
        let key = try #require(rig.pageKey())
        let owner = try PageKeyTests.synthOwnedByAnother(rig)
        let address = "http://127.0.0.1:\(rig.httpPort)/ui/"

        let person = try JSONLineScript("control_page.py", ["\(address)#key=\(key)"])
        let opened = try #require(person.call(["open", 1280, 800]))
        #expect(opened["live"] as? Bool == true && (opened["apps"] as? [String])?.contains("synth") == true, "\(opened)")
        #expect(person.call(["wait_attr", "body", "data-rights", "admin", 3])?["found"] as? Bool == true, "the router says the page has a person's rights")
        #expect(person.call(["attr", "#rights", "hidden"])?["value"] as? String != nil, "nothing to say about rights")
        #expect(person.call(["location"])?["href"] as? String == address, "the key is taken out of the address bar")
        #expect((person.call(["text", "html"])?["text"] as? String).map { !$0.contains(key) } ?? false, "nor shown in the page")
        _ = person.call(["fader", "synth", 0.5])
        try waitFor("synth at 0.5, set by the page") { (try? rig.query("/app/synth/volume"))??.arguments.last == .float(0.5) }
        let reloaded = try #require(person.call(["reload"]))
        #expect(reloaded["live"] as? Bool == true)
        #expect(person.call(["wait_attr", "body", "data-rights", "admin", 3])?["found"] as? Bool == true, "the key is kept for the tab")
        _ = person.call(["quit"])

        // Without the key: the page opens and works with its address's rights, and says so.
        let visitor = try JSONLineScript("control_page.py", [address])
        #expect(try #require(visitor.call(["open", 390, 844]))["live"] as? Bool == true)
        #expect(visitor.call(["wait_attr", "body", "data-rights", "address", 3])?["found"] as? Bool == true)
        #expect(visitor.call(["attr", "#rights", "hidden"])?["value"] as? String == nil, "the notice is shown")
        let notice = visitor.call(["text", "#rights"])?["text"] as? String ?? ""
        #expect(notice.contains("duckctl page"), "\(notice)")
        _ = visitor.call(["screenshot", Self.screenshots.appendingPathComponent("control-page-without-key-390x844.png").path])
        _ = visitor.call(["fader", "synth", 0.25])
        #expect(visitor.call(["wait_text", "#error", "only it or an osc.admin address may control it", 3])?["found"] as? Bool == true,
                "the router's refusal is shown")
        #expect(try rig.query("/app/synth/volume")?.arguments == [.string("/app/synth/volume"), .float(0.5)], "synth unchanged")
        _ = visitor.call(["click", "#silent"])
        try waitFor("the silent switch on, from the page without its key (a shared control)") {
            (try? rig.query("/system/silent"))??.arguments.last == .int32(1)
        }
        _ = visitor.call(["quit"])
        _ = owner
    }
}
