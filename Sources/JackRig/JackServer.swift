import Foundation
import JackHost

/// A private `jackd -d dummy` for one test, under a server name this process has claimed, stopped
/// on `stop()` or when released. The dummy driver needs no sound card and runs in real time.
///
/// With `JACK_IMPL=pipewire` in the environment it is a private headless PipeWire instead (its
/// Dummy-Driver, no session manager), reached through PipeWire's libjack: the test process itself
/// must have loaded that libjack (`scripts/test-pipewire.sh` sets it up). See `Implementation`.
///
/// JACK2 keeps its servers in a machine-wide table of `JackServerRegistry.maxServers` (8) entries,
/// and a server that dies uncleanly keeps its entry until a later server takes the same name. So
/// tests draw from a small fixed pool of names (six, leaving room for people's own servers)
/// instead of inventing a new name each time, and make a name their own before using it:
///
/// 1. claim it (`JackServerNameClaim`, a lock file): a name another run (or another `JackServer`
///    of this run) holds is skipped, so two runs never start, stop or kill each other's servers;
/// 2. leave it if a live process has it registered in JACK's table (someone's own server under
///    that name, or a server whose test run was killed): it is not ours to touch;
/// 3. when the table is full, free the entries whose process is gone (provably stale), never one
///    of a live process, and nothing else in `/dev/shm`;
/// 4. start jackd (so that it dies with this process: `Launcher`) and wait until JACK's table
///    names *this* jackd as the server of that name and a client can connect (a client
///    connecting alone could have reached someone else's server).
///
/// The claim is held until `stop()`, across `kill9()` and `restart()`.
///
/// One process must not have clients on two servers at once: libjack (JACK2) keeps one graph and
/// engine per process (`JackLibGlobals`), set by the last client opened. Two `JackServer`s may
/// exist together, but tests that use them run one after the other (`swift test --no-parallel`,
/// as `make test` does).
public final class JackServer: @unchecked Sendable {
    // @unchecked: `process` and `claim` are changed only by kill9/restart/stop, which a test calls
    // from one thread.
    public let name: String
    public let sampleRate: Int
    public let period: Int
    public let logFile: URL
    private var process: Process
    private var claim: JackServerNameClaim?
    /// The network namespace jackd runs in, if any.
    public let namespace: String?

    public enum Failure: Error, CustomStringConvertible {
        case didNotStart(String, log: String)
        case claimedElsewhere(String)
        case noNameFree([String])
        case wrongLibrary(String)
        case periodNotChanged(Int)
        public var description: String {
            switch self {
            case let .didNotStart(name, log): "\(Implementation.current.program) '\(name)' did not start:\n\(log)"
            case let .claimedElsewhere(name): "the JACK server name '\(name)' was claimed by another test after this server stopped"
            case let .noNameFree(reasons): "no JACK server name of the test pool could be used:\n" + reasons.joined(separator: "\n")
            case let .wrongLibrary(message): message
            case let .periodNotChanged(frames): "the server's period could not be set to \(frames)"
            }
        }
    }

    /// The names tests use. Fewer than JACK2's eight entries, so that a person's own server (or
    /// two) still fits beside a full test run.
    public static let namePool = (0..<6).map { "duckrouter-test-\($0)" }

    /// - Parameter namespace: a network namespace to run jackd in (`NetworkHosts`: a host of its
    ///   own for network audio); clients still reach it here, through /dev/shm.
    public init(sampleRate: Int = 48000, period: Int = 256, namespace: String? = nil) throws {
        JackLibraryMessages.route(to: nil)
        try Implementation.current.checkLibrary()
        self.sampleRate = sampleRate
        self.period = period
        self.namespace = namespace
        var reasons: [String] = []
        for candidate in Self.namePool {
            guard let claim = try JackServerNameClaim(candidate) else {
                reasons.append("\(candidate): claimed by another test (\(JackServerNameClaim.lockFile(for: candidate).path))")
                continue
            }
            if Implementation.current == .jackd {
                if let entry = try JackServerRegistry.entry(named: candidate), !entry.ownerIsGone {
                    reasons.append("\(candidate): registered in JACK by live process \(entry.pid), which is not ours")
                    claim.release()
                    continue
                }
                try Self.makeRoomInRegistry(for: candidate)
            }
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(candidate)-\(getpid()).log")
            if let started = try Self.start(name: candidate, sampleRate: sampleRate, period: period, log: log, namespace: namespace) {
                name = candidate
                logFile = log
                process = started
                self.claim = claim
                return
            }
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            reasons.append("\(candidate): \(Implementation.current.program) did not start:\n\(text)")
            try? FileManager.default.removeItem(at: log)
            claim.release()
        }
        throw Failure.noNameFree(reasons)
    }

