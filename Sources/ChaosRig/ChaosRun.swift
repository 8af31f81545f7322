import Foundation
import JackRig
import OSCTransport

/// The chaos run (`make chaos`): a private server, the router on `ChaosSession`'s file, tone
/// sources and a sink per route, and a seeded schedule of faults. After each step it waits for
/// the router to be back as the model says: every setting read over OSC and in the state file,
/// every route's sound, tone by tone. A violation ends the run with the seed and the steps that
/// led to it, so the same seed plays them again.
public final class ChaosRun: @unchecked Sendable {
    // @unchecked: one harness thread.
    public struct Options: Sendable {
        public var seconds: Double
        public var seed: UInt64
        public var period = 256
        public var router = ".build/release/duckrouter"
        /// Stops after this many steps (a schedule played only as far as the defect it found;
        /// its steps are drawn as in the whole run of `seconds`).
        public var steps: Int?
        /// Where each line of progress goes.
        public var say: @Sendable (String) -> Void = { print($0) }

        public init(seconds: Double, seed: UInt64) {
            self.seconds = seconds
            self.seed = seed
        }
    }

    let options: Options
    var random: SplitMix
    let folder: URL
    var stage: ChaosStage!
    var daemon: ChaosDaemon!
    var peers: ChaosPeers!
    /// Every outcome the rules allow so far, each a whole model: one, unless a fault left
    /// something open that the router has not shown yet (which route came back last, while a
    /// selection hides it). Each change moves them all; each check keeps those that agree.
    var candidates = [ChaosSession.model()]
    /// The first candidate: what the run draws its next step from (its choices depend only on
    /// what every candidate shows alike).
    var model: ChaosModel { candidates[0] }

    /// Moves every candidate the same way.
    func mutate(_ change: (inout ChaosModel) -> Void) {
        var moved: [ChaosModel] = []
        for var candidate in candidates {
            change(&candidate)
            if !moved.contains(candidate) { moved.append(candidate) }
        }
        candidates = moved
    }

    /// The model after each change the router answered, with when: what the state file may hold.
    var history: [(time: Double, model: ChaosModel)] = []
    var fileHasGuest = false
    var readOnly: ReadOnlyFolder?
    /// The last moment the state folder was read-only (a SIGKILL soon after may lose what waited).
    var readOnlyUntil = -Double.infinity
    let started = ChaosClock.now
    var report: ChaosReport
    /// Windows of the monotonic clock in which a fault may stop or jump the sound (or the
    /// harness started an OSC-registered app's tone: `connectRegistered`).
    var breaks: [(from: UInt64, to: UInt64, fault: ChaosFault)] = []
    /// The router's xrun count as seen at each `/state` (a restart starts it again at 0).
    var xrunMarks: [(at: UInt64, count: Int)] = []
    /// What the sinks saw, judged between checks (ChaosRun+Watch.swift).
    var judge = SinkEventJudge()
    /// The time of the newest answered state the last check found the state file holding.
    var lastSavedCheck = 0.0
    /// Where a fault wants its recovery counted from, if not its end (a server's launch).
    var recoveryFrom: UInt64?

    public init(_ options: Options) throws {
        self.options = options
        random = SplitMix(seed: options.seed)
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckchaos-\(getpid())-\(options.seed)")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        report = ChaosReport(seed: options.seed, seconds: options.seconds)
    }

    var elapsed: Double { ChaosClock.seconds(since: started) }

