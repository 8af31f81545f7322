import Foundation
import Logging

/// One sender the daemon runs for a remote route (`zita-j2n`), kept running: started at once,
/// started again after it exits (backoff from `firstDelay`, doubling up to `maximumDelay`, back to
/// the first after a run of `steadyRun`), its output logged line by line, stopped cleanly.
///
/// A sender that keeps failing the same way (no JACK server: it exits at once, every few
/// seconds, for as long as the server is away) is reported once, with its output, then once per
/// `repeatReport` with a count; the runs between are logged at debug level only.
///
/// Owns: its thread (which starts the child and waits for it), the child. The child is started
/// through `setpriv --pdeathsig TERM` when setpriv exists (util-linux): if the daemon dies without
/// stopping it (SIGKILL, a crash), the kernel stops the child too, so no orphan sender keeps the
/// route's JACK client name (a new daemon's sender would get another name, and other ports). The
/// death signal follows the thread that started the child, which is why one thread per sender
/// starts and waits for it for the sender's whole life.
public final class BridgeSender: @unchecked Sendable {
    // @unchecked: `stopping` and `child` are read and written only under `lock`; `thread` is set
    // by start, before stop; the rest is set in init.
    public let route: String
    private let command: (path: String, arguments: [String])
    /// The sender's own name (zita-j2n), for messages.
    private let name: String
    private let logger: Logger
    private let lock = NSLock()
    private var stopping = false
    /// The running child, until its thread reaps it: a signal sent under the lock never reaches
    /// a reused pid.
    private var child: ChildProcess?
    /// Cuts a wait between runs short (stop, or the JACK server back).
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private var thread: Thread?

    public static let firstDelay = 0.5
    public static let maximumDelay = 5.0
    public static let steadyRun = 30.0
    /// How often the same failure, repeated, is reported again (with its count).
    private let repeatReport: Double
    /// What the sender's JACK client is started with: never starting a JACK server of its own
    /// (libjack would, when none runs and this is unset).
    static let environment = ["JACK_NO_START_SERVER": "1"]