    /// Frees the entries of servers whose process is gone when JACK's table has no free entry
    /// for a new server, or when `name`'s own entry is one of them (JACK reuses that itself, but
    /// takes an owner that is a zombie for alive). A live owner of `name` was ruled out before.
    private static func makeRoomInRegistry(for name: String) throws {
        let entries = try JackServerRegistry.entries()
        let own = entries.first { $0.name == name && $0.uid == Int(getuid()) }
        guard entries.count >= JackServerRegistry.maxServers || own != nil else { return }
        let freed = try JackServerRegistry.reclaimStaleEntries()
        if !freed.isEmpty {
            FileHandle.standardError.write(Data("JackServer: freed JACK registry entries of dead servers: \(freed)\n".utf8))
        }
    }

    /// Starts the server under `name` and waits until a client can connect to it (and, for jackd,
    /// JACK's table names it); nil when it did not start.
    private static func start(name: String, sampleRate: Int, period: Int, log: URL, namespace: String?) throws -> Process? {
        if Implementation.current == .pipewire {
            if namespace != nil { throw Failure.wrongLibrary("a JACK server in a network namespace is jackd's only (netjack2)") }
            return try startPipeWire(name: name, sampleRate: sampleRate, period: period, log: log)
        }
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        let process = Process()
        // `ip netns exec` enters the namespace and execs jackd: the same process, as with setpriv.
        let jackd = (namespace.map { ["/usr/sbin/ip", "netns", "exec", $0] } ?? [])
            + ["/usr/bin/jackd", "-n", name, "-d", "dummy", "-r", "\(sampleRate)", "-p", "\(period)"]
        if FileManager.default.isExecutableFile(atPath: Launcher.setpriv) {
            // setpriv execs jackd (same pid) with a parent-death signal: see `Launcher`.
            process.executableURL = URL(fileURLWithPath: Launcher.setpriv)
            process.arguments = ["--pdeathsig", "KILL", "--"] + jackd
        } else {
            process.executableURL = URL(fileURLWithPath: jackd[0])
            process.arguments = Array(jackd.dropFirst())
        }
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try Launcher.shared.run(process)
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline && process.isRunning {
            if (try? JackServerRegistry.entry(named: name))??.pid == process.processIdentifier,
               namespace == nil ? Self.probe(name) : Self.probeFromOutside(name) {
                return process
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return nil
    }

    deinit { stop() }

    /// Whether a client of this process can join server `name`.
    private static func probe(_ name: String) -> Bool {
        guard let probe = try? JackClient(name: "probe", server: name) else { return false }
        probe.close()
        return true
    }

    /// Whether `jack_lsp` (another process) can join server `name`. A server the test process
    /// must not join itself: JACK2's libjack keeps one set of a server's shared memory per process
    /// (`JackLibGlobals`), so a process that is a client of two servers at once crashes in a
    /// process thread waiting on the other server's semaphore. A second server's clients (a stage
    /// box's, `NetworkHosts`) run in processes of their own.
    public static func probeFromOutside(_ name: String) -> Bool {
        (try? Tool.output("/usr/bin/jack_lsp", ["-s", name]))?.status == 0
    }

    /// Kills jackd with SIGKILL, as a crash would, and waits for it. Its clients lose the server;
    /// its entry stays in JACK's table (as after a crash) and the name stays claimed.
    public func kill9() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        while process.isRunning { Thread.sleep(forTimeInterval: 0.005) }
    }

    /// Starts jackd again under the same name and settings after `kill9()` or `stop()`; returns
    /// when a client can connect. Returns the moment jackd was launched.
    @discardableResult
    public func restart() throws -> Date {
        if claim?.isHeld != true {
            guard let again = try JackServerNameClaim(name) else {
                throw Failure.claimedElsewhere(name)
            }
            claim = again
        }
        let launched = Date()
        guard let started = try Self.start(name: name, sampleRate: sampleRate, period: period, log: logFile, namespace: namespace) else {
            throw Failure.didNotStart(name, log: (try? String(contentsOf: logFile, encoding: .utf8)) ?? "")
        }
        process = started
        return launched
    }

    /// Freezes the server (SIGSTOP), as a hung server would be: its clients get no cycles and
    /// every request they make to it waits. `resume()` lets it go on. Returns once every thread of
    /// it has stopped (the signal stops each at its next return from the kernel: on a busy
    /// machine a thread already answering a request may finish it first), or after 2 s.
    public func suspend() {
        guard process.isRunning else { return }
        let pid = process.processIdentifier
        kill(pid, SIGSTOP)
        let deadline = Date().addingTimeInterval(2)
        while Date() < deadline && !Self.allStopped(pid) { usleep(1000) }
    }

    /// Whether every thread of the process is stopped (state `T` in /proc/<pid>/task/<tid>/stat).
    static func allStopped(_ pid: Int32) -> Bool {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"), !tasks.isEmpty else { return false }
        return tasks.allSatisfy { tid in
            // The state follows the command name's closing parenthesis.
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first == "T"
        }
    }

    /// Lets a suspended server go on (SIGCONT).
    public func resume() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGCONT)
    }

    public var isRunning: Bool { process.isRunning }
    public var processIdentifier: Int32 { process.processIdentifier }

    /// Stops jackd (SIGTERM, then SIGKILL after 5 s), waits for it, and gives the name back.
    public func stop() {
        resume()
        process.stop()
        try? FileManager.default.removeItem(at: logFile)
        claim?.release()
        claim = nil
    }
}

