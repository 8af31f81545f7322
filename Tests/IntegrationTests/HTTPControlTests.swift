import Foundation
import JackRig
import OSCTransport
import Testing

/// Issue 17, first slice: OSCQuery over HTTP from the running daemon, under jackd, over real
/// sockets (HTTPClient), with OSC driving the changes.
@Suite("OSCQuery over HTTP from the running daemon", .serialized)
struct HTTPControlTests {
    @Test("HOST_INFO and the namespace at / describe the session's apps and routes, with values read now")
    func hostInfoAndNamespace() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let info = try HTTPClient.get(port: rig.httpPort, "/?HOST_INFO")
        #expect(info.status == 200 && info.headers["content-type"] == "application/json")
        let host = try info.json()
        #expect(host["NAME"] as? String == "duckrouter")
        #expect(host["OSC_IP"] as? String == "127.0.0.1")
        #expect(host["OSC_PORT"] as? Int == Int(rig.port))
        #expect(host["OSC_TRANSPORT"] as? String == "UDP")
        let extensions = try #require(host["EXTENSIONS"] as? [String: Bool])
        #expect(extensions["VALUE"] == true && extensions["RANGE"] == true && extensions["ACCESS"] == true)
        #expect(extensions["LISTEN"] == true && extensions["PATH_ADDED"] == true && extensions["PATH_REMOVED"] == true)
        #expect(host["WS_IP"] as? String == "127.0.0.1" && host["WS_PORT"] as? Int == Int(rig.httpPort), "the WebSocket is on the HTTP port")
        // The path is irrelevant to HOST_INFO (OSCQueryProposal), even one that has no node.
        let elsewhere = try HTTPClient.get(port: rig.httpPort, "/no/such/node?HOST_INFO")
        #expect(elsewhere.status == 200 && (try? elsewhere.json()["OSC_PORT"] as? Int) == Int(rig.port), "\(elsewhere.status) \(elsewhere.text)")

        let root = try HTTPClient.get(port: rig.httpPort, "/").json()
        #expect(root["FULL_PATH"] as? String == "/")
        let top = try #require(root["CONTENTS"] as? [String: [String: Any]])
        #expect(Set(top.keys) == ["app", "system", "route", "remote", "duck", "scene", "cue"])
        let apps = try #require(top["app"]?["CONTENTS"] as? [String: [String: Any]])
        #expect(Set(apps.keys) == ["register", "music", "nav", "game"])
        let routes = try #require(top["route"]?["CONTENTS"] as? [String: [String: Any]])
        #expect(Set(routes.keys) == ["select", "speaker", "headphones"])
        let select = try #require(routes["select"])
        #expect(select["VALUE"] as? [String] == ["speaker"] && select["ACCESS"] as? Int == 3)
        let music = try #require(apps["music"]?["CONTENTS"] as? [String: [String: Any]])
        #expect(music["state"]?["VALUE"] as? [String] == ["active"] && music["state"]?["ACCESS"] as? Int == 1)
        #expect(music["category"]?["VALUE"] as? [String] == ["playback", "", "default"])
        #expect(music["remote"]?["VALUE"] as? [String] == ["nextTrack,pause,play"])
        #expect(music["volume"]?["TYPE"] as? String == "f" && music["volume"]?["VALUE"] as? [Double] == [1])
        let nav = try #require(apps["nav"]?["CONTENTS"] as? [String: [String: Any]])
        #expect(nav["state"]?["VALUE"] as? [String] == ["inactive"])