    /// Runs the schedule for `options.seconds`; returns the report (`report.violation` says how
    /// it ended). Throws only when the rig itself cannot run.
    public func run() throws -> ChaosReport {
        defer { tearDown() }
        stage = try ChaosStage(period: options.period)
        report.server = stage.implementation
        let oscPort = try OSCPorts.free(), httpPort = try OSCPorts.free()
        peers = ChaosPeers(oscPort: oscPort, httpPort: httpPort)
        let stateFolder = folder.appendingPathComponent("state")
        readOnly = ReadOnlyFolder(stateFolder)
        daemon = ChaosDaemon(binary: options.router, server: stage.server.name, folder: folder, stateFolder: stateFolder, oscPort: oscPort)
        try writeSession(withGuest: false)
        try daemon.start()
        history = [(elapsed, model)]
        say("duckchaos: seed \(options.seed), \(Int(options.seconds)) s on \(stage.implementation), period \(options.period), from \(Date()) (0.0 s); "
            + "router pid \(daemon.pid ?? 0); files in \(folder.path)")
        guard settle(after: [.oscChanges], since: ChaosClock.now) else { return finish() }
        report.baseline = daemon.resources()

        while elapsed < options.seconds && report.violation == nil && report.steps.count < options.steps ?? .max {
            // Near the end only faults that settle quickly, so the run ends on time.
            let endingSoon = options.seconds - elapsed < 12
            // What the sinks saw before this step is judged before its faults begin (a fault's
            // window would otherwise excuse a step held back from the last read).
            if judge.holding {
                Thread.sleep(forTimeInterval: 0.3)
                watchSound()
                guard report.violation == nil else { break }
            }
            let step = ChaosFault.drawStep(model, readOnlyPossible: readOnly?.possible ?? false, endingSoon: endingSoon, &random)
            let begin = ChaosClock.now
            recoveryFrom = nil
            var details: [String] = []
            var breaking: [(from: UInt64, fault: ChaosFault)] = []
            for fault in step {
                if fault.breaksTheSound { breaking.append((ChaosClock.now, fault)) }
                do {
                    details.append(try perform(fault))
                } catch let failure as ChaosFailure {
                    violate("\(fault.rawValue): \(failure.description)")
                    break
                }
            }
            let end = ChaosClock.now
            report.steps.append(.init(at: ChaosClock.seconds(since: started, at: begin), faults: step, detail: details.joined(separator: "; ")))
            say(String(format: "%7.1f s  %@: %@", report.steps.last!.at, step.map(\.rawValue).joined(separator: " + "), details.joined(separator: "; ")))
            guard report.violation == nil else { break }
            let settled = settle(after: step, since: end, countingFrom: recoveryFrom ?? end)
            // A fault that stops the sound itself excuses the steps at the sinks from its start
            // until the router was back (a little after: the check's window).
            for (from, fault) in breaking { breaks.append((from, ChaosClock.now &+ 100_000_000, fault)) }
            guard settled else { break }
            watchSound()
            watchResources()
            peers.readSlowly()
            // A pause before the next step, the sound and the xruns watched all the while.
            let pauseEnd = ChaosClock.now &+ UInt64(300 + random.next(1700)) * 1_000_000
            while ChaosClock.now < pauseEnd {
                Thread.sleep(forTimeInterval: 0.1)
                noteXruns(daemon.state().flatMap(ChaosObservation.init))
            }
            watchSound()
        }
        // The events held back at the last read (the newest quarter second's) are judged too.
        if report.violation == nil, judge.holding {
            Thread.sleep(forTimeInterval: 0.3)
            watchSound()
        }
        return finish()
    }

    func say(_ line: String) { options.say(line) }

    /// Notes the router's xrun count (from a `/state` read anyway), to place xruns in time.
    func noteXruns(_ seen: ChaosObservation?) {
        guard let seen else { return }
        if xrunMarks.last?.count != seen.xruns { xrunMarks.append((ChaosClock.now, seen.xruns)) }
        if xrunMarks.count > 4096 { xrunMarks.removeFirst(xrunMarks.count - 4096) }
    }

    func violate(_ what: String) {
        guard report.violation == nil else { return }
        report.violation = what
        say("VIOLATION at \(String(format: "%.1f", elapsed)) s: \(what)")
    }

    // MARK: Settling

