import Foundation
import JackRig
import OSCTransport

/// The router under test: the release daemon on the run's session, its log appended to one file
/// across restarts, started again after a SIGKILL as systemd would, and asked over OSC.
public final class ChaosDaemon: @unchecked Sendable {
    // @unchecked: used from the harness's thread only.
    public let binary: String
    public let server: String
    public let session: URL
    public let stateFile: URL
    public let logFile: URL
    public let oscPort: UInt16
    public private(set) var process: Process?
    /// How many times it was started, and how many of its exits the harness caused.
    public private(set) var starts = 0
    private var expectingExit = false
    private var client: OSCClient?

    public init(binary: String, server: String, folder: URL, stateFolder: URL, oscPort: UInt16) {
        self.binary = binary
        self.server = server
        session = folder.appendingPathComponent("chaos.json")
        stateFile = stateFolder.appendingPathComponent("chaos.state.json")
        logFile = folder.appendingPathComponent("duckrouter.log")
        self.oscPort = oscPort
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
    }

    public var pid: Int32? { process.map(\.processIdentifier) }

    /// Starts it and waits until it answers `/state` (15 s at most).
    public func start() throws {
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: binary)
        daemon.arguments = ["--server", server, "--state", stateFile.path, "--log-level", "info", session.path]
        let log = try FileHandle(forWritingTo: logFile)
        log.seekToEndOfFile()
        daemon.standardError = log
        daemon.standardOutput = log
        var environment = ProcessInfo.processInfo.environment
        if environment["SWIFT_BACKTRACE"] == nil { environment["SWIFT_BACKTRACE"] = "enable=yes,interactive=no,output-to=stderr,threads=all" }
        daemon.environment = environment
        Launcher.tieToTestProcess(daemon)
        try Launcher.shared.run(daemon)
        try? log.close()
        process = daemon
        starts += 1
        expectingExit = false
        client = nil
        let deadline = Date().addingTimeInterval(15)
        while state() == nil {
            guard daemon.isRunning else { throw ChaosFailure("the router exited at start (status \(daemon.terminationStatus))") }
            guard Date() < deadline else { throw ChaosFailure("the router did not answer /state within 15 s of its start") }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// An exit the harness did not cause: the status, else nil while it runs (or was killed).
    public var unexpectedExit: Int32? {
        guard let process, !process.isRunning, !expectingExit else { return nil }
        return process.terminationStatus
    }

    public func kill9() {
        guard let process, process.isRunning else { return }
        expectingExit = true
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        client = nil
    }

    /// SIGTERM, and waits up to `seconds` for a clean exit; false if it did not exit 0.
    public func stop(seconds: Double = 10) -> Bool {
        guard let process, process.isRunning else { return false }
        expectingExit = true
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit(); return false }
        return process.terminationStatus == 0
    }

    public func reload() {
        if let process, process.isRunning { kill(process.processIdentifier, SIGHUP) }
    }

    /// The log as it is now.
    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    // MARK: OSC

    /// What the router answered a message: `/reply` arguments, or the error code and text.
    public enum Answer: Sendable, Equatable, CustomStringConvertible {
        case reply([OSCArgument])
        case error(Int32, String)
        case none

        public var code: Int32? { if case let .error(code, _) = self { code } else { nil } }
        public var description: String {
            switch self {
            case let .reply(arguments): "/reply \(arguments)"
            case let .error(code, text): "/error \(code) \(text)"
            case .none: "no answer"
            }
        }
    }

    /// Sends `message` over TCP and waits for its answer (`timeout` s). A connection that got no
    /// answer is dropped, so a late answer never passes for the next message's.
    public func ask(_ message: OSCMessage, timeout: Double = 3) -> Answer {
        if client == nil { client = try? OSCClient(OSCURL(transport: .tcp, host: "127.0.0.1", port: oscPort)) }
        guard let client, (try? client.send(message)) != nil else { self.client = nil; return .none }
        let answer = try? client.receive(timeout: timeout, until: { reply in
            (reply.path == "/reply" || reply.path == "/error") && reply.arguments.first == .string(message.path)
        })
        guard let answer else { self.client = nil; return .none }
        return Self.answer(answer)
    }

    /// Sends `messages` in one bundle and waits for each one's answer, in order (`.none` for
    /// those that did not come within `timeout`).
    public func askBundle(_ messages: [OSCMessage], timetag: OSCTimetag, timeout: Double) -> [Answer] {
        if client == nil { client = try? OSCClient(OSCURL(transport: .tcp, host: "127.0.0.1", port: oscPort)) }
        guard let client, (try? client.send(packet: OSCCodec.encodeBundle(messages, timetag: timetag))) != nil else {
            self.client = nil
            return messages.map { _ in .none }
        }
        var answers: [String: Answer] = [:]
        let deadline = Date().addingTimeInterval(timeout)
        while answers.count < messages.count, deadline.timeIntervalSinceNow > 0 {
            guard let packet = try? client.receive(timeout: deadline.timeIntervalSinceNow) else { break }
            for reply in OSCClient.messages(in: packet) where reply.path == "/reply" || reply.path == "/error" {
                guard case let .string(path)? = reply.arguments.first, messages.contains(where: { $0.path == path }) else { continue }
                answers[path] = Self.answer(reply)
            }
        }
        if answers.count < messages.count { self.client = nil }
        return messages.map { answers[$0.path] ?? .none }
    }

    static func answer(_ reply: OSCMessage) -> Answer {
        if reply.path == "/reply" { return .reply(Array(reply.arguments.dropFirst())) }
        var code: Int32 = 0, text = ""
        if case let .int32(value)? = reply.arguments.dropFirst().first { code = value }
        if case let .string(value)? = reply.arguments.last { text = value }
        return .error(code, text)
    }

    /// `/state` as JSON, or nil when it did not answer.
    public func state(timeout: Double = 3) -> [String: Any]? {
        guard case let .reply(arguments) = ask(OSCMessage("/state"), timeout: timeout),
              case let .string(json)? = arguments.last,
              let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return nil }
        return object
    }

    /// The daemon's threads, descriptors and resident memory now (nil when it is not running).
    public func resources() -> (threads: Int, descriptors: Int, residentKB: Int)? {
        guard let pid, process?.isRunning == true, let threads = threadCount(pid),
              let descriptors = openDescriptors(pid), let resident = residentKB(pid) else { return nil }
        return (threads, descriptors, resident)
    }
}

/// A run that cannot go on (its rig failed), as opposed to a violation by the router.
public struct ChaosFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
