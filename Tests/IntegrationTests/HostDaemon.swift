import Foundation
import JackRig
import OSCTransport

/// A duckrouter daemon on one host of a `NetworkHosts` pair (started with `ip netns exec`, so its
/// sockets and the processes it starts are that host's), on that host's jackd, with a session of
/// the test's in a folder of its own (removed by `close`), logging to a file there.
final class HostDaemon {
    let process = Process()
    let folder: URL
    let log: URL

    /// `session`: the session file's text.
    /// `httpPort`: the HTTP server's port (0: off).
    init(host: String, server: JackServer, session: String, name: String = "router", httpPort: Int = 0) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-\(name)-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("\(name).json")
        try session.write(to: file, atomically: true, encoding: .utf8)
        log = folder.appendingPathComponent("\(name).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", host, DaemonTests.binary.path, "--server", server.name, "--http-port", "\(httpPort)",
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

    /// Route `name` as `/state` shows it (its settings entry), asked through `client`; nil when
    /// there is no answer or no such route.
    static func stateRoute(_ name: String, through client: OSCClient) throws -> [String: Any]? {
        guard case let .string(json)? = try ask(client, OSCMessage("/state"))?.arguments.last,
              let document = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let routes = (document["settings"] as? [String: Any])?["routes"] as? [[String: Any]] else { return nil }
        return routes.first { $0["name"] as? String == name }
    }

    /// An OSC client on `host` (UDP) to `address`:`port`, the daemon's OSC port seen from there.
    static func client(on host: String, to address: String, port: Int) throws -> OSCClient {
        try NetworkHosts.inside(host) { try OSCClient(OSCURL(transport: .udp, host: address, port: UInt16(port))) }
    }
}

/// The router's side of a remote-route test: two hosts of the run's own (`NetworkHosts`), a jackd
/// on host `a`, `source:out_1/2` playing a -15.05 dBFS sine (997 Hz, peak 0.25), the local
/// speaker `local:speaker_1/2`, and `returned:in_1/2` for what comes back from the far end.
/// `close` takes everything down, in the reverse order.
final class RouterHost {
    let hosts: NetworkHosts
    let router: JackServer
    let source: TestClient
    let local: TestClient
    let returned: TestClient

    /// `thirdHost`: a third host, `c`, joined to `a` (NetworkHosts).
    init(thirdHost: Bool = false) throws {
        hosts = try NetworkHosts(thirdHost: thirdHost)
        var started: [() -> Void] = [hosts.close]
        do {
            router = try JackServer(period: 256, namespace: hosts.a)
            started.append(router.stop)
            source = try TestClient(name: "source", server: router.name, outputs: ["out_1", "out_2"])
            started.append(source.close)
            let sine = Signals.sine(frequency: 997, amplitude: 0.25, sampleRate: router.sampleRate)   // RMS -15.05 dBFS
            source.setSignal(sine, output: 0)
            source.setSignal(sine, output: 1)
            local = try TestClient(name: "local", server: router.name, inputs: ["speaker_1", "speaker_2"])
            started.append(local.close)
            returned = try TestClient(name: "returned", server: router.name, inputs: ["in_1", "in_2"])
        } catch {
            for stop in started.reversed() { stop() }
            throw error
        }
    }

    func close() {
        returned.close()
        local.close()
        source.close()
        router.stop()
        hosts.close()
    }
}