    /// Waits until the router agrees with one of the candidates (settings, state file, sound),
    /// up to the step's deadline; records the recovery time, or the violation.
    func settle(after step: [ChaosFault], since end: UInt64, countingFrom start: UInt64? = nil) -> Bool {
        let deadline = step.map(\.recoveryDeadline).max() ?? 5
        var last: [String] = []
        while true {
            if let status = daemon.unexpectedExit {
                violate("the router exited by itself (status \(status))")
                return false
            }
            let differences = agreement(since: end)
            if differences.isEmpty {
                let recovery = ChaosClock.seconds(since: start ?? end)
                for fault in step { report.recoveries[fault, default: []].append(recovery) }
                if step.count > 1 { report.compoundRecoveries.append(recovery) }
                return true
            }
            last = differences
            if ChaosClock.seconds(since: end) > deadline {
                violate("not back as the model says \(String(format: "%.0f", deadline)) s after \(step.map(\.rawValue).joined(separator: " + ")): "
                        + last.prefix(12).joined(separator: "; "))
                noteGaps(stage.takeEvents())
                return false
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// What differs from the best candidate (empty: one agrees in settings, state file and
    /// sound, and becomes the model).
    func agreement(since end: UInt64) -> [String] {
        let connecting = ChaosClock.now
        if stage.connectRegistered(model.apps) {
            // The tone joins where its wave is: that step is the program's, as a restarted
            // source's is (found by seed 888447386: x1 registered and activated, then connected).
            breaks.append((connecting, ChaosClock.now &+ 100_000_000, .oscChanges))
        }
        guard let state = daemon.state(), let seen = ChaosObservation(state) else { return ["/state unanswered"] }
        noteXruns(seen)
        var best: [String]?
        var agreeing: [ChaosModel] = []
        for candidate in candidates {
            var differences = candidate.differences(from: seen)
            if differences.isEmpty {
                differences = savedState().map(candidate.differences(fromSaved:)) ?? ["the state file does not parse"]
            }
            if differences.isEmpty {
                // Only sound heard wholly after the step's faults ended speaks of the recovery.
                let windows = stage.sinks.compactMapValues { sink in
                    sink.window(seconds: ToneMeter.windowSeconds).flatMap { $0.startNanoseconds >= end ? $0 : nil }
                }
                let unheard = stage.sinks.keys.filter { windows[$0] == nil }.sorted()
                if !unheard.isEmpty { differences = unheard.map { "\($0)'s sink has not heard \(ToneMeter.windowSeconds) s without a gap since the step" } }
                else { differences = candidate.differences(heard: windows) }
            }
            if differences.isEmpty {
                agreeing.append(candidate)
            } else if best == nil || differences.count < best!.count {
                best = differences
            }
        }
        guard agreeing.isEmpty else {
            if agreeing.count < candidates.count { report.openOutcomesSettled += 1 }
            candidates = agreeing
            remember()
            // The state file held this: a SIGKILL from now on may not go back past it.
            lastSavedCheck = history.last?.time ?? lastSavedCheck
            return []
        }
        return best ?? ["no candidate"]
    }

    /// The state file as the router wrote it ([:] while there is none; nil when it does not parse).
    /// The model as it is now, among the states the state file may hold (the last 1,000).
    func remember() {
        guard history.last?.model != model else { return }
        history.append((elapsed, model))
        if history.count > 1000 { history.removeFirst(history.count - 1000) }
    }

    func savedState() -> [String: Any]? {
        guard let data = try? Data(contentsOf: daemon.stateFile) else { return [:] }
        return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    func writeSession(withGuest: Bool) throws {
        try ChaosSession.file(withGuest: withGuest, oscPort: daemon.oscPort, httpPort: peers.httpPort)
            .write(to: daemon.session, atomically: true, encoding: .utf8)
        fileHasGuest = withGuest
    }

    // MARK: The end

    func finish() -> ChaosReport {
        report.elapsed = elapsed
        if let growth = report.memoryGrowth, growth.kB > 32 * 1024 {
            violate("the router's resident memory grew \(growth.kB / 1024) MB in \(Int(growth.seconds)) s after its first minute")
        }
        if report.violation == nil, let daemon {
            // No lost save: a clean stop, and the state file holds the model's settings.
            if !daemon.stop() { violate("the router did not stop cleanly on SIGTERM") }
            else if let saved = savedState() {
                let lost = model.differences(fromSaved: saved)
                if !candidates.contains(where: { $0.differences(fromSaved: saved).isEmpty }) { violate("after SIGTERM the state file differs: " + lost.joined(separator: "; ")) }
            } else { violate("the state file does not parse after SIGTERM") }
        }
        if report.violation != nil, let daemon {
            report.log = daemon.log
            report.keptFolder = folder.path
        }
        return report
    }

    func tearDown() {
        peers?.releaseStuck()
        if let daemon, daemon.process?.isRunning == true { daemon.kill9() }
        stage?.stop()
        // The state folder is a tmpfs of the run's: what the router left there is copied out of
        // it before it goes, for a run that is kept.
        if report.violation != nil, let daemon {
            try? FileManager.default.copyItem(at: daemon.stateFile, to: folder.appendingPathComponent("chaos.state.json"))
        }
        readOnly?.remove()
        if report.violation == nil { try? FileManager.default.removeItem(at: folder) }
    }
}

/// The monotonic clock the sinks stamp their events with.
enum ChaosClock {
    static var now: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    static func seconds(since start: UInt64, at moment: UInt64 = now) -> Double {
        Double(Int64(bitPattern: moment &- start)) / 1e9
    }
}