    /// `executable`: the sender's full path; `arguments`: its arguments; `repeatReport`: seconds
    /// between reports of the same failure repeated.
    public init(route: String, executable: String, arguments: [String], logger: Logger, repeatReport: Double = 60) {
        self.route = route
        self.logger = logger
        self.repeatReport = repeatReport
        name = URL(fileURLWithPath: executable).lastPathComponent
        if let setpriv = ChildProcess.find("setpriv") {
            command = (setpriv, ["--pdeathsig", "TERM", "--", executable] + arguments)
        } else {
            logger.warning("setpriv (util-linux) not found: the sender would outlive a daemon that is killed", metadata: ["route": "\(route)"])
            command = (executable, arguments)
        }
    }

    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "duckrouter.send"
        self.thread = thread
        thread.start()
    }

    /// Starts the sender again now if it is waiting to (the JACK server is back: a sender that
    /// found no server need not wait out its backoff).
    public func restartSoon() {
        wake.signal()
    }

    /// Stops the sender (SIGTERM; SIGKILL after 2 s) and waits for its thread to end. Once: a
    /// second call returns at once.
    public func stop() {
        guard requestStop() else { return }
        awaitStop(killAfter: .now() + 2)
    }

    /// The first half of `stop`, for stopping many at once: SIGTERM to the sender, nothing started
    /// after. Whether this was the first request (only then is `awaitStop` called).
    func requestStop() -> Bool {
        lock.withLock {
            defer { stopping = true }
            child?.send(SIGTERM)
            wake.signal()
            return !stopping && thread != nil
        }
    }

    /// The second half: waits for the thread until `killAfter`, then SIGKILLs the sender and waits
    /// 5 s more at most.
    func awaitStop(killAfter deadline: DispatchTime) {
        if finished.wait(timeout: deadline) == .timedOut {
            lock.withLock { child?.send(SIGKILL) }
            if finished.wait(timeout: .now() + 5) == .timedOut {
                logger.error("\(name) did not end after SIGKILL; not waiting for it", metadata: ["route": "\(route)"])
            }
        }
    }

    /// Logs how a run ended: at `level` the first time, at debug level while the same ending
    /// repeats (`quiet`), at `level` again with the count once `repeatReport` has passed.
    /// `short`: the run was short (a failure, which may repeat); a long one ends any repetition.
    private func report(_ what: String, repeated: String, short: Bool, quiet: Bool, level: Logger.Level, next: String,
                        _ repeating: inout (ending: String, reported: Date, since: Int)?) {
        if short, let last = repeating, last.ending == what {
            if quiet {
                repeating?.since += 1
                logger.debug("\(what); \(next)", metadata: ["route": "\(route)"])
            } else {
                let seconds = String(format: "%.0f", Date().timeIntervalSince(last.reported))
                logger.log(level: level, "\(repeated): \(last.since + 1) times in \(seconds) s; \(next)", metadata: ["route": "\(route)"])
                repeating = (what, Date(), 0)
            }
        } else {
            logger.log(level: level, "\(what); \(next)", metadata: ["route": "\(route)"])
            repeating = short ? (what, Date(), 0) : nil
        }
    }

    /// Wake-ups that came while the sender ran are spent: they must not cut the wait before the
    /// next start short. Done before the exit is reported, so a `restartSoon` that answers the
    /// report (the JACK server back just then) is not spent with them (a stop is seen by the
    /// checks after).
    private func spendWakeUps() {
        while wake.wait(timeout: .now()) == .success {}
    }

    private func run() {
        defer { finished.signal() }
        var delay = Self.firstDelay
        // The failure being repeated (how the last short run ended), when it was last reported,
        // and how many times it came since.
        var repeating: (ending: String, reported: Date, since: Int)?
        while true {
            let started = Date()
            let spawned: ChildProcess
            // Quiet while the last failure repeats and is not due to be reported again.
            let quiet = repeating.map { Date().timeIntervalSince($0.reported) < repeatReport } ?? false
            let level: Logger.Level = quiet ? .debug : .notice
            do {
                spawned = try lock.withLock { () throws(ChildProcess.SpawnError) -> ChildProcess in
                    if stopping { throw ChildProcess.SpawnError(description: "stopping") }
                    let started = try ChildProcess.spawn(command.path, command.arguments, environment: Self.environment)
                    child = started
                    return started
                }
                logger.log(level: quiet ? .debug : .info, "\(name) started", metadata: ["route": "\(route)", "pid": "\(spawned.pid)"])
                spawned.readLines { line in
                    logger.log(level: level, "\(name): \(line)", metadata: ["route": "\(route)"])
                }
                // Its output ended: it has exited, or closed its output and runs on (stop's
                // signals still reach it). Out of reach of them only once it has exited, before
                // it is reaped (its pid is free after).
                spawned.awaitExit()
                lock.withLock { child = nil }
                let ending = spawned.wait()
                if lock.withLock({ stopping }) {
                    logger.info("\(name) stopped (\(ending))", metadata: ["route": "\(route)"])
                    return
                }
                let ran = Date().timeIntervalSince(started)
                if ran >= Self.steadyRun { delay = Self.firstDelay }
                spendWakeUps()
                report("\(name) exited (\(ending))", repeated: "\(name) still exiting (\(ending))", short: ran < Self.steadyRun,
                       quiet: quiet, level: .warning, next: "starting it again in \(delay) s", &repeating)
            } catch {
                if lock.withLock({ stopping }) { return }
                spendWakeUps()
                report("\(error)", repeated: "still failing: \(error)", short: true, quiet: quiet, level: .error,
                       next: "trying again in \(delay) s", &repeating)
            }
            if lock.withLock({ stopping }) { return }
            let woken = wake.wait(timeout: .now() + delay) == .success
            if lock.withLock({ stopping }) { return }
            delay = woken ? Self.firstDelay : min(delay * 2, Self.maximumDelay)
        }
    }
}
