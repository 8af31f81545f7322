import Foundation
import JackRig
import OSCTransport

/// Each fault of a step, carried out, and what it does to the model.
extension ChaosRun {
    func perform(_ fault: ChaosFault) throws -> String {
        switch fault {
        case .oscChanges:
            let count = 1 + random.next(4)
            if count >= 2 && random.next(3) == 0 { return try bundle(count, timed: false) }
            return try (0..<count).map { _ in try change() }.joined(separator: ", ")
        case .timedBundle:
            return try bundle(1 + random.next(3), timed: true)
        case .garbage:
            let what = peers.garbage(&random)
            // Whatever came, the router still answers at once.
            guard daemon.state() != nil else { throw ChaosFailure("/state unanswered after \(what)") }
            return what
        case .stuckClients:
            if peers.stuckCount > 24 || (peers.stuckCount > 0 && random.next(3) == 0) {
                let count = peers.stuckCount
                peers.releaseStuck()
                return "the \(count) connections held closed"
            }
            return peers.stick(&random)
        case .stateReadOnly:
            guard let readOnly else { return "no folder to make read-only" }
            try readOnly.makeReadOnly()
            let changes = try (0..<(1 + random.next(3))).map { _ in try change() }
            let seconds = 1 + Double(random.next(2000)) / 1000
            Thread.sleep(forTimeInterval: seconds)
            try readOnly.makeWritable()
            readOnlyUntil = elapsed
            return String(format: "%.1f s read-only, meanwhile %@", seconds, changes.joined(separator: ", "))
        case .reload:
            let adding = !fileHasGuest
            try writeSession(withGuest: adding)
            daemon.reload()
            mutate { if adding { $0.register(ChaosSession.guest) } else { _ = $0.unregister("guest") } }
            remember()
            return adding ? "guest added to the file" : "guest taken out of the file"
        case .brokenReload:
            return try brokenReload()
        case .deviceUnplugged:
            let available = model.routes.filter(\.available).map(\.name)
            let route = available[random.next(available.count)]
            stage.unplug(route)
            mutate { $0.deviceGone(route) }
            remember()
            return route
        case .devicePlugged:
            let missing = model.routes.filter { !$0.available }.map(\.name)
            let route = missing[random.next(missing.count)]
            try stage.plug(route)
            mutate { $0.deviceBack(route) }
            return route
        case .sourceKilled:
            stage.killSource()
            let seconds = 0.1 + Double(random.next(900)) / 1000
            Thread.sleep(forTimeInterval: seconds)
            try stage.startSource()
            return String(format: "away %.1f s", seconds)
        case .periodChanged:
            // 128 frames (2.7 ms) only on jackd: PipeWire on two loaded cores misses cycles there
            // all the time.
            let periods = stage.implementation == "pipewire" ? [256, 512, 1024] : [128, 256, 512, 1024]
            let choices = periods.filter { $0 != stage.period }
            let period = choices[random.next(choices.count)]
            try stage.server.changePeriod(to: period)
            stage.period = period
            return "to \(period) frames"
        case .serverFrozen:
            let seconds = 1 + Double(random.next(4000)) / 1000
            stage.server.suspend()
            // Resumed whatever happens, or closing this process's clients would wait on it.
            defer { stage.server.resume() }
            // The router answers while its server is frozen, and takes changes (one that asks
            // the server waits 2.5 s at most for it).
            let during = try change(timeout: 6)
            Thread.sleep(forTimeInterval: seconds)
            recoveryFrom = ChaosClock.now
            stage.server.resume()
            return String(format: "%.1f s; meanwhile %@", seconds, during)
        case .serverKilled:
            let devices = model.routes.filter(\.available).map(\.name)
            stage.killServer()
            // Answered while the server is away; the rejoin may hold the control queue on a
            // server still busy starting (JACK requests wait 2 s, and up to 10 s while its
            // cycles run): up to 12 s, and an answer slower than 1 s is counted in the report.
            let during = try change(timeout: 12)
            let seconds = 0.2 + Double(random.next(2800)) / 1000
            Thread.sleep(forTimeInterval: seconds)
            // Recovery counts from the launch: the goal is sound back within 2 s of it.
            recoveryFrom = ChaosClock.now
            try stage.restartServer(devices: devices)
            candidates = Self.graphOutcomes(candidates, devices: devices)
            return String(format: "away %.1f s; meanwhile %@", seconds, during)
        case .routerKilled:
            return try killRouter()
        }
    }

