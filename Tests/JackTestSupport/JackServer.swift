import Foundation
import JackHost

/// A private `jackd -d dummy` for one test, under a unique server name, stopped on `stop()` or
/// when released. The dummy driver needs no sound card and runs in real time.
public final class JackServer: @unchecked Sendable {
    public let name: String
    public let sampleRate: Int
    public let period: Int
    public let logFile: URL
    private let process = Process()

    public enum Failure: Error, CustomStringConvertible {
        case didNotStart(String, log: String)
        public var description: String {
            switch self {
            case let .didNotStart(name, log): "jackd '\(name)' did not start:\n\(log)"
            }
        }
    }

    public init(sampleRate: Int = 48000, period: Int = 256) throws {
        JackLibraryMessages.route(to: nil)
        let unique = "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        name = "duckrouter-test-\(unique)"
        self.sampleRate = sampleRate
        self.period = period
        logFile = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let log = try FileHandle(forWritingTo: logFile)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/jackd")
        process.arguments = ["-n", name, "-d", "dummy", "-r", "\(sampleRate)", "-p", "\(period)"]
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()

        // Ready when a client can connect.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let probe = try? JackClient(name: "probe", server: name) {
                probe.close()
                return
            }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        stop()
        throw Failure.didNotStart(name, log: (try? String(contentsOf: logFile, encoding: .utf8)) ?? "")
    }

    deinit { stop() }

    public var isRunning: Bool { process.isRunning }

    /// Stops jackd (SIGTERM, then SIGKILL after 5 s) and waits for it.
    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: logFile)
    }
}
