import Foundation
import JackRig
import OSCTransport
import Testing

/// The daemon on PipeWire's JACK (issue 16): a private headless PipeWire per test
/// (`PipeWireServer`), the daemon started with PipeWire's libjack.
///
/// Not under ThreadSanitizer yet: a daemon on PipeWire's libjack is killed by TSan when a
/// libpipewire thread ends ("thread T.. finished with ignores enabled", the way libjack's did
/// before scripts/tsan-cancel.c); the shim does not cover PipeWire's threads so far (issue 16).
@Suite("On PipeWire", .serialized,
       .enabled(if: PipeWireServer.isInstalled, "pipewire and pipewire-jack are not installed (make deps)"),
       .enabled(if: !ThreadSanitizer.isActive, "TSan kills a daemon on PipeWire's libjack when a libpipewire thread ends (issue 16)"))
struct PipeWireTests {
    /// The daemon as a child of the test, a client of `server`.
    final class Daemon {
        let process: Process
        let port: UInt16
        let directory: URL

        init(on server: PipeWireServer) throws {
            directory = server.runtimeDirectory.appendingPathComponent("daemon")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            port = try OSCPorts.free()
            let log = directory.appendingPathComponent("duckrouter.log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            process = try launchDaemon([DaemonTests.repository.appendingPathComponent("Sessions/default.json").path,
                                        "--osc-port", "\(port)", "--state", directory.appendingPathComponent("state.json").path],
                                       log: log, environment: server.jackEnvironment)
            try waitFor("the daemon to answer OSC", timeout: 10) { !process.isRunning || (try? engine()) != nil }
            guard process.isRunning else { throw Unexpected(description: "duckrouter exited:\n\(self.log)") }
        }

        deinit {
            process.terminate()
            finish(process)
        }

        var log: String {
            (try? String(contentsOf: directory.appendingPathComponent("duckrouter.log"), encoding: .utf8)) ?? ""
        }

        /// `/state` as a JSON object.
        func state() throws -> [String: Any] {
            let client = try OSCClient(OSCURL(transport: .tcp, host: "127.0.0.1", port: port))
            try client.send(OSCMessage("/state"))
            guard let reply = try client.receive(timeout: 2, until: { $0.path == "/reply" && $0.arguments.first == .string("/state") }),
                  case let .string(json) = reply.arguments[1],
                  let state = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            else { throw Unexpected(description: "no /state") }
            return state
        }

        /// `/state`'s `engine` object.
        func engine() throws -> [String: Any] {
            guard let engine = try state()["engine"] as? [String: Any] else { throw Unexpected(description: "no engine in /state") }
            return engine
        }

        func cycles() throws -> Int { try engine()["cycles"] as? Int ?? -1 }
    }

    @Test("PipeWire stopped and started again: the router sees it go (/state no longer says connected), rejoins the new server and its cycles run again")
    func serverRestart() throws {
        let server = try PipeWireServer()
        let daemon = try Daemon(on: server)
        try waitFor("cycles to run") { (try? daemon.cycles()) ?? 0 > 10 }
        server.terminate()
        try waitFor("the router to see PipeWire gone", timeout: 5) {
            (try? daemon.engine())?["jack"] as? String != "connected"
        }
        try server.restart()
        try waitFor("the router to rejoin", timeout: 10) {
            guard let engine = try? daemon.engine() else { return false }
            return engine["jack"] as? String == "connected" && engine["reconnects"] as? Int == 1
        }
        let before = try daemon.cycles()
        try waitFor("cycles to run on the new server") { (try? daemon.cycles()) ?? 0 > before + 10 }
        #expect(daemon.process.isRunning, "\(daemon.log)")
        #expect(daemon.log.contains("jack=PipeWire"), "the log says which JACK it runs on")
        // PipeWire's shutdown notice told the router (0.3.65 calls only jack_on_shutdown), not
        // the watchdog, which would also see it go: 2 s later, and hiding a callback never made.
        #expect(daemon.log.contains("the JACK server went away") && !daemon.log.contains("stopped running the router's cycles"),
                "\(daemon.log)")
    }

    @Test("PipeWire away for longer than a reconnect attempt: the messages name PipeWire and how to start it, not jackd")
    func awayMessageNamesPipeWire() throws {
        let server = try PipeWireServer()
        let daemon = try Daemon(on: server)
        server.kill9()
        try waitFor("a reconnect attempt to fail", timeout: 10) { daemon.log.contains("JACK server still away") }
        let away = daemon.log.split(separator: "\n").filter { $0.contains("still away") }
        #expect(away.allSatisfy { $0.contains("PipeWire is not running") && !$0.contains("jackd") }, "\(away)")
        try server.restart()
        try waitFor("the router to rejoin", timeout: 10) { (try? daemon.engine())?["jack"] as? String == "connected" }
    }

    @Test("PIPEWIRE_QUANTUM=128/48000 in the router's environment, as the README says: it runs 128-frame periods, not PipeWire's 1024")
    func quantumFromEnvironment() throws {
        let server = try PipeWireServer(quantum: 128)
        let daemon = try Daemon(on: server)
        try waitFor("cycles to run") { (try? daemon.cycles()) ?? 0 > 10 }
        let settings = try #require(try daemon.state()["settings"] as? [String: Any])
        #expect(settings["period"] as? Int == 128)
        #expect(settings["sampleRate"] as? Int == 48000)
        #expect(daemon.log.contains("period=128"), "\(daemon.log)")
    }
}
