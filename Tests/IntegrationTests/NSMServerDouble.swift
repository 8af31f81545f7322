import Foundation
import JackRig

/// The NSM server of Resources/nsm_server.py: it does what nsmd does, from the published API
/// (launches the clients it is told to add, by executable name alone, and answers and checks
/// them), and says line by line what it saw.
final class TestNSMServer: @unchecked Sendable {
    // @unchecked: `text` is guarded by `lock`; the rest is set in init.
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()
    private var text = Data()
    private(set) var port: UInt16 = 0
    /// The session folder: each client's project is `<folder>/<client id>`.
    let folder: URL

    /// A server for the session in `folder`; the clients it launches get its environment (the
    /// test's) with `clients`' changes (nil: taken out) and NSM_URL, as nsmd's get nsmd's.
    init(folder: URL, clients: [String: String?] = [:]) throws {
        self.folder = folder
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources/nsm_server.py")
        let changes = String(decoding: try JSONSerialization.data(withJSONObject: clients.mapValues { $0 ?? NSNull() as Any }), as: UTF8.self)
        process.arguments = ["python3", script.path, folder.path, changes]
        process.standardInput = input
        process.standardOutput = output
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            lock.withLock { text.append(data) }
        }
        Launcher.tieToTestProcess(process)
        try Launcher.shared.run(process)
        var found: UInt16?
        try waitFor("the NSM server's port") {
            found = events.first.flatMap { $0["port"] as? Int }.map { UInt16($0) }
            return found != nil
        }
        port = found!
    }

    deinit {
        // Its stdin closed, it kills the clients it launched and exits.
        try? input.fileHandleForWriting.close()
        output.fileHandleForReading.readabilityHandler = nil
        finish(process, timeout: 5)
    }

    var url: String { "osc.udp://127.0.0.1:\(port)/" }

    /// Every event so far, in order.
    var events: [[String: Any]] {
        lock.withLock { text }.split(separator: 10).compactMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
    }

    /// The messages received with this path (from `client` alone, if given), as their arguments.
    func received(_ path: String, from client: String? = nil) -> [[Any]] {
        events.filter { $0["path"] as? String == path && (client == nil || $0["client"] as? String == client) }.map { $0["args"] as? [Any] ?? [] }
    }

    /// The answers to `request` (`/nsm/client/open`, `/nsm/client/save`): (client, "/reply" or
    /// "/error", the arguments after the path).
    func answers(to request: String) -> [(client: String, path: String, arguments: [Any])] {
        events.compactMap { event in
            guard let path = event["path"] as? String, path == "/reply" || path == "/error",
                  let arguments = event["args"] as? [Any], arguments.first as? String == request else { return nil }
            return (event["client"] as? String ?? "", path, Array(arguments.dropFirst()))
        }
    }

    /// The clients it launched, in order: (client id, pid); a client launched again is listed again.
    var launched: [(id: String, pid: Int)] {
        events.compactMap { event in (event["launched"] as? String).map { ($0, event["pid"] as? Int ?? 0) } }
    }

    /// Exit statuses of the clients it launched, by client id, in the order they exited.
    var exits: [(id: String, status: Int)] {
        events.compactMap { event in (event["exited"] as? String).map { ($0, event["status"] as? Int ?? -999) } }
    }

    /// The steps of a client the API does not allow (none expected).
    var violations: [String] { events.compactMap { $0["violation"] as? String } }

    /// The log of a client it launched (the client's stderr).
    func log(of client: String) -> String {
        let suffix = client.split(separator: ".").last.map(String.init) ?? client
        let file = (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.first { $0.hasSuffix(".\(suffix).log") }
        return file.flatMap { try? String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) } ?? ""
    }

    func command(_ line: String) { try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8)) }
}
