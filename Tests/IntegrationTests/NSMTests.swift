import Foundation
import JackHost
import JackRig
import OSCTransport
import SessionStore
import Testing

@Suite("New Session Manager", .serialized)
struct NSMTests {
    /// A session folder of the test's own (removed by the caller).
    static func folder() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-nsm-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    }

    /// What the clients the NSM server launches get beside the test's environment, as nsmd's get
    /// nsmd's (nil: taken out): the built duckrouter in PATH (nsmd adds clients by executable
    /// name), the test's JACK server, and no system bus (a test daemon never advertises itself on
    /// the network).
    static func clientEnvironment(_ server: JackServer, _ extra: [String: String?]) -> [String: String?] {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let base: [String: String?] = [
            "PATH": DaemonTests.binary.deletingLastPathComponent().path + ":" + path,
            "JACK_DEFAULT_SERVER": server.name,
            "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/duckrouter-tests-have-no-system-bus",
            "DUCKROUTER_TEMPLATE": nil,
        ]
        return base.merging(extra) { $1 }
    }

    /// The default session with `osc.port` and `http.port` set, written to `file`: a rig's
    /// template that names its ports, which every instance made from it would share.
    static func templateNamingPorts(_ file: URL, from session: String = "Sessions/default.json") throws -> (osc: UInt16, http: UInt16) {
        let osc = try OSCPorts.free()
        let http = try OSCPorts.free()
        let text = try Data(contentsOf: DaemonTests.repository.appendingPathComponent(session))
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try SessionPorts.setting(osc: osc, http: http, in: text).write(to: file)
        return (osc, http)
    }

    @Test("under NSM: announce (API 1.1, :dirty:message:), open (client id as JACK name, session created from the template on the command line), dirty on change, save on request, clean only after a change, restored after a restart")
    func handshake() throws {
        let server = try JackServer()
        defer { server.stop() }
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("duckrouter.nABCD").path
        let nsm = try TestNSMServer(folder: folder)
        // The daemon takes a free OSC port; when it cannot bind it (taken meanwhile), it exits
        // after answering the manager with /error, and starts again on another.
        var daemon = Process()
        defer { if daemon.isRunning { daemon.terminate(); finish(daemon) } }
        let logFile = folder.appendingPathExtension("log")
        defer { try? FileManager.default.removeItem(at: logFile) }
        /// Starts the daemon; returns an OSC client for it once `answers` says it is up.
        func start(answers: (OSCClient) -> Bool) throws -> OSCClient {
            try OSCPorts.withFreePort { port in
                _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
                nsm.command("expect nABCD")
                daemon = try launchDaemon(["--server", server.name, "--osc-port", "\(port)", "Sessions/default.json"], log: logFile,
                                          environment: ProcessInfo.processInfo.environment.merging(["NSM_URL": nsm.url]) { $1 },
                                          directory: DaemonTests.repository)
                let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: port))
                try waitForDaemon(daemon, port: port, log: (try? String(contentsOf: logFile, encoding: .utf8)) ?? "",
                                  "the daemon to answer") { answers(client) }
                return client
            }
        }
        let client = try start { client in
            nsm.answers(to: "/nsm/client/open").contains { $0.path == "/reply" } && (try? ask(client, OSCMessage("/state"))) != nil
        }
        // The last announce: a daemon that could not bind its OSC port announced itself too.
        let announce = try #require(nsm.received("/nsm/server/announce").last)
        #expect(announce.count == 6 && announce[0] as? String == "duckrouter" && announce[1] as? String == ":dirty:message:")
        #expect(announce[3] as? Int == 1 && announce[4] as? Int == 1, "NSM API 1.1, the version it follows")
        #expect(announce[5] as? Int == Int(daemon.processIdentifier))
        #expect(try #require(nsm.answers(to: "/nsm/client/open").last).arguments.first as? String == "opened \(path).json: OSC port \(client.url.port), HTTP off")

        let observer = try JackClient(name: "observer", server: server.name)
        defer { observer.close() }
        #expect(observer.portExists("duckrouter.nABCD:speaker_out_1"), "the client id is the JACK client name")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".json")) == Data(contentsOf: DaemonTests.repository.appendingPathComponent("Sessions/default.json")),
                "a new session starts from the template on the command line (its ports given there too, nothing is chosen)")

        // Saved with nothing changed: answered, and no is_clean (nothing was dirty).
        nsm.command("save")
        try waitFor("the answer to the first save") { nsm.answers(to: "/nsm/client/save").count == 1 }
        // A change makes it dirty; nothing is written until the manager says save.
        #expect(try ask(client, OSCMessage("/app/music/volume", [.float(0.3)]))?.path == "/reply")
        try waitFor("is_dirty") { !nsm.received("/nsm/client/is_dirty").isEmpty }
        #expect(nsm.received("/nsm/client/is_clean").isEmpty, "no is_clean for a save with nothing changed")
        // An observation window, not a wait: without NSM the daemon saves 200 ms after a change;
        // under NSM nothing may be written in 0.5 s either.
        try? FileManager.default.removeItem(atPath: path + ".state.json")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(!FileManager.default.fileExists(atPath: path + ".state.json"), "no save without the manager")
        nsm.command("save")
        try waitFor("the answer to save") { nsm.answers(to: "/nsm/client/save").count == 2 }
        try waitFor("is_clean") { !nsm.received("/nsm/client/is_clean").isEmpty }
        #expect(FileManager.default.fileExists(atPath: path + ".state.json"))

        // No switching: a second open is refused with ERR_NOT_NOW.
        nsm.command("open")
        try waitFor("the refusal") { nsm.answers(to: "/nsm/client/open").contains { $0.path == "/error" && $0.arguments.first as? Int == -8 } }

        // The manager stops it (SIGTERM) and starts it again: the saved state is back.
        daemon.terminate()
        finish(daemon)
        #expect(daemon.terminationStatus == 0)
        let again = try start { client in (try? ask(client, OSCMessage("/app/music/volume")))??.path == "/reply" }
        #expect(try ask(again, OSCMessage("/app/music/volume"))?.arguments.last == .float(0.3))
        #expect(nsm.violations.isEmpty, "\(nsm.violations)")
    }

    @Test("a start that fails after open answers it with /error and the reason, then exits: no JACK server (1), the OSC port taken (1), a broken project file (2)")
    func failingOpen() throws {
        let server = try JackServer()
        defer { server.stop() }
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let nsm = try TestNSMServer(folder: folder)
        /// Runs a daemon that announces as duckrouter.<suffix> until it exits: its status and
        /// its answer to open (the arguments after the path: code, message).
        func run(_ suffix: String, _ arguments: [String]) throws -> (status: Int32, answer: (path: String, arguments: [Any])?, log: String) {
            nsm.command("expect \(suffix)")
            let log = folder.appendingPathComponent("\(suffix).daemon.log")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let daemon = try launchDaemon(arguments, log: log, environment: ProcessInfo.processInfo.environment.merging(["NSM_URL": nsm.url]) { $1 },
                                          directory: DaemonTests.repository)
            defer { if daemon.isRunning { daemon.terminate(); finish(daemon) } }
            try waitFor("the daemon to exit", timeout: 15) { !daemon.isRunning }
            try waitFor("its answer to open") { nsm.answers(to: "/nsm/client/open").contains { $0.client == "duckrouter.\(suffix)" } }
            let answer = nsm.answers(to: "/nsm/client/open").last { $0.client == "duckrouter.\(suffix)" }
            return (daemon.terminationStatus, answer.map { ($0.path, $0.arguments) }, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
        }

        let missing = "no-such-server-\(getpid())"
        let noServer = try run("nJACK", ["--server", missing, "--osc-port", "\(try OSCPorts.free())", "Sessions/default.json"])
        #expect(noServer.status == 1, "\(noServer.log)")
        #expect(noServer.answer?.path == "/error" && noServer.answer?.arguments.first as? Int == -1)
        // The reason, as the log says it (jackd's names the server; PipeWire's says it is not running).
        let reason = try #require(noServer.answer?.arguments.last as? String)
        #expect(!reason.isEmpty && noServer.log.contains("duckrouter: \(reason.split(separator: "\n").first ?? "")"), "\(reason)\n\(noServer.log)")

        // A UDP socket on the port, as another program would hold it.
        let port = try OSCPorts.free()
        let holder = Sockets.udp(from: "127.0.0.1", port: port)
        try #require(holder >= 0)
        defer { close(holder) }
        let taken = try run("nPORT", ["--server", server.name, "--osc-port", "\(port)", "Sessions/default.json"])
        #expect(taken.status == 1, "\(taken.log)")
        #expect(taken.answer?.path == "/error" && taken.answer?.arguments.first as? Int == -1)
        #expect((taken.answer?.arguments.last as? String)?.contains("cannot listen for OSC on UDP 127.0.0.1:\(port)") == true, "\(String(describing: taken.answer))")

        try Data("{ \"routes\": [ }\n".utf8).write(to: folder.appendingPathComponent("duckrouter.nBAD.json"))
        let broken = try run("nBAD", ["--server", server.name, "--osc-port", "\(try OSCPorts.free())", "Sessions/default.json"])
        #expect(broken.status == 2, "\(broken.log)")
        #expect(broken.answer?.path == "/error" && broken.answer?.arguments.first as? Int == -9, "ERR_BAD_PROJECT")
        #expect((broken.answer?.arguments.last as? String)?.contains("duckrouter.nBAD.json") == true)
        #expect(nsm.violations.isEmpty, "\(nsm.violations)")
    }

    @Test("two instances in one NSM session, added as nsmd adds them (by executable name, no arguments): both open from DUCKROUTER_TEMPLATE, each on OSC and HTTP ports of its own kept in its project file and shown in /state, HOST_INFO and the manager's list; both saved and restored when the session reopens")
    func twoInstances() throws {
        let server = try JackServer()
        defer { server.stop() }
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let template = folder.appendingPathComponent("templates/rig.json")
        _ = try Self.templateNamingPorts(template)
        let session = folder.appendingPathComponent("session")
        let nsm = try TestNSMServer(folder: session, clients: Self.clientEnvironment(server, ["DUCKROUTER_TEMPLATE": template.path]))
        nsm.command("add duckrouter")
        nsm.command("add duckrouter")
        let opened = { nsm.answers(to: "/nsm/client/open").filter { $0.path == "/reply" }.count }
        try waitFor("both to answer open", timeout: 30) { opened() == 2 || nsm.exits.count > 0 }
        let ids = nsm.launched.map(\.id)
        try #require(opened() == 2 && ids.count == 2, "exits \(nsm.exits); logs: \(ids.map(nsm.log(of:)))")

        /// The ports a project file names.
        func ports(_ id: String) throws -> (osc: UInt16, http: UInt16) {
            let named = try #require(SessionPorts.named(in: Data(contentsOf: session.appendingPathComponent("\(id).json"))))
            return (try #require(named.osc), try #require(named.http))
        }
        let first = try ports(ids[0])
        let second = try ports(ids[1])
        #expect(Set([first.osc, first.http, second.osc, second.http]).count == 4, "\(first) \(second): no port shared")

        let observer = try JackClient(name: "observer", server: server.name)
        defer { observer.close() }
        for (id, port, volume) in [(ids[0], first, Float(0.3)), (ids[1], second, Float(0.6))] {
            #expect(observer.portExists("\(id):speaker_out_1"))
            let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: port.osc))
            let state = try #require(try ask(client, OSCMessage("/state"))?.arguments.last.flatMap { argument -> [String: Any]? in
                guard case let .string(text) = argument else { return nil }
                return try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            })
            #expect((state["osc"] as? [String: Any])?["port"] as? Int == Int(port.osc) && (state["http"] as? [String: Any])?["port"] as? Int == Int(port.http))
            #expect(try HTTPClient.get(port: port.http, "/?HOST_INFO").json()["OSC_PORT"] as? Int == Int(port.osc))
            #expect(nsm.received("/nsm/client/label", from: id).contains { $0.first as? String == "OSC \(port.osc) · HTTP \(port.http)" })
            #expect(try ask(client, OSCMessage("/app/music/volume", [.float(volume)]))?.path == "/reply")
        }
        try waitFor("both dirty") { Set(ids.filter { !nsm.received("/nsm/client/is_dirty", from: $0).isEmpty }).count == 2 }
        nsm.command("save")
        try waitFor("both saved") { nsm.answers(to: "/nsm/client/save").filter { $0.path == "/reply" }.count == 2 }
        try waitFor("both clean") { Set(ids.filter { !nsm.received("/nsm/client/is_clean", from: $0).isEmpty }).count == 2 }

        // The session closed and opened again: each instance on its own ports, with its volume.
        nsm.command("stop")
        try waitFor("both to exit", timeout: 15) { nsm.exits.count == 2 }
        #expect(nsm.exits.map(\.status) == [0, 0])
        nsm.command("start")
        try waitFor("both to answer open again", timeout: 30) { opened() == 4 || nsm.exits.count > 2 }
        try #require(opened() == 4, "logs: \(ids.map(nsm.log(of:)))")
        for (id, volume) in [(ids[0], Float(0.3)), (ids[1], Float(0.6))] {
            let port = try ports(id)
            #expect(port == (id == ids[0] ? first : second), "the same ports after the reopen")
            let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: port.osc))
            #expect(try ask(client, OSCMessage("/app/music/volume"))?.arguments.last == .float(volume))
        }
        #expect(nsm.violations.isEmpty, "\(nsm.violations)")
    }

    @Test("a new client whose template is nowhere is refused with ERR_CREATE_FAILED saying where it looked, never started empty; once the template is in the user's folder, the same client opens from it")
    func missingTemplate() throws {
        let server = try JackServer()
        defer { server.stop() }
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let home = folder.appendingPathComponent("home")
        let session = folder.appendingPathComponent("session")
        let environment = Self.clientEnvironment(server, ["HOME": home.path, "XDG_CONFIG_HOME": nil, "DUCKROUTER_TEMPLATE": "stage-left"])
        let nsm = try TestNSMServer(folder: session, clients: environment)
        nsm.command("add duckrouter")
        // Its exit may be told before the messages it sent first are read: waited for apart.
        try waitFor("the client to exit", timeout: 15) { nsm.exits.count == 1 }
        let id = try #require(nsm.launched.first?.id)
        try waitFor("its answer and its message") {
            !nsm.answers(to: "/nsm/client/open").isEmpty && !nsm.received("/nsm/client/message", from: id).isEmpty
        }
        #expect(nsm.exits.first?.status == 2)
        let answer = try #require(nsm.answers(to: "/nsm/client/open").last)
        let place = home.appendingPathComponent(".config/duckrouter/templates/stage-left.json").path
        #expect(answer.path == "/error" && answer.arguments.first as? Int == -10, "ERR_CREATE_FAILED")
        #expect((answer.arguments.last as? String)?.contains(place) == true, "names where it looked: \(answer.arguments)")
        #expect(nsm.received("/nsm/client/message", from: id).contains { $0.first as? Int == 3 }, "said over NSM's message API too")
        #expect(!FileManager.default.fileExists(atPath: session.appendingPathComponent("\(id).json").path), "no empty rig made")

        // The template where the message said, and the session reopened: the client opens from it.
        _ = try Self.templateNamingPorts(URL(fileURLWithPath: place), from: "Sessions/theatre.json")
        nsm.command("start")
        try waitFor("the client to answer open", timeout: 30) { nsm.answers(to: "/nsm/client/open").count == 2 || nsm.exits.count > 1 }
        #expect(nsm.answers(to: "/nsm/client/open").last?.path == "/reply", "\(nsm.log(of: id))")
        let made = try JSONSerialization.jsonObject(with: Data(contentsOf: session.appendingPathComponent("\(id).json"))) as? [String: Any]
        let theatre = try JSONSerialization.jsonObject(with: Data(contentsOf: DaemonTests.repository.appendingPathComponent("Sessions/theatre.json"))) as? [String: Any]
        #expect((made?["routes"] as? [Any]).map { $0 as NSArray } == (theatre?["routes"] as? [Any]).map { $0 as NSArray }, "the rig of the template")
        #expect(nsm.violations.isEmpty, "\(nsm.violations)")
    }
}
