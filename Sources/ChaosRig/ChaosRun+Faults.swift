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
            candidates = Self.graphOutcomes(candidates)
            return "to \(period) frames"
        case .serverFrozen:
            let seconds = 1 + Double(random.next(4000)) / 1000
            stage.server.suspend()
            // The router answers while its server is frozen, and takes changes (one that asks
            // the server waits 2.5 s at most for it).
            let during = try change(timeout: 6)
            Thread.sleep(forTimeInterval: seconds)
            recoveryFrom = ChaosClock.now
            stage.server.resume()
            candidates = Self.graphOutcomes(candidates)
            return String(format: "%.1f s; meanwhile %@", seconds, during)
        case .serverKilled:
            let devices = model.routes.filter(\.available).map(\.name)
            stage.killServer()
            let during = try change()
            let seconds = 0.2 + Double(random.next(2800)) / 1000
            Thread.sleep(forTimeInterval: seconds)
            // Recovery counts from the launch: the goal is sound back within 2 s of it.
            recoveryFrom = ChaosClock.now
            try stage.restartServer(devices: devices)
            candidates = Self.graphOutcomes(candidates)
            return String(format: "away %.1f s; meanwhile %@", seconds, during)
        case .routerKilled:
            return try killRouter()
        }
    }

    /// One change over OSC, answered as the rules say (for some candidate: those that said
    /// otherwise are dropped).
    func change(timeout: Double = 3) throws -> String {
        let change = ChaosChange.draw(model, &random)
        let answer = daemon.ask(change.message, timeout: timeout)
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
        daemon.kill9()
        let killedAt = elapsed
        guard let saved = savedState() else { throw ChaosFailure("the state file does not parse after the SIGKILL") }
        let before = model
        guard let match = history.lastIndex(where: { $0.model.differences(fromSaved: saved).isEmpty }) else {
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

    /// After the server was away (killed, frozen, its period changed), the router may have seen
    /// any of the devices that were there gone and back, in any order: each such outcome.
    static func graphOutcomes(_ models: [ChaosModel]) -> [ChaosModel] {
        var outcomes: [ChaosModel] = []
        for model in models {
            if !outcomes.contains(model) { outcomes.append(model) }
            let up = model.routes.filter(\.available).map(\.name)
            for mask in 1..<(1 << up.count) {
                let subset = up.enumerated().filter { mask & (1 << $0.offset) != 0 }.map(\.element)
                for order in permutations(subset) {
                    var variant = model
                    for route in subset { variant.deviceGone(route) }
                    for route in order { variant.deviceBack(route) }
                    if !outcomes.contains(variant) { outcomes.append(variant) }
                }
            }
        }
        return outcomes
    }

    static func permutations(_ items: [String]) -> [[String]] {
        guard items.count > 1 else { return [items] }
        return items.indices.flatMap { index in
            permutations(Array(items[..<index] + items[(index + 1)...])).map { [items[index]] + $0 }
        }
    }
}

/// The state folder on a tmpfs of the run's own, so it can be made read-only for a while (a
/// full or failing disk) without touching anything else; only when running as root.
final class ReadOnlyFolder {
    let path: URL
    let possible: Bool

    init(_ path: URL) {
        self.path = path
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

    func remove() {
        if possible { _ = try? Tool.output("/usr/bin/umount", ["-l", path.path]) }
    }
}
