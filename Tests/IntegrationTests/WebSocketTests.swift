import Foundation
import JackRig
import OSCTransport
import Testing

/// Issue 17: OSCQuery's WebSocket from the running daemon, under jackd, driven by an OSCQuery
/// client written from the proposal in Python (Resources/oscquery_client.py) and by plain OSC
/// clients, over real sockets.
@Suite("OSCQuery WebSocket from the running daemon", .serialized)
struct WebSocketTests {
    @Test("over the WebSocket an OSC message sets a volume with the OSC reply; LISTEN pushes the change another OSC client makes; PATH_ADDED and PATH_REMOVED follow an app registered over OSC")
    func listenAndPaths() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let client = try OSCQueryClient(httpPort: Int(rig.httpPort))
        let info = try #require(client.call("hostinfo")?["hostinfo"] as? [String: Any])
        #expect(info["WS_PORT"] as? Int == Int(rig.httpPort))
        #expect(client.call("connect")?["connected"] as? Bool == true)

        // An OSC message in a binary frame: executed as over OSC TCP, answered the same way.
        client.osc("/app/music/volume", ("f", 0.5))
        let reply = client.until(["osc": "/reply", "args": ["/app/music/volume", 0.5]])
        #expect(reply.matched, "\(reply.frames)")
        let bad = { client.osc("/app/nosuchapp/volume", ("f", 0.5)); return client.until(["osc": "/error", "args": ["/app/nosuchapp/volume"]]) }()
        #expect(bad.matched && bad.frames.last?.oscFrame?.args.dropFirst().first as? Int == -3, "unknown app: \(bad.frames)")

        // LISTEN: the value now, then each change made elsewhere.
        #expect(client.call("listen", "/app/music/volume")?["sent"] as? Bool == true)
        #expect(client.until(["osc": "/app/music/volume", "args": [0.5]]).matched, "the value now")
        let other = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        let started = Date()
        #expect(try ask(other, OSCMessage("/app/music/volume", [.float(0.25)]))?.path == "/reply")
        let pushed = client.until(["osc": "/app/music/volume", "args": [0.25]])
        let latency = Date().timeIntervalSince(started)
        #expect(pushed.matched, "\(pushed.frames)")
        #expect(latency < 0.5, "pushed \(latency) s after the change")
        print("WebSocketTests: a change by another OSC client reached the listener in \(String(format: "%.3f", latency)) s")
        // IGNORE: no more of it. Shown by an event, not by silence: after the ignored path
        // changes, a listened one changes, and its push comes with nothing of the ignored one.
        #expect(client.call("ignore", "/app/music/volume")?["sent"] as? Bool == true)
        _ = client.call("listen", "/duck/level")
        #expect(client.until(["osc": "/duck/level"]).matched)
        #expect(try ask(other, OSCMessage("/app/music/volume", [.float(0.75)]))?.path == "/reply")
        #expect(try ask(other, OSCMessage("/duck/level", [.float(-21)]))?.path == "/reply")
        let after = client.until(["osc": "/duck/level", "args": [-21.0]])
        #expect(after.matched && !after.frames.contains { $0.oscFrame?.path == "/app/music/volume" }, "ignored, yet pushed: \(after.frames)")