        // One node, and one attribute of one node.
        let level = try HTTPClient.get(port: rig.httpPort, "/duck/level").json()
        #expect(level["FULL_PATH"] as? String == "/duck/level" && level["VALUE"] as? [Double] == [-14] && level["UNIT"] as? [String] == ["gain.db"])
        #expect(try HTTPClient.get(port: rig.httpPort, "/duck/level?TYPE").json() as NSDictionary == ["TYPE": "f"])
    }

    @Test("a volume changed over OSC reads back with ?VALUE; HEAD answers the same without a body")
    func valueFollowsOSC() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        #expect(try HTTPClient.get(port: rig.httpPort, "/app/music/volume?VALUE").json()["VALUE"] as? [Double] == [1])
        // The reply comes once the change has applied.
        let reply = try #require(try rig.query("/app/music/volume", [.float(0.5)]))
        #expect(reply.path == "/reply")
        #expect(try HTTPClient.get(port: rig.httpPort, "/app/music/volume?VALUE").json()["VALUE"] as? [Double] == [0.5])
        let gain = try #require(try HTTPClient.get(port: rig.httpPort, "/app/music/gain?VALUE").json()["VALUE"] as? [Double])
        #expect(gain.count == 1 && abs(gain[0] - -18.06) < 0.01, "\(gain)")
        // The system volume of the current route, and that route's own node, agree.
        _ = try #require(try rig.query("/system/volume", [.float(0.25)]))
        #expect(try HTTPClient.get(port: rig.httpPort, "/system/volume?VALUE").json()["VALUE"] as? [Double] == [0.25])
        #expect(try HTTPClient.get(port: rig.httpPort, "/route/speaker/volume?VALUE").json()["VALUE"] as? [Double] == [0.25])
        // An app's state follows activation.
        _ = try #require(try rig.query("/app/nav/activate"))
        #expect(try HTTPClient.get(port: rig.httpPort, "/app/nav/state?VALUE").json()["VALUE"] as? [String] == ["active"])
        #expect(try HTTPClient.get(port: rig.httpPort, "/app/music/state?VALUE").json()["VALUE"] as? [String] == ["ducked"])

        let head = try HTTPClient.get(port: rig.httpPort, "/app/music/volume?VALUE", method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty && head.headers["content-length"] == "15", "\(head.headers)")

        // Pipelined in one packet, HEAD then GET and GET then HEAD: each response has its own body
        // or none, so the bytes are two whole responses, and the connection ends at once.
        let volume = "GET /app/music/volume?VALUE HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (first, second) in [(volume.replacingOccurrences(of: "GET", with: "HEAD"), volume), (volume, volume.replacingOccurrences(of: "GET", with: "HEAD"))] {
            let started = Date()
            let bytes = try HTTPClient.exchange(port: rig.httpPort, Data((first + "\r\n" + second + "Connection: close\r\n\r\n").utf8), timeout: 8)
            let text = String(decoding: bytes, as: UTF8.self)
            let responses = text.components(separatedBy: "HTTP/1.1 200 OK\r\n")
            #expect(responses.count == 3 && responses[0].isEmpty, "\(first.prefix(4)) then \(second.prefix(4)): \(text)")
            let bodies = responses.dropFirst().map { $0.components(separatedBy: "\r\n\r\n").dropFirst().joined() }
            let expected = first.hasPrefix("HEAD") ? ["", "{\"VALUE\":[0.5]}"] : ["{\"VALUE\":[0.5]}", ""]
            #expect(bodies == expected, "\(first.prefix(4)) then \(second.prefix(4)): \(bodies)")
            #expect(Date().timeIntervalSince(started) < 3, "\(first.prefix(4)) then \(second.prefix(4)): not closed at once")
        }
    }

    @Test("unknown paths 404, bad queries 400, an absent attribute 204, other methods 405, oversized and malformed requests 4xx; nothing changes and OSC keeps answering")
    func badRequests() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let before = try rig.settings()
        let port = rig.httpPort
        #expect(try HTTPClient.get(port: port, "/nope").status == 404)
        #expect(try HTTPClient.get(port: port, "/app/nosuchapp/volume").status == 404)
        #expect(try HTTPClient.get(port: port, "/app/music/volume/deeper").status == 404)
        #expect(try HTTPClient.get(port: port, "/?NOT_AN_ATTRIBUTE").status == 400)
        #expect(try HTTPClient.get(port: port, "/app/music/volume?VALUE=0.1").status == 400, "no setting through a query")
        #expect(try HTTPClient.get(port: port, "/app/%ZZ").status == 400)
        #expect(try HTTPClient.get(port: port, "/app?VALUE").status == 204, "a container has no VALUE")
        #expect(try HTTPClient.get(port: port, "/app/music/activate?TYPE").status == 204)
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            let response = try HTTPClient.get(port: port, "/app/music/volume", method: method)
            #expect(response.status == 405 && response.headers["allow"] == "GET, HEAD", "\(method): \(response.status)")
        }
        let body = Data("POST /app/music/volume HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n".utf8) + Data(count: 100_000)
        #expect(try HTTPClient.send(port: port, body).status == 413)
        // The same without Connection: close: answered, then closed (not left open to read the rest).
        let keptAlive = Data("POST /app/music/volume HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n".utf8) + Data(count: 100_000)
        let started = Date()
        let tooLarge = try HTTPClient.send(port: port, keptAlive, timeout: 4)
        #expect(tooLarge.status == 413 && tooLarge.headers["connection"] == "close")
        #expect(Date().timeIntervalSince(started) < 3, "the server closes after a 413 (took \(Date().timeIntervalSince(started)) s)")
        // HEAD gets no body, whatever the status.
        let headTooLarge = try HTTPClient.send(port: port, Data("HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n".utf8) + Data(count: 100_000), timeout: 4)
        #expect(headTooLarge.status == 413 && headTooLarge.body.isEmpty, "\(headTooLarge.status): \(headTooLarge.text)")
        let headMissing = try HTTPClient.get(port: port, "/nope", method: "HEAD")
        #expect(headMissing.status == 404 && headMissing.body.isEmpty)
        let header = Data("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: \(String(repeating: "a", count: 64 * 1024))\r\nConnection: close\r\n\r\n".utf8)
        #expect((400..<500).contains(try HTTPClient.send(port: port, header).status))
        let garbage = try HTTPClient.send(port: port, Data("\u{1}\u{2}NOT HTTP AT ALL\r\n\r\n".utf8))
        #expect((400..<500).contains(garbage.status))
        // A connection that sends half a request and goes away: no answer to half a request.
        let half = try HTTPClient.exchange(port: port, Data("GET /app/mu".utf8), timeout: 0.3)
        #expect(half.isEmpty, "answered half a request: \(String(decoding: half, as: UTF8.self))")

        #expect(try HTTPClient.get(port: port, "/?HOST_INFO").status == 200, "HTTP still answers")
        #expect(try rig.query("/route/select")?.arguments == [.string("/route/select"), .string("speaker")], "OSC still answers")
        #expect(NSDictionary(dictionary: try rig.settings()) == NSDictionary(dictionary: before), "nothing changed")
    }

    @Test("a sender outside osc.allow gets 403 for everything and changes nothing; an allowed one is answered")
    func outsideAllowList() throws {
        // Bound to every interface, admitting 127.0.0.1 only: 127.0.0.2 reaches the port but is refused.
        let rig = try OSCRig(osc: #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32"]"#, http: true)
        defer { rig.close() }
        let before = try rig.settings()
        for (method, target) in [("GET", "/"), ("GET", "/?HOST_INFO"), ("GET", "/app/music/volume?VALUE"), ("POST", "/app/music/volume"), ("GET", "/nope")] {
            let refused = try HTTPClient.get(port: rig.httpPort, target, method: method, source: "127.0.0.2")
            #expect(refused.status == 403, "\(method) \(target): \(refused.status)")
            #expect(refused.text.contains("osc.allow"))
        }
        // The answer is written before the request is read: the same for HEAD.
        let head = try HTTPClient.get(port: rig.httpPort, "/", method: "HEAD", source: "127.0.0.2")
        #expect(head.status == 403, "HEAD: \(head.status) \(head.text)")
        // Without Connection: close the refusal still closes the connection at once.
        let started = Date()
        let keptAlive = try HTTPClient.send(port: rig.httpPort, Data("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8), source: "127.0.0.2", timeout: 4)
        #expect(keptAlive.status == 403 && keptAlive.headers["connection"] == "close")
        #expect(Date().timeIntervalSince(started) < 2, "a refused connection is closed, not kept (took \(Date().timeIntervalSince(started)) s)")
        let allowed = try HTTPClient.get(port: rig.httpPort, "/app/music/volume?VALUE", source: "127.0.0.1")
        #expect(allowed.status == 200)
        #expect(try allowed.json()["VALUE"] as? [Double] == [1])
        #expect(rig.log.contains("refused HTTP from a sender outside osc.allow"))
        #expect(NSDictionary(dictionary: try rig.settings()) == NSDictionary(dictionary: before), "nothing changed")
    }

    @Test("refused and slow peers cannot hold the connection slots: an allowed GET is still answered, 503 over the limit, slots come back")
    func slotsCannotBeHeld() throws {
        let rig = try OSCRig(osc: #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32", "127.0.0.4/30"]"#, http: true)
        defer { rig.close() }
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        func release() {
            for fd in held { close(fd) }
            held.removeAll()
        }
        // 64 refused peers that start a large body and never read, and 16 that send nothing.
        let slowBody = Data("POST /app/music/volume HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n0123456789".utf8)
        for _ in 0..<64 { held.append(try HTTPClient.connection(port: rig.httpPort, slowBody, source: "127.0.0.2")) }
        for _ in 0..<16 { held.append(try HTTPClient.connection(port: rig.httpPort, Data(), source: "127.0.0.2")) }
        var started = Date()
        let answered = try HTTPClient.get(port: rig.httpPort, "/?HOST_INFO", source: "127.0.0.1", timeout: 3)
        #expect(answered.status == 200, "\(answered.status) \(answered.text)")
        #expect(Date().timeIntervalSince(started) < 3)
        release()

        // 64 allowed peers in the middle of a slow body, 16 from each of four addresses (the most
        // one address may hold), hold every slot: the next one is told so at once, and the slots
        // come back when their requests run out of time (10 s).
        for source in ["127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7"] {
            for _ in 0..<16 { held.append(try HTTPClient.connection(port: rig.httpPort, slowBody, source: source)) }
        }
        try waitFor("the 64 connections to be admitted", timeout: 5) { (try? HTTPLimitsTests.httpState(rig))?["open"] == 64 }
        started = Date()
        let busy = try HTTPClient.get(port: rig.httpPort, "/?HOST_INFO", source: "127.0.0.1", timeout: 3)
        #expect(busy.status == 503 && busy.text.contains("too many"), "\(busy.status) \(busy.text)")
        #expect(Date().timeIntervalSince(started) < 3)
        let headBusy = try HTTPClient.get(port: rig.httpPort, "/", method: "HEAD", source: "127.0.0.1", timeout: 3)
        #expect(headBusy.status == 503)
        try waitFor("the slow requests to time out", timeout: 16) {
            (try? HTTPClient.get(port: rig.httpPort, "/?HOST_INFO", source: "127.0.0.1", timeout: 2))?.status == 200
        }
        #expect(Date().timeIntervalSince(started) > 5, "the slots were held until the deadline, not dropped at once")
        #expect(try rig.query("/route/select") != nil, "OSC still answers")
    }

    @Test("an HTTP port taken by another program stops the daemon with exit code 1, saying which")
    func offAndTaken() throws {
        let server = try JackServer()
        defer { server.stop() }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-http-\(getpid())-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let state = log.deletingPathExtension().appendingPathExtension("state.json")
        defer { removeStateFiles(state) }
        // A listener of this test's own holds the HTTP port.
        let squatter = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(squatter) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(squatter, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        #expect(bound == 0 && listen(squatter, 1) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(squatter, $0, &length) } }
        let taken = UInt16(bigEndian: address.sin_port)
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let oscPort = try OSCPorts.free()
        let daemon = try launchDaemon(["--server", server.name, "--osc-port", "\(oscPort)", "--http-port", "\(taken)", "--state", state.path,
                                       DaemonTests.repository.appendingPathComponent("Sessions/default.json").path], log: log)
        try waitFor("the daemon to exit", timeout: 10) { !daemon.isRunning }
        #expect(daemon.terminationStatus == 1)
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(text.contains("cannot listen for HTTP on 127.0.0.1:\(taken)"), "\(text)")
        #expect(!text.contains("OSC listening"), "it stops before OSC listens and JACK ports are made: \(text)")

        // A port the session names is asked for just the same.
        let session = log.deletingPathExtension().appendingPathExtension("session.json")
        defer { try? FileManager.default.removeItem(at: session) }
        try #"{"osc": {"port": \#(oscPort)}, "http": {"port": \#(taken)}}"#.write(to: session, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let fromSession = Process()
        fromSession.executableURL = DaemonTests.binary
        fromSession.arguments = ["--server", server.name, "--state", state.path, session.path]
        fromSession.standardError = try FileHandle(forWritingTo: log)
        fromSession.standardOutput = FileHandle.nullDevice
        try fromSession.run()
        defer { if fromSession.isRunning { fromSession.terminate() }; finish(fromSession) }
        try waitFor("the daemon to exit", timeout: 10) { !fromSession.isRunning }
        #expect(fromSession.terminationStatus == 1)
        #expect(((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("cannot listen for HTTP on 127.0.0.1:\(taken)"))
    }

    @Test("the default HTTP port taken (a second instance) turns HTTP off with a warning; the daemon runs")
    func defaultPortTaken() throws {
        let server = try JackServer()
        defer { server.stop() }
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-httpdefault-\(getpid())-\(UUID().uuidString)")
        let session = base.appendingPathExtension("json"), log = base.appendingPathExtension("log")
        let state = base.appendingPathExtension("state.json")
        defer { for file in [session, log] { try? FileManager.default.removeItem(at: file) }; removeStateFiles(state) }
        // Hold 9952 (unless another program already does: taken either way).
        let squatter = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(squatter) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(9952).bigEndian
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(squatter, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        if bound == 0 { #expect(listen(squatter, 1) == 0) }
        try OSCPorts.withFreePort { osc in
            // No http.port in the session and no --http-port: the default.
            try #"{"osc": {"port": \#(osc)}}"#.write(to: session, atomically: true, encoding: .utf8)
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let daemon = Process()
            daemon.executableURL = DaemonTests.binary
            daemon.arguments = ["--server", server.name, "--state", state.path, session.path]
            daemon.standardError = try FileHandle(forWritingTo: log)
            daemon.standardOutput = FileHandle.nullDevice
            Launcher.tieToTestProcess(daemon)
            try Launcher.shared.run(daemon)
            defer { daemon.terminate(); finish(daemon) }
            let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: osc))
            try waitForDaemon(daemon, port: osc, log: (try? String(contentsOf: log, encoding: .utf8)) ?? "", "OSC to answer") {
                (try? ask(client, OSCMessage("/route/select"))) != nil
            }
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            let warnings = text.split(separator: "\n").filter { $0.contains("HTTP off: the default port 9952 cannot be opened") }
            #expect(warnings.count == 1, "\(text)")
            #expect(!text.contains("HTTP (OSCQuery) listening"))
        }
    }

    @Test("the session's http.port is where it listens, 0 turns it off, --http-port overrides it")
    func sessionPort() throws {
        let server = try JackServer()
        defer { server.stop() }
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-httpport-\(getpid())-\(UUID().uuidString)")
        let session = base.appendingPathExtension("json"), log = base.appendingPathExtension("log")
        let state = base.appendingPathExtension("state.json")
        defer { for file in [session, log] { try? FileManager.default.removeItem(at: file) }; removeStateFiles(state) }

        /// Runs the daemon on a session with `http` (its http.port) and `arguments`, without the
        /// tests' usual --http-port 0, until `ready` says so; then stops it.
        /// `answering`: an HTTP port to wait on too (it is bound before OSC runs and answers 503 until then).
        func run(http: UInt16, _ arguments: [String], ready: String, answering: UInt16? = nil, check: () throws -> Void) throws {
            let osc = try OSCPorts.free()
            try #"{"osc": {"port": \#(osc)}, "http": {"port": \#(http)}}"#.write(to: session, atomically: true, encoding: .utf8)
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let daemon = Process()
            daemon.executableURL = DaemonTests.binary
            daemon.arguments = ["--server", server.name, "--state", state.path] + arguments + [session.path]
            daemon.standardError = try FileHandle(forWritingTo: log)
            daemon.standardOutput = FileHandle.nullDevice
            Launcher.tieToTestProcess(daemon)
            try Launcher.shared.run(daemon)
            defer { daemon.terminate(); finish(daemon) }
            try waitForDaemon(daemon, port: osc, log: (try? String(contentsOf: log, encoding: .utf8)) ?? "", ready) {
                ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains(ready)
                    && answering.map { (try? HTTPClient.get(port: $0, "/?HOST_INFO"))?.status == 200 } ?? true
            }
            try check()
        }
        // A free port can be taken between the probe and the daemon's bind: then again on another.
        try OSCPorts.withFreePort { sessionPort in
            try run(http: sessionPort, [], ready: "HTTP (OSCQuery) listening", answering: sessionPort) {
                #expect(((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("tcp=127.0.0.1:\(sessionPort)"))
                let answer = try HTTPClient.get(port: sessionPort, "/?HOST_INFO")
                #expect(answer.status == 200)
            }
        }
        try run(http: 0, [], ready: "HTTP off (http.port 0)") {
            #expect(!((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("HTTP (OSCQuery) listening"))
        }
        try OSCPorts.withFreePort { override in
            try run(http: 0, ["--http-port", "\(override)"], ready: "HTTP (OSCQuery) listening", answering: override) {
                let answer = try HTTPClient.get(port: override, "/app?CONTENTS")
                #expect(answer.status == 200)
            }
        }
    }
}