    /// One change over OSC, answered as the rules say (for some candidate: those that said
    /// otherwise are dropped).
    func change(timeout: Double = 3) throws -> String {
        let change = ChaosChange.draw(model, &random)
        let asked = ChaosClock.now
        let answer = daemon.ask(change.message, timeout: timeout)
        let took = ChaosClock.seconds(since: asked)
        if took > 1 { report.slowAnswers.append(String(format: "%@ %.1f s", change.message.path, took)) }
        var kept: [ChaosModel] = []
        var expected: [Int32?] = []
        for candidate in candidates {
            var next = candidate
            let code = change.apply(&next)
            expected.append(code)
            if Self.answer(answer, fits: code, route: candidate.current, of: change) {
                let moved = code == nil ? next : candidate
                if !kept.contains(moved) { kept.append(moved) }
            }
        }
        guard !kept.isEmpty else {
            throw ChaosFailure("\(change.message) was answered \(answer); the rules say \(expected.map { $0.map { "/error \($0)" } ?? "/reply" })")
        }
        candidates = kept
        if case .reply = answer { remember() }
        return "\(change.message)\(answer.code.map { " (\($0))" } ?? "")"
    }

    /// Whether the router's answer is the one the rules give (a `/system/volume` reply names the
    /// route it set, which must be the candidate's current one).
    static func answer(_ answer: ChaosDaemon.Answer, fits code: Int32?, route: String?, of change: ChaosChange) -> Bool {
        switch (code, answer) {
        case let (nil, .reply(arguments)):
            guard change.message.path == "/system/volume" else { return true }
            return arguments.dropFirst().first == .string(route ?? "")
        case let (code?, .error(got, _)): return got == code
        default: return false
        }
    }

    /// Changes in one bundle: all apply, or none (the one refused gets its error, the others -1).
    /// Timed: its time tag 50-300 ms ahead, answered when it applies.
    func bundle(_ count: Int, timed: Bool) throws -> String {
        var changes: [ChaosChange] = []
        var tries = 0
        while changes.count < count && tries < 20 {
            tries += 1
            let change = ChaosChange.draw(model, &random)
            // Each path once; no route selection (a bundle's /system/volume acts on the route
            // current when it arrived, which a selection in it would muddle).
            if change.message.path == "/route/select" || changes.contains(where: { $0.message.path == change.message.path }) { continue }
            changes.append(change)
        }
        let ahead = timed ? 0.05 + Double(random.next(250)) / 1000 : 0
        let timetag = timed ? OSCTimetag(unixTime: Date().timeIntervalSince1970 + ahead) : .immediately
        let answers = daemon.askBundle(changes.map(\.message), timetag: timetag, timeout: 3 + ahead)
        var kept: [ChaosModel] = []
        var said: [String] = []
        for candidate in candidates {
            var next = candidate
            var expected: [Int32?] = []
            var routes: [String?] = []
            for change in changes {
                routes.append(next.current)
                expected.append(change.apply(&next))
            }
            let refused = expected.firstIndex { $0 != nil }
            let fits = answers.indices.allSatisfy { index in
                if let refused {
                    return index == refused ? answers[index].code == expected[index] : answers[index].code != nil
                }
                return Self.answer(answers[index], fits: nil, route: routes[index], of: changes[index])
            }
            if fits {
                let moved = refused == nil ? next : candidate
                if !kept.contains(moved) { kept.append(moved) }
            }
            said.append(refused == nil ? "/reply each" : "refused (\(expected.map { $0.map(String.init) ?? "ok" }))")
        }
        guard !kept.isEmpty else {
            throw ChaosFailure("a bundle of \(changes.map(\.message)) was answered \(answers); the rules say \(said.joined(separator: " or "))")
        }
        candidates = kept
        let refused = answers.allSatisfy { $0.code != nil }
        if !refused { remember() }
        return (timed ? String(format: "%.0f ms ahead: ", ahead * 1000) : "bundle: ") + changes.map(\.message.description).joined(separator: ", ")
            + (refused ? " (refused)" : "")
    }

