import Foundation
import JackHost
import JackTestSupport
import Testing

/// The `duckrouter` executable as people run it: exit codes, messages, ports, signals.
@Suite("duckrouter daemon", .serialized)
struct DaemonTests {
    /// The built daemon, beside the test bundle in the build folder.
    static var binary: URL {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent().appendingPathComponent("duckrouter")
    }

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
    }

    struct Run {
        let process = Process()
        let stderr = Pipe()
        init(_ arguments: [String]) throws {
            process.executableURL = DaemonTests.binary
            process.arguments = arguments
            process.currentDirectoryURL = DaemonTests.repository
            process.standardError = stderr
            process.standardOutput = FileHandle.nullDevice
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }
        func finish(timeout: Double = 10) throws -> (status: Int32, stderr: String) {
            try waitFor("duckrouter to exit", timeout: timeout) { !process.isRunning }
            let text = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (process.terminationStatus, text)
        }
    }

    @Test("no JACK server: one line on stderr and exit code 1")
    func missingServer() throws {
        let (status, stderr) = try Run(["--server", "duckrouter-test-nosuchserver", "Sessions/default.json"]).finish()
        #expect(status == 1)
        #expect(stderr == "duckrouter: no JACK server named 'duckrouter-test-nosuchserver' is running (failure, could not connect to the server); start one, e.g. `jackd -n duckrouter-test-nosuchserver -d dummy`\n")
    }

    @Test("an invalid session: file and field named, exit code 2, file untouched")
    func invalidSession() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-bad-\(getpid()).json")
        let text = #"{"apps": [{"name": "music", "category": "playbak"}]}"#
        try text.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let (status, stderr) = try Run(["--server", "unused", file.path]).finish()
        #expect(status == 2)
        #expect(stderr == "duckrouter: \(file.path): apps[0].category: expected one of ambient, soloAmbient, playback, record, playAndRecord, multiRoute, got 'playbak'\n")
        #expect(try String(contentsOf: file, encoding: .utf8) == text)
    }

    @Test("with a server: ports and connections appear; SIGINT and SIGTERM stop it with exit code 0", arguments: [SIGINT, SIGTERM])
    func runsAndStops(signal: Int32) throws {
        let server = try JackServer()
        defer { server.stop() }
        let run = try Run(["--server", server.name, "Sessions/default.json"])
        let observer = try JackClient(name: "observer", server: server.name)
        defer { observer.close() }
        try waitFor("the router's ports") { observer.portExists("duckrouter:speaker_out_2") }
        #expect(observer.ports(matching: "duckrouter:.*") == [
            "duckrouter:music_in_1", "duckrouter:music_in_2", "duckrouter:nav_in_1",
            "duckrouter:game_in_1", "duckrouter:game_in_2", "duckrouter:speaker_out_1", "duckrouter:speaker_out_2",
        ])
        try waitFor("the speaker route connection") {
            observer.connections(of: "duckrouter:speaker_out_1") == ["system:playback_1"]
        }
        kill(run.process.processIdentifier, signal)
        let (status, stderr) = try run.finish()
        #expect(status == 0, "\(stderr)")
        #expect(stderr.contains("stopping"))
        #expect(!observer.portExists("duckrouter:speaker_out_1"), "the client is gone")
    }

    @Test("the JACK server going away is reported and exits with code 1")
    func serverGoesAway() throws {
        let server = try JackServer()
        let run = try Run(["--server", server.name, "Sessions/default.json"])
        let observer = try JackClient(name: "observer", server: server.name)
        try waitFor("the router's ports") { observer.portExists("duckrouter:speaker_out_2") }
        observer.close()
        server.stop()
        let (status, stderr) = try run.finish()
        #expect(status == 1)
        #expect(stderr.contains("the JACK server went away"))
    }
}