/// Starts jackd so that it does not outlive the test process: a test run that crashes, is killed
/// or times out would otherwise leave its servers running, each holding one of JACK's eight
/// entries (and a name of the pool) for good, and a live server's entry is never reclaimed.
///
/// jackd is started through `setpriv --pdeathsig KILL`, which sets the parent-death signal and
/// execs it. Linux sends that signal when the *thread* that started the child ends, not the
/// process, so every jackd is started from this one thread, which lives as long as the process.
/// A server killed that way leaves a stale entry, which the next server of that name reuses.
public final class Launcher: @unchecked Sendable {
    // @unchecked: `jobs` is guarded by `lock`; the thread only takes jobs from it.
    public static let setpriv = "/usr/bin/setpriv"
    public static let shared = Launcher()

    /// Makes `process` die with the test process (a daemon a crashed or killed test run leaves
    /// behind would rejoin the next server of its name and play into the next test): its command
    /// becomes `setpriv --pdeathsig KILL -- <command>` (the same pid), to be started by `run`.
    public static func tieToTestProcess(_ process: Process) {
        guard FileManager.default.isExecutableFile(atPath: setpriv), let executable = process.executableURL else { return }
        process.arguments = ["--pdeathsig", "KILL", "--", executable.path] + (process.arguments ?? [])
        process.executableURL = URL(fileURLWithPath: setpriv)
    }

    private let lock = NSLock()
    private var jobs: [() -> Void] = []
    private let ready = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [unowned self] in
            while true {
                ready.wait()
                let job = lock.withLock { jobs.removeFirst() }
                job()
            }
        }
        thread.name = "JackServer.launcher"
        thread.start()
    }

    /// Runs `process` from the launcher thread; returns once it is started.
    public func run(_ process: Process) throws {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var failure: Error?
        lock.withLock {
            jobs.append {
                do { try process.run() } catch { failure = error }
                done.signal()
            }
        }
        ready.signal()
        done.wait()
        if let failure { throw failure }
    }
}