    func brokenReload() throws -> String {
        let original = try String(contentsOf: daemon.session, encoding: .utf8)
        let (what, edit) = ChaosSession.brokenEdits[random.next(ChaosSession.brokenEdits.count)]
        let refusals = daemon.log.components(separatedBy: "reload refused").count
        try edit(original).write(to: daemon.session, atomically: true, encoding: .utf8)
        daemon.reload()
        let deadline = Date().addingTimeInterval(5)
        while daemon.log.components(separatedBy: "reload refused").count == refusals {
            guard Date() < deadline else {
                try original.write(to: daemon.session, atomically: true, encoding: .utf8)
                throw ChaosFailure("\(what): no \"reload refused\" in the router's log within 5 s")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        // As a person would: the mistake put right (the router, which refused it, runs on as before).
        try original.write(to: daemon.session, atomically: true, encoding: .utf8)
        return "\(what): refused"
    }

    /// SIGKILL, then a start as systemd would. What comes back is what the state file held at
    /// the kill: it must be one of the states the router answered, and hold every change answered
    /// more than 0.5 s before the kill (a change is saved within 200 ms) unless the folder was
    /// read-only since.
    func killRouter() throws -> String {
        // A router that died by itself since the last check is a crash, not this fault's.
        if let status = daemon.unexpectedExit { throw ChaosFailure("the router had exited by itself (status \(status)) before the SIGKILL") }
        daemon.kill9()
        let killedAt = elapsed
        guard let saved = savedState() else { throw ChaosFailure("the state file does not parse after the SIGKILL") }
        let before = model
        // Not older than the state the last check found in the file (the router never writes an
        // older one over it).
        guard let match = history.lastIndex(where: { $0.time >= lastSavedCheck && $0.model.differences(fromSaved: saved).isEmpty }) else {
            throw ChaosFailure("the state file after the SIGKILL holds no state the router answered: "
                               + model.differences(fromSaved: saved).joined(separator: "; "))
        }
        if let lost = history.indices.last(where: { $0 > match && history[$0].time < killedAt - 0.5 }),
           readOnlyUntil < history[lost].time {
            let differences = history[lost].model.differences(fromSaved: saved)
            if !differences.isEmpty {
                throw ChaosFailure(String(format: "a change answered %.1f s before the SIGKILL was not saved: ", killedAt - history[lost].time)
                                   + differences.joined(separator: "; "))
            }
        }
        if match < history.count - 1 { report.changesLostToKill += 1 }
        var restarted = history[match].model
        restarted.routes = restarted.routes.map { route in
            var route = route
            route.available = before.route(route.name)?.available ?? false
            return route
        }
        restarted.routerRestarted(fallback: ChaosSession.fallback)
        // With the fallback's device missing, which of the others is current is the router's.
        candidates = [restarted]
        if !restarted.isAvailable(ChaosSession.fallback) {
            for route in restarted.routes where route.available && route.name != restarted.arrivals.last {
                var variant = restarted
                variant.arrivals.removeAll { $0 == route.name }
                variant.arrivals.append(route.name)
                candidates.append(variant)
            }
        }
        let pause = Double(random.next(1500)) / 1000
        Thread.sleep(forTimeInterval: pause)
        try daemon.start()
        return String(format: "started again after %.1f s (pid %d)", pause, daemon.pid ?? 0)
    }

    /// After the server was killed and started again, the router may join it before some of
    /// the devices the harness plugs back (in `devices` order): those it finds missing go (a
    /// private current one interrupts what played there, a selection of one is cleared), then
    /// come back in that order. Each such outcome: none, the last device missed, the last two...
    static func graphOutcomes(_ models: [ChaosModel], devices: [String]) -> [ChaosModel] {
        var outcomes: [ChaosModel] = []
        for model in models {
            for missed in 0...devices.count {
                let late = Array(devices.suffix(missed))
                var variant = model
                for route in model.routes.map(\.name) where late.contains(route) { variant.deviceGone(route) }
                for route in late { variant.deviceBack(route) }
                if !outcomes.contains(variant) { outcomes.append(variant) }
            }
        }
        return outcomes
    }
}

/// The state folder on a tmpfs of the run's own, so it can be made read-only for a while (a
/// full or failing disk) without touching anything else; only when running as root.
final class ReadOnlyFolder {
    let path: URL
    let possible: Bool

    init(_ path: URL) {
        self.path = path
        Self.removeStale()
        try? FileManager.default.createDirectory(at: path, withIntermediateDirectories: true)
        possible = geteuid() == 0 && (try? Tool.output("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", path.path]))?.status == 0
    }

    func makeReadOnly() throws {
        let (status, text) = try Tool.output("/usr/bin/mount", ["-o", "remount,ro", path.path])
        guard status == 0 else { throw ChaosFailure("cannot make \(path.path) read-only: \(text)") }
    }

    func makeWritable() throws {
        let (status, text) = try Tool.output("/usr/bin/mount", ["-o", "remount,rw", path.path])
        guard status == 0 else { throw ChaosFailure("cannot make \(path.path) writable again: \(text)") }
    }

    /// Unmounts the state folders of runs whose process is gone (killed before their tear-down):
    /// `…/duckchaos-<pid>-<seed>/state` in /proc/mounts.
    static func removeStale() {
        guard geteuid() == 0, let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return }
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 2, fields[2] == "tmpfs", fields[1].hasSuffix("/state"),
                  let run = fields[1].split(separator: "/").dropLast().last, run.hasPrefix("duckchaos-"),
                  let pid = Int32(run.split(separator: "-").dropFirst().first ?? ""), pid != getpid(),
                  kill(pid, 0) != 0 else { continue }
            _ = try? Tool.output("/usr/bin/umount", ["-l", String(fields[1])])
        }
    }

    func remove() {
        if possible { _ = try? Tool.output("/usr/bin/umount", ["-l", path.path]) }
    }
}
