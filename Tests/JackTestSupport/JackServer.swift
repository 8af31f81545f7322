import Foundation
import JackHost

/// A private `jackd -d dummy` for one test, under a unique server name, stopped on `stop()` or
/// when released. The dummy driver needs no sound card and runs in real time.
public final class JackServer: @unchecked Sendable {
    public let name: String
    public let sampleRate: Int
    public let period: Int
    public let logFile: URL
    private var process: Process

    public enum Failure: Error, CustomStringConvertible {
        case didNotStart(String, log: String)
        public var description: String {
            switch self {
            case let .didNotStart(name, log): "jackd '\(name)' did not start:\n\(log)"
            }
        }
    }

    /// JACK2 keeps a fixed number of server slots in shared memory and a server that dies uncleanly
    /// never frees its slot, unless a later server takes the same name. So tests draw from a small
    /// pool of names instead of inventing a new one each time.
    static let namePool = (0..<6).map { "duckrouter-test-\($0)" }

    public init(sampleRate: Int = 48000, period: Int = 256) throws {
        JackLibraryMessages.route(to: nil)
        self.sampleRate = sampleRate
        self.period = period
        var lastLog = ""
        for attempt in 0..<(Self.namePool.count + 1) {
            if attempt == Self.namePool.count {
                // Every name was refused: if no jackd runs at all, the registry holds only stale
                // entries of servers that died; clear them once and try the pool again.
                guard Self.removeStaleRegistryIfNoServerRuns() else { break }
            }
            let candidate = Self.namePool[attempt % Self.namePool.count]
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(candidate)-\(getpid()).log")
            if let started = try Self.start(name: candidate, sampleRate: sampleRate, period: period, log: log) {
                name = candidate
                logFile = log
                process = started
                return
            }
            lastLog = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: log)
        }
        throw Failure.didNotStart(Self.namePool.joined(separator: ", "), log: lastLog)
    }

    /// Starts jackd under `name` and waits until a client can connect; nil when it did not start.
    private static func start(name: String, sampleRate: Int, period: Int, log: URL) throws -> Process? {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/jackd")
        process.arguments = ["-n", name, "-d", "dummy", "-r", "\(sampleRate)", "-p", "\(period)"]
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && process.isRunning {
            if let probe = try? JackClient(name: "probe", server: name) {
                probe.close()
                return process
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return nil
    }

    /// Removes JACK's shared-memory registry when no jackd process exists on the machine.
    private static func removeStaleRegistryIfNoServerRuns() -> Bool {
        let running = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.contains { entry in
            guard Int(entry) != nil,
                  let comm = try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8) else { return false }
            return comm.trimmingCharacters(in: .whitespacesAndNewlines) == "jackd"
        } ?? true
        guard !running, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/dev/shm") else { return false }
        for entry in entries where entry.hasPrefix("jack") {
            try? FileManager.default.removeItem(atPath: "/dev/shm/\(entry)")
        }
        FileHandle.standardError.write(Data("JackServer: cleared stale JACK shared memory (no jackd was running)\n".utf8))
        return true
    }

    deinit { stop() }

    /// Kills jackd with SIGKILL, as a crash would, and waits for it. Its clients lose the server.
    public func kill9() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning { Thread.sleep(forTimeInterval: 0.005) }
    }

    /// Starts jackd again under the same name and settings after `kill9()` or `stop()`; returns
    /// when a client can connect. Returns the moment jackd was launched.
    @discardableResult
    public func restart() throws -> Date {
        let launched = Date()
        guard let started = try Self.start(name: name, sampleRate: sampleRate, period: period, log: logFile) else {
            throw Failure.didNotStart(name, log: (try? String(contentsOf: logFile, encoding: .utf8)) ?? "")
        }
        process = started
        return launched
    }

    public var isRunning: Bool { process.isRunning }
    public var processIdentifier: Int32 { process.processIdentifier }

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
