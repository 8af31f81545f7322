import Foundation
import JackTestSupport
import OSCTransport

/// A duckrouter daemon on one host of a `NetworkHosts` pair (started with `ip netns exec`, so its
/// sockets and the processes it starts are that host's), on that host's jackd, with a session of
/// the test's in a folder of its own (removed by `close`), logging to a file there.
final class HostDaemon {
    let process = Process()
    let folder: URL
    let log: URL

    /// `session`: the session file's text.
    init(host: String, server: JackServer, session: String, name: String = "router") throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-\(name)-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("\(name).json")
        try session.write(to: file, atomically: true, encoding: .utf8)
        log = folder.appendingPathComponent("\(name).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", host, DaemonTests.binary.path, "--server", server.name, "--http-port", "0",
                             "--state", folder.appendingPathComponent("\(name).state.json").path, file.path]
        process.environment = ProcessInfo.processInfo.environment
            .merging(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/duckrouter-tests-have-no-system-bus"]) { $1 }
        let handle = try FileHandle(forWritingTo: log)
        process.standardError = handle
        process.standardOutput = FileHandle.nullDevice
        Launcher.tieToTestProcess(process)
        do {
            try Launcher.shared.run(process)
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
        try? handle.close()
    }

    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// SIGTERM, and waits for it to exit: whether it stopped cleanly (exit status 0).
    @discardableResult
    func stop() -> Bool {
        if process.isRunning { process.terminate() }
        finish(process)
        return process.terminationReason == .exit && process.terminationStatus == 0
    }

    /// Stops it if it still runs, and removes its folder.
    func close() {
        if process.isRunning { stop() }
        try? FileManager.default.removeItem(at: folder)
    }

    /// An OSC client on `host` (UDP) to `address`:`port`, the daemon's OSC port seen from there.
    static func client(on host: String, to address: String, port: Int) throws -> OSCClient {
        try NetworkHosts.inside(host) { try OSCClient(OSCURL(transport: .udp, host: address, port: UInt16(port))) }
    }
}
