import Foundation

/// A private, headless PipeWire for tests (issue 16): `pipewire` with its stock configuration (its
/// Dummy-Driver gives JACK clients their cycles with no session manager; its module-access lets
/// them see the graph) in a runtime directory of its own, so it never meets a desktop's PipeWire
/// or another run's. JACK programs reach it through PipeWire's libjack: `jackEnvironment` holds
/// the variables a child process needs for that. Torn down (and its directory removed) by `stop()`.
public final class PipeWireServer: @unchecked Sendable {
    // @unchecked: `process` is changed only by kill9/restart/stop, which a test calls from one thread.
    /// PipeWire's JACK library, which replaces libjack for a process that loads it first.
    /// `/usr/lib/<multiarch>/pipewire-0.3/jack` (x86_64-linux-gnu, aarch64-linux-gnu, …).
    public static let jackLibraryDirectory: String = {
        let lib = "/usr/lib"
        let arches = (try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []
        return arches.sorted().map { "\(lib)/\($0)/pipewire-0.3/jack" }
            .first { FileManager.default.fileExists(atPath: $0 + "/libjack.so.0") }
            ?? "\(lib)/x86_64-linux-gnu/pipewire-0.3/jack"
    }()
    public static let binary = "/usr/bin/pipewire"

    public struct Failure: Error, CustomStringConvertible { public let description: String }

    public static var isInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: binary)
            && FileManager.default.fileExists(atPath: jackLibraryDirectory + "/libjack.so.0")
    }

    public let runtimeDirectory: URL
    private var process: Process
    private let quantum: Int?

    /// `quantum`: the period PipeWire gives JACK clients (PIPEWIRE_QUANTUM, at 48 kHz); nil for
    /// PipeWire's default (1024).
    public init(quantum: Int? = nil) throws {
        runtimeDirectory = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("duckrouter-pipewire-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: runtimeDirectory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        self.quantum = quantum
        process = Process()
        process = try start()
    }

    deinit { stop() }

    /// What a JACK program run as a child needs to be a client of this server.
    public var jackEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtimeDirectory.path
        environment["LD_LIBRARY_PATH"] = Self.jackLibraryDirectory
            + (environment["LD_LIBRARY_PATH"].map { ":" + $0 } ?? "")
        if let quantum { environment["PIPEWIRE_QUANTUM"] = "\(quantum)/48000" }
        environment.removeValue(forKey: "JACK_DEFAULT_SERVER")
        return environment
    }

    private var socket: URL { runtimeDirectory.appendingPathComponent("pipewire-0") }

    private func start() throws -> Process {
        try? FileManager.default.removeItem(at: socket)
        let started = Process()
        started.executableURL = URL(fileURLWithPath: Self.binary)
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtimeDirectory.path
        // No desktop bus here: PipeWire logs that it cannot reach one and carries on.
        environment["DBUS_SESSION_BUS_ADDRESS"] = "disabled:"
        started.environment = environment
        let log = runtimeDirectory.appendingPathComponent("pipewire.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        started.standardOutput = try FileHandle(forWritingTo: log)
        started.standardError = started.standardOutput
        try started.run()
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: socket.path) {
            guard started.isRunning, Date() < deadline else {
                if started.isRunning { kill(started.processIdentifier, SIGKILL) }
                started.waitUntilExit()
                throw Failure(description: "pipewire did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return started
    }

    public var isRunning: Bool { process.isRunning }

    /// Kills the daemon at once (SIGKILL), as a crash would.
    public func kill9() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Stops the daemon the way a user does (SIGTERM), and waits for it.
    public func terminate() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// Starts the daemon again in the same runtime directory; returns when its socket is there.
    @discardableResult
    public func restart() throws -> Date {
        let launched = Date()
        process = try start()
        return launched
    }

    /// Stops the daemon (SIGTERM, then SIGKILL after 5 s) and removes its runtime directory.
    public func stop() {
        process.stop()
        try? FileManager.default.removeItem(at: runtimeDirectory)
    }
}

extension Process {
    /// Stops a server the tests started: SIGTERM, then SIGKILL after `grace` seconds; waits for it.
    func stop(grace: Double = 5) {
        guard isRunning else { return }
        terminate()
        let deadline = Date().addingTimeInterval(grace)
        while isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if isRunning { kill(processIdentifier, SIGKILL) }
        waitUntilExit()
    }
}
