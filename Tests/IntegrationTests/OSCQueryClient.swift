import Foundation
import Testing

/// A helper script of Resources/ run with python3, spoken to in lines: one JSON array per
/// request on its stdin, one JSON object per line on its stdout.
final class JSONLineScript {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var pending = Data()

    init(_ script: String, _ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources/\(script)")
        process.arguments = ["python3", path.path] + arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    deinit {
        try? input.fileHandleForWriting.close()
        finish(process, timeout: 20)
    }

    /// The next line as a JSON object; nil when the script has ended, or has said nothing for
    /// `timeout` seconds (a hung helper fails its test instead of hanging the suite; it is killed).
    func readLine(timeout: Double = 60) -> [String: Any]? {
        guard let line = readRawLine(timeout: timeout) else { return nil }
        return (try? JSONSerialization.jsonObject(with: line)) as? [String: Any] ?? [:]
    }

    /// The next line's bytes, without its newline; nil as for `readLine`.
    func readRawLine(timeout: Double = 60) -> Data? {
        while true {
            if let newline = pending.firstIndex(of: 10) {
                let line = Data(pending[..<newline])
                pending = Data(pending[(newline + 1)...])
                return line
            }
            var ready = pollfd(fd: output.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(timeout * 1000)) == 1 else {
                Issue.record("\(process.arguments?.dropFirst().first ?? "helper") said nothing for \(timeout) s; killed")
                kill(process.processIdentifier, SIGKILL)
                return nil
            }
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { return nil }
            pending.append(data)
        }
    }

    func write(_ request: [Any]) {
        writeLine(try! JSONSerialization.data(withJSONObject: request))
    }

    /// Writes `line` as it is, and a newline.
    func writeLine(_ line: Data) {
        try? input.fileHandleForWriting.write(contentsOf: line + Data("\n".utf8))
    }

    /// Sends a request answered by one line; nil if the script died.
    @discardableResult
    func call(_ request: [Any]) -> [String: Any]? {
        write(request)
        return readLine()
    }
}

/// Drives Resources/oscquery_client.py, an OSCQuery client written from the proposal in Python
/// (urllib, websocket-client, python-osc): one JSON array per request, JSON objects back.
final class OSCQueryClient {
    private let script: JSONLineScript

    init(httpPort: Int) throws {
        script = try JSONLineScript("oscquery_client.py", ["127.0.0.1", "\(httpPort)"])
    }

    private func readLine() -> [String: Any]? { script.readLine() }
    private func write(_ request: [Any]) { script.write(request) }

    /// Sends a request answered by one line (hostinfo, get, connect, chataigne, listen, ignore,
    /// text, binary_hex, osc, close); nil if the client died.
    @discardableResult
    func call(_ request: Any...) -> [String: Any]? {
        script.call(request)
    }

    /// Sends an OSC message over the WebSocket: `osc("/app/music/volume", ("f", 0.5))`.
    func osc(_ path: String, _ arguments: (String, Any)...) {
        osc(path, arguments: arguments)
    }

    func osc(_ path: String, arguments: [(String, Any)]) {
        write(["osc", path] + arguments.map { [$0.0, $0.1] })
        _ = readLine()
    }

    /// The frames that arrive until one matches (`["osc": path, "args": [...]]` or
    /// `["command": "PATH_ADDED", "data": path]`), for `timeout` seconds at most: a wait on the
    /// event, not a pause. `matched` says whether it came, `seconds` how long it took.
    func until(_ match: [String: Any], timeout: Double = 3) -> (frames: [[String: Any]], matched: Bool, seconds: Double) {
        write(["until", timeout, match])
        var frames: [[String: Any]] = []
        while let line = readLine() {
            if let waited = line["waited"] as? Bool { return (frames, waited, line["seconds"] as? Double ?? timeout) }
            frames.append(line)
        }
        return (frames, false, timeout)
    }

    /// Every frame that arrives within `seconds` (for "nothing more comes").
    func drain(_ seconds: Double) -> [[String: Any]] {
        write(["drain", seconds])
        var frames: [[String: Any]] = []
        while let line = readLine(), line["drained"] == nil { frames.append(line) }
        return frames
    }
}

extension Dictionary where Key == String, Value == Any {
    /// An OSC frame's path and arguments, if this line is one.
    var oscFrame: (path: String, args: [Any])? {
        guard let osc = self["osc"] as? [String: Any], let path = osc["path"] as? String else { return nil }
        return (path, osc["args"] as? [Any] ?? [])
    }

    /// A text frame's COMMAND and DATA, if this line is one.
    var textFrame: (command: String, data: Any?)? {
        guard let text = self["text"] as? [String: Any], let command = text["COMMAND"] as? String else { return nil }
        return (command, text["DATA"])
    }
}