        // Apps coming and going, registered by a plain OSC client.
        #expect(try ask(other, OSCMessage("/app/register", [.string("phone"), .string("playAndRecord")]))?.path == "/reply")
        let added = client.until(["command": "PATH_ADDED", "data": "/app/phone"])
        #expect(added.matched, "\(added.frames)")
        #expect(!added.frames.contains { $0.textFrame?.command == "PATH_ADDED" && ($0.textFrame?.data as? String)?.hasPrefix("/app/phone/") == true },
                "one PATH_ADDED for the app, not one per method")
        let fetched = try #require(client.call("get", "/app/phone")?["json"] as? [String: Any])
        #expect(fetched["FULL_PATH"] as? String == "/app/phone")
        #expect(try ask(other, OSCMessage("/app/phone/unregister"))?.path == "/reply")
        #expect(client.until(["command": "PATH_REMOVED", "data": "/app/phone"]).matched)
    }

    @Test("ownership as over OSC TCP: an app the WebSocket registers is its own until it closes; another's app is refused to a WebSocket without the page's key, allowed to one with it (a person's rights)")
    func ownership() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let other = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        // A plain OSC client registers an app; only it (or a person's surface) may change it.
        #expect(try ask(other, OSCMessage("/app/register", [.string("synth"), .string("ambient")]))?.path == "/reply")
        var client = try OSCQueryClient(httpPort: Int(rig.httpPort))
        _ = client.call("connect")
        client.osc("/app/register", ("s", "wsapp"), ("s", "ambient"))
        #expect(client.until(["osc": "/reply", "args": ["/app/register", "wsapp"]]).matched)
        let refused = try ask(other, OSCMessage("/app/wsapp/volume", [.float(0.5)]))
        #expect(refused?.path == "/error" && refused?.arguments.dropFirst().first == .int32(-5), "owned by the WebSocket: \(String(describing: refused))")
        client.osc("/app/synth/volume", ("f", 0.5))
        let notOwner = client.until(["osc": "/error", "args": ["/app/synth/volume", -5]])
        #expect(notOwner.matched, "a program's WebSocket is an OSC TCP peer, not admin: \(notOwner.frames)")
        let page = try OSCQueryClient(httpPort: Int(rig.httpPort))
        _ = page.call("connect_with", try #require(rig.pageKey()), "http://127.0.0.1:\(rig.httpPort)")
        page.osc("/app/synth/volume", ("f", 0.5))
        #expect(page.until(["osc": "/reply", "args": ["/app/synth/volume", 0.5]]).matched, "the page with its key is a person's surface: it may change any app")
        // Notifications ride on the WebSocket like on a TCP connection.
        client.osc("/subscribe")
        #expect(client.until(["osc": "/reply", "args": ["/subscribe"]]).matched)
        #expect(try ask(other, OSCMessage("/system/silent", [.int32(1)]))?.path == "/reply")
        #expect(client.until(["osc": "/duckrouter/silent", "args": [1]]).matched)
        // The WebSocket closes: its app is free.
        _ = client.call("close")
        client = try OSCQueryClient(httpPort: Int(rig.httpPort))
        try waitFor("the WebSocket's app to be free") {
            (try? ask(other, OSCMessage("/app/wsapp/volume", [.float(0.5)])))?.path == "/reply"
        }
        let state = try rig.settings()
        let subscribers = state["subscribers"] as? [String] ?? []
        #expect(subscribers.isEmpty, "the closed WebSocket's subscription is gone: \(subscribers)")
    }

    @Test("Origin grants nothing: a WebSocket client that is not a browser, from an allowed address that is not osc.admin, sending an Origin equal to Host, gets -5 for an app another client registered")
    func originGrantsNothing() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let other = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(other, OSCMessage("/app/register", [.string("synth"), .string("ambient")]))?.path == "/reply")
        let script = try OSCQueryClient(httpPort: Int(rig.httpPort))
        #expect(script.call("connect_as_page")?["connected"] as? Bool == true, "an Origin equal to Host passes the browser check")
        script.osc("/app/synth/volume", ("f", 0.5))
        let refused = script.until(["osc": "/error", "args": ["/app/synth/volume", -5]])
        #expect(refused.matched, "an Origin header is no proof of who sends it: \(refused.frames)")
        #expect(try ask(other, OSCMessage("/app/synth/volume"))?.arguments == [.string("/app/synth/volume"), .float(1)], "synth's volume unchanged")
    }

    /// A router playing music at 0.5 (-6.02 dBFS), heard at the speaker, and a WebSocket client
    /// connected to it. The caller closes the rig.
    static func musicAtHalf() throws -> (OSCRig, OSCQueryClient) {
        let rig = try OSCRig(http: true)
        rig.play(music: 0.5)
        rig.expectLevel(.speaker1, 0.5)
        do {
            let client = try OSCQueryClient(httpPort: Int(rig.httpPort))
            _ = client.call("connect")
            return (rig, client)
        } catch {
            rig.close()
            throw error
        }
    }

    @Test("LISTEN to a meter: its own path at 20 Hz with the peak per channel in dBFS, nothing of other meters; IGNORE stops it")
    func meters() throws {
        let (rig, client) = try Self.musicAtHalf()
        defer { rig.close() }
        _ = client.call("listen", "/app/music/meter")
        #expect(client.until(["osc": "/app/music/meter"]).matched)
        let second = client.drain(1)
        let meters = second.compactMap(\.oscFrame).filter { $0.path == "/app/music/meter" }
        print("WebSocketTests: \(meters.count) /app/music/meter frames in 1 s; last \(meters.last?.args ?? [])")
        // At most 20 a second (the cap); at least some (a loaded machine may send fewer).
        #expect((8...22).contains(meters.count), "about 20 a second: \(meters.count)")
        #expect(second.allSatisfy { $0.oscFrame?.path == "/app/music/meter" }, "only the listened meter: \(Set(second.compactMap { $0.oscFrame?.path }))")
        let peaks = meters.last?.args.compactMap { $0 as? Double } ?? []
        #expect(peaks.count == 2 && peaks.allSatisfy { abs($0 - -6.02) < 0.1 }, "0.5 is -6.02 dBFS: \(peaks)")
        _ = client.call("ignore", "/app/music/meter")
        _ = client.call("listen", "/duck/level")
        let after = client.until(["osc": "/duck/level"])
        #expect(after.matched)
        // At most those already on their way when IGNORE came (one being written, one waiting in
        // the meter slot); listened, 0.5 s would bring about ten.
        let later = client.drain(0.5).filter { $0.oscFrame?.path == "/app/music/meter" }
        #expect(later.count <= 2, "ignored, yet \(later.count) meter frames in 0.5 s")
    }

    /// `/meters` over the WebSocket is answered by the OSC server as over TCP; the bundles come
    /// from the HTTP server's event loop (`PageMeters`), at the rate asked for.
    @Test("/meters over the WebSocket: the OSC reply, then /duckrouter/meter bundles at the rate asked for with the peak per channel; /meters 0 stops them")
    func oscMeters() throws {
        let (rig, client) = try Self.musicAtHalf()
        defer { rig.close() }
        client.osc("/meters", ("f", 10))
        #expect(client.until(["osc": "/reply", "args": ["/meters", 10.0]]).matched)
        #expect(client.until(["osc": "/duckrouter/meter", "args": ["app", "music"]]).matched)
        let second = client.drain(1).compactMap(\.oscFrame).filter { $0.path == "/duckrouter/meter" && $0.args.count > 1 && $0.args[1] as? String == "music" }
        print("WebSocketTests: \(second.count) music meters in 1 s at 10 Hz; last \(second.last?.args ?? [])")
        // At most 10 a second (the rate); at least some (a loaded machine may send fewer).
        #expect((4...11).contains(second.count), "about 10 a second: \(second.count)")
        let peaks = second.last?.args.dropFirst(2).compactMap { $0 as? Double } ?? []
        #expect(peaks.count == 2 && peaks.allSatisfy { abs($0 - -6.02) < 0.1 }, "0.5 is -6.02 dBFS: \(peaks)")
        let subscribed = try rig.settings()["meterSubscribers"] as? [String] ?? []
        #expect(subscribed.count == 1 && subscribed.first?.hasPrefix("osc.tcp://") == true, "/state lists the page: \(subscribed)")
        client.osc("/meters", ("f", 0))
        #expect(client.until(["osc": "/reply", "args": ["/meters", 0.0]]).matched)
        #expect((try rig.settings()["meterSubscribers"] as? [String])?.isEmpty == true)
        // At most those already on their way when /meters 0 came; at 10 Hz 1 s would bring ten.
        let later = client.drain(1).compactMap(\.oscFrame).filter { $0.path == "/duckrouter/meter" && $0.args.count > 1 && $0.args[1] as? String == "music" }
        #expect(later.count <= 2, "stopped, yet \(later.count) music meters in 1 s")
    }

    @Test("/meters/levels over the WebSocket: /duckrouter/levels with peak and RMS per channel (DC 0.5: both -6.02 dBFS); 0 stops them")
    func oscLevels() throws {
        let (rig, client) = try Self.musicAtHalf()
        defer { rig.close() }
        client.osc("/meters/levels", ("f", 10))
        #expect(client.until(["osc": "/reply", "args": ["/meters/levels", 10.0]]).matched)
        #expect(client.until(["osc": "/duckrouter/levels", "args": ["app", "music"]]).matched)
        let frames = client.drain(1).compactMap(\.oscFrame).filter { $0.path == "/duckrouter/levels" && $0.args.count > 1 && $0.args[1] as? String == "music" }
        print("WebSocketTests: \(frames.count) music levels in 1 s at 10 Hz; last \(frames.last?.args ?? [])")
        #expect((4...11).contains(frames.count), "about 10 a second: \(frames.count)")
        let levels = frames.last?.args.dropFirst(2).compactMap { $0 as? Double } ?? []
        #expect(levels.count == 4 && levels.allSatisfy { abs($0 - -6.02) < 0.1 }, "peak, RMS per channel, 0.5 is -6.02 dBFS: \(levels)")
        let subscribed = try rig.settings()["levelSubscribers"] as? [String] ?? []
        #expect(subscribed.count == 1 && subscribed.first?.hasPrefix("osc.tcp://") == true, "/state lists the page: \(subscribed)")
        #expect((try rig.state()["engine"] as? [String: Any])?["measuresRMS"] as? Bool == true)
        client.osc("/meters/levels", ("f", 0))
        #expect(client.until(["osc": "/reply", "args": ["/meters/levels", 0.0]]).matched)
        #expect((try rig.settings()["levelSubscribers"] as? [String])?.isEmpty == true)
        #expect((try rig.state()["engine"] as? [String: Any])?["measuresRMS"] as? Bool == false, "no subscriber: RMS no longer measured")
        let later = client.drain(1).compactMap(\.oscFrame).filter { $0.path == "/duckrouter/levels" }
        #expect(later.count <= 2, "stopped, yet \(later.count) level messages in 1 s")
    }

    @Test("Chataigne's flow: HOST_INFO, the namespace, a WebSocket on the HTTP port, one LISTEN per parameter; changes arrive, no errors")
    func chataigneFlow() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let client = try OSCQueryClient(httpPort: Int(rig.httpPort))
        let flow = try #require(client.call("chataigne"))
        let paths = flow["paths"] as? [String] ?? []
        #expect(flow["name"] as? String == "duckrouter")
        #expect(paths.count >= 30, "\(paths.count) parameters: \(paths)")
        #expect(paths.contains("/duck/level") && paths.contains("/app/nav/state") && paths.contains("/route/speaker/volume"))
        let initial = client.drain(1)
        #expect(!initial.contains { $0.textFrame?.command == "ERROR" }, "\(initial.filter { $0.textFrame != nil })")
        #expect(Set(initial.compactMap { $0.oscFrame?.path }).count == paths.count, "each parameter's value once: \(initial.count) frames")
        _ = try rig.query("/duck/level", [.float(-20)])
        #expect(client.until(["osc": "/duck/level", "args": [-20.0]]).matched)
        _ = try rig.query("/app/nav/activate")
        // Both changes come from one look, in no particular order.
        let ducked = client.until(["osc": "/app/music/state", "args": ["ducked"]])
        #expect(ducked.matched, "\(ducked.frames)")
        let navActive = { (frame: [String: Any]) in frame.oscFrame?.path == "/app/nav/state" && frame.oscFrame?.args.first as? String == "active" }
        #expect(ducked.frames.contains(where: navActive) || client.until(["osc": "/app/nav/state", "args": ["active"]], timeout: 1).matched)
    }

    @Test("bad input on the WebSocket: garbage commands and unknown paths get an ERROR, garbage OSC is dropped, an oversized message closes only that connection; other sites' pages and hosts get 403; OSC and audio go on")
    func badInput() throws {
        let rig = try OSCRig(osc: #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32"]"#, http: true)
        defer { rig.close() }
        rig.play(music: 0.5)
        rig.expectLevel(.speaker1, 0.5)
        let client = try OSCQueryClient(httpPort: Int(rig.httpPort))
        _ = client.call("connect")
        for text in ["not json", "{}", #"{"COMMAND": "LISTEN", "DATA": "/no/such/path"}"#, #"{"COMMAND": "LISTEN", "DATA": "/app/music/activate"}"#,
                     #"{"COMMAND": "SHOUT", "DATA": "/"}"#] {
            _ = client.call("text", text)
            let error = client.until(["command": "ERROR"], timeout: 2)
            #expect(error.matched, "\(text): \(error.frames)")
        }
        _ = client.call("binary_hex", "deadbeef")
        _ = client.call("binary_hex", "")
        client.osc("/route/select")
        #expect(client.until(["osc": "/reply", "args": ["/route/select", "speaker"]]).matched, "still served after garbage OSC")
        // A message over 64 KB: that connection is closed, nothing else is.
        _ = client.call("binary_hex", String(repeating: "00", count: 70_000))
        #expect(client.until(["close": true]).matched, "the connection that sent 70 kB is closed")
        let second = try OSCQueryClient(httpPort: Int(rig.httpPort))
        _ = second.call("connect")
        second.osc("/route/select")
        #expect(second.until(["osc": "/reply", "args": ["/route/select", "speaker"]]).matched, "a new WebSocket is served")

        // The upgrade refused to other sites' pages, to names that are not this machine's, and to
        // addresses outside osc.allow.
        func upgrade(host: String, origin: String?, source: String? = nil) throws -> HTTPClient.Response {
            var request = "GET / HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            if let origin { request += "Origin: \(origin)\r\n" }
            return try HTTPClient.send(port: rig.httpPort, Data((request + "\r\n").utf8), source: source, timeout: 3)
        }
        let own = try upgrade(host: "127.0.0.1:\(rig.httpPort)", origin: "http://127.0.0.1:\(rig.httpPort)")
        #expect(own.status == 101, "the router's own page: \(own.status)")
        let foreign = try upgrade(host: "127.0.0.1:\(rig.httpPort)", origin: "http://evil.example")
        #expect(foreign.status == 403 && foreign.text.contains("evil.example"), "\(foreign.status) \(foreign.text)")
        let rebound = try upgrade(host: "evil.example:\(rig.httpPort)", origin: "http://evil.example:\(rig.httpPort)")
        #expect(rebound.status == 403 && rebound.text.contains("not this machine"), "\(rebound.status) \(rebound.text)")
        // A rebound name cannot read either.
        let reboundRead = try HTTPClient.send(port: rig.httpPort,
                                              Data("GET /remote/nowPlaying?VALUE HTTP/1.1\r\nHost: evil.example:\(rig.httpPort)\r\nConnection: close\r\n\r\n".utf8))
        #expect(reboundRead.status == 403 && reboundRead.text.contains("not this machine"), "\(reboundRead.status) \(reboundRead.text)")
        let outside = try upgrade(host: "127.0.0.2:\(rig.httpPort)", origin: nil, source: "127.0.0.2")
        #expect(outside.status == 403 && outside.text.contains("osc.allow"), "\(outside.status) \(outside.text) \(outside.headers)")

        #expect(try rig.query("/route/select")?.arguments == [.string("/route/select"), .string("speaker")], "OSC still answers")
        rig.expectLevel(.speaker1, 0.5)
    }

    @Test("100 WebSockets asked for at once from four addresses: 64 are opened (16 from each) and hold their slots, the others get 503 at once; OSC and audio go on; closed, the slots come back")
    func hundredAtOnce() throws {
        let rig = try OSCRig(osc: #", "allow": ["127.0.0.1/32", "127.0.0.4/30"]"#, http: true)
        defer { rig.close() }
        rig.play(music: 0.5)
        let request = Data(("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(rig.httpPort)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        for k in 0..<100 { sockets.append(try HTTPClient.connection(port: rig.httpPort, request, source: "127.0.0.\(4 + k % 4)", timeout: 5)) }
        /// The status of the first answer on `fd`.
        func status(_ fd: Int32) -> Int? {
            var received = Data()
            var byte: UInt8 = 0
            while received.last != 10, received.count < 200, recv(fd, &byte, 1, 0) == 1 { received.append(byte) }
            let parts = String(decoding: received, as: UTF8.self).split(separator: " ")
            return parts.count >= 2 ? Int(parts[1]) : nil
        }
        let statuses = sockets.map(status)
        let opened = statuses.filter { $0 == 101 }.count
        let refused = statuses.filter { $0 == 503 }.count
        print("WebSocketTests: 100 upgrades at once: \(opened) opened, \(refused) answered 503")
        #expect(opened == 64 && refused == 36, "\(statuses)")
        let http = try HTTPLimitsTests.httpState(rig)
        #expect(http["open"] == 64 && http["webSockets"] == 64 && http["turnedAway"] == 36, "/state: \(http)")
        #expect(try rig.query("/route/select")?.arguments == [.string("/route/select"), .string("speaker")], "OSC still answers")
        rig.expectLevel(.speaker1, 0.5)
        let busy = try HTTPClient.get(port: rig.httpPort, "/?HOST_INFO", timeout: 3)
        #expect(busy.status == 503, "every slot is held by a WebSocket")
        for fd in sockets { close(fd) }
        sockets.removeAll()
        try waitFor("the slots to come back") { (try? HTTPClient.get(port: rig.httpPort, "/?HOST_INFO", timeout: 2))?.status == 200 }
    }

    @Test("a WebSocket that never reads while it asks for meters and floods requests delays nobody: OSC answers, audio plays, other listeners get their changes, the daemon's memory stays bounded")
    func neverReading() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        rig.play(music: 0.5)
        let listener = try OSCQueryClient(httpPort: Int(rig.httpPort))
        _ = listener.call("connect")
        _ = listener.call("listen", "/app/music/volume")
        #expect(listener.until(["osc": "/app/music/volume"]).matched)
        let rssBefore = residentKilobytes(rig.daemon.processIdentifier)
        let stuck = try OSCQueryClient(httpPort: Int(rig.httpPort))
        _ = stuck.call("connect")
        stuck.osc("/meters", ("f", 50))
        _ = stuck.call("chataigne")
        // 4000 /state requests, never read: each reply is several kB.
        #expect(stuck.call("flood", 4000, "/state")?["sent"] as? Int == 4000)
        for k in 1...5 {
            let value = Float(k) / 10
            #expect(try rig.query("/app/music/volume", [.float(value)])?.path == "/reply")
            #expect(listener.until(["osc": "/app/music/volume", "args": [Double(value)]]).matched, "the other listener at \(value)")
        }
        let rssAfter = residentKilobytes(rig.daemon.processIdentifier)
        print("WebSocketTests: RSS before the stuck client \(rssBefore) kB, after 4000 unread /state replies \(rssAfter) kB")
        #expect(rssAfter - rssBefore < 32_000, "\(rssBefore) → \(rssAfter) kB")
        // The stuck peer does not keep its connection: a frame that waits 10 s for its socket
        // closes it (its pings wait behind that frame, so they could not).
        let started = Date()
        try waitFor("the stuck WebSocket to be closed", timeout: 30) {
            rig.log.contains("closing a WebSocket that has not taken a frame for 10 s")
        }
        print("WebSocketTests: the stuck WebSocket was closed \(String(format: "%.1f", Date().timeIntervalSince(started))) s after the check began")
        _ = listener.call("listen", "/app/music/volume")
        #expect(listener.until(["osc": "/app/music/volume"]).matched, "the other listener is still served")
        #expect(try rig.query("/app/music/volume", [.float(1)])?.path == "/reply")
        rig.expectLevel(.speaker1, 0.5)
    }
}

/// A process's resident memory in kB (VmRSS), 0 if unreadable.
func residentKilobytes(_ pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}
