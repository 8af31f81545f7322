import Foundation
import JackHost
import JackRig
import OSCTransport
import Testing

/// The small NSM server of Resources/nsm_server.py: what the client sent, line by line.
final class TestNSMServer: @unchecked Sendable {
    // @unchecked: `text` is guarded by `lock`; the rest is set in init.
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()
    private var text = Data()
    private(set) var port: UInt16 = 0

    init(path: String, clientID: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources/nsm_server.py")
        process.arguments = ["python3", script.path, path, clientID]
        process.standardInput = input
        process.standardOutput = output
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            lock.withLock { text.append(data) }
        }
        try process.run()
        var found: UInt16?
        try waitFor("the NSM server's port") {
            found = lines.first.flatMap { $0["port"] as? Int }.map { UInt16($0) }
            return found != nil
        }
        port = found!
    }

    deinit {
        output.fileHandleForReading.readabilityHandler = nil
        process.terminate()
        finish(process)
    }

    var lines: [[String: Any]] {
        lock.withLock { text }.split(separator: 10).compactMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
    }

    /// The messages received with this path, as (path, args).
    func received(_ path: String) -> [[Any]] { lines.filter { $0["path"] as? String == path }.map { $0["args"] as? [Any] ?? [] } }

    func command(_ line: String) { try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8)) }
}

@Suite("New Session Manager", .serialized)
struct NSMTests {
    @Test("under NSM: announce, open (client id as JACK name, session created from the template), dirty on change, save on request, clean, restored after a restart")
    func handshake() throws {
        let server = try JackServer()
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-nsm-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("duckrouter.nABCD").path
        let nsm = try TestNSMServer(path: path, clientID: "duckrouter.nABCD")
        // The daemon takes a free OSC port; when it cannot bind it (taken meanwhile), it exits
        // before it answers the manager, and starts again on another.
        var daemon = Process()
        defer { if daemon.isRunning { daemon.terminate(); finish(daemon) } }
        let logFile = folder.appendingPathExtension("log")
        defer { try? FileManager.default.removeItem(at: logFile) }
        /// Starts the daemon; returns an OSC client for it once `answers` says it is up.
        func start(answers: (OSCClient) -> Bool) throws -> OSCClient {
            try OSCPorts.withFreePort { port in
                _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
                let log = try FileHandle(forWritingTo: logFile)
                defer { try? log.close() }
                daemon = Process()
                daemon.executableURL = DaemonTests.binary
                daemon.arguments = daemonArguments(["--server", server.name, "--osc-port", "\(port)", "Sessions/default.json"])
                daemon.currentDirectoryURL = DaemonTests.repository
                daemon.environment = ProcessInfo.processInfo.environment.merging(["NSM_URL": "osc.udp://127.0.0.1:\(nsm.port)/"]) { $1 }
                daemon.standardError = log
                daemon.standardOutput = FileHandle.nullDevice
                Launcher.tieToTestProcess(daemon)
                try Launcher.shared.run(daemon)
                let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: port))
                try waitForDaemon(daemon, port: port, log: (try? String(contentsOf: logFile, encoding: .utf8)) ?? "",
                                  "the daemon to answer") { answers(client) }
                return client
            }
        }
        let client = try start { client in
            nsm.received("/reply").contains { $0.first as? String == "/nsm/client/open" } && (try? ask(client, OSCMessage("/state"))) != nil
        }
        // The last announce: a daemon that could not bind its OSC port announced itself too.
        let announce = try #require(nsm.received("/nsm/server/announce").last)
        #expect(announce.count == 6 && announce[0] as? String == "duckrouter" && announce[1] as? String == ":dirty:")
        #expect(announce[3] as? Int == 1 && announce[5] as? Int == Int(daemon.processIdentifier))

        let observer = try JackClient(name: "observer", server: server.name)
        defer { observer.close() }
        #expect(observer.portExists("duckrouter.nABCD:speaker_out_1"), "the client id is the JACK client name")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".json")) == Data(contentsOf: DaemonTests.repository.appendingPathComponent("Sessions/default.json")),
                "a new session starts from the template on the command line")

        // A change makes it dirty; nothing is written until the manager says save.
        #expect(try ask(client, OSCMessage("/app/music/volume", [.float(0.3)]))?.path == "/reply")
        try waitFor("is_dirty") { !nsm.received("/nsm/client/is_dirty").isEmpty }
        // An observation window, not a wait: without NSM the daemon saves 200 ms after a change;
        // under NSM nothing may be written in 0.5 s either.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(!FileManager.default.fileExists(atPath: path + ".state.json"), "no save without the manager")
        nsm.command("save")
        try waitFor("the answer to save") { nsm.received("/reply").contains { $0.first as? String == "/nsm/client/save" } }
        try waitFor("is_clean") { !nsm.received("/nsm/client/is_clean").isEmpty }
        #expect(FileManager.default.fileExists(atPath: path + ".state.json"))

        // No switching: a second open is refused with ERR_NOT_NOW.
        nsm.command("open")
        try waitFor("the refusal") { nsm.received("/error").contains { $0.first as? String == "/nsm/client/open" && $0[1] as? Int == -8 } }

        // The manager stops it (SIGTERM) and starts it again: the saved state is back.
        daemon.terminate()
        finish(daemon)
        #expect(daemon.terminationStatus == 0)
        let again = try start { client in (try? ask(client, OSCMessage("/app/music/volume")))??.path == "/reply" }
        #expect(try ask(again, OSCMessage("/app/music/volume"))?.arguments.last == .float(0.3))
    }
}
