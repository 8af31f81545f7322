import Policy
import SessionStore

/// What applying an edited session file while running (SIGHUP) means: the steps that turn the
/// old file's setup into the new one's, and what needs a restart. Pure: a diff of two
/// sessions, it owns nothing and touches nothing; the router carries the steps out in order.
///
/// Apps added, removed or reconfigured (category, options, mode, remote commands, resume, channel
/// map, `connect`, `exclusive`, activation, `unduckAfter`), ducking settings and rules, and
/// volumes the file changed. Run-time changes to anything the file did not change stay. What
/// cannot change without re-registering the client (its name, routes, the input, ramp, an app's
/// channel count) or restarting a listener (OSC, HTTP, loudness metering) is left for a restart
/// (`restartEdits`), and so is a step the running router refuses (`ReloadBacklog`).
struct SessionReload {
    enum Step: Equatable {
        /// Policy events, each applied on its own; a refusal becomes a note headed `label`.
        case events([PolicyEvent], label: String)
        /// A new app: ports, patchbay rules, map, volume and activation as declared.
        case add(Session.App, volume: Double?)
        case unduckAfter(app: String, Double?)
        case patchbay(app: String, connect: [PortPattern], exclusive: Bool)
    }

    private(set) var steps: [Step] = []

    /// Steps given (an app's addition carried out again: `ReloadBacklog.additions`).
    init(steps: [Step]) { self.steps = steps }

    /// What in `file` differs from the session the router runs (`running`, as it started, and the
    /// channel count of each app it has) in ways only a restart applies: "routes", "'x' channel
    /// count". Compared with what runs, not with the file read before, so an edit taken back
    /// before the restart no longer waits for it.
    static func restartEdits(running: Session, channels: [String: Int], file: Session) -> [String] {
        var edits: [String] = []
        if running.client != file.client { edits.append("client name") }
        if running.routes != file.routes { edits.append("routes") }
        if running.input != file.input { edits.append("input") }
        if running.rampMilliseconds != file.rampMilliseconds { edits.append("ramp") }
        for app in file.apps {
            if let count = channels[app.name], count != app.channelCount { edits.append("'\(app.name)' channel count") }
        }
        if running.osc != file.osc { edits.append("OSC settings") }
        if running.http != file.http { edits.append("HTTP settings") }
        if running.loudness != file.loudness { edits.append("loudness settings") }
        return edits
    }

    init(from old: Session, to new: Session) {
        var ducking: [PolicyEvent] = []
        if old.ducking.level != new.ducking.level { ducking.append(.setDucking(.level(new.ducking.level))) }
        if old.ducking.attack != new.ducking.attack { ducking.append(.setDucking(.attack(new.ducking.attack))) }
        if old.ducking.release != new.ducking.release { ducking.append(.setDucking(.release(new.ducking.release))) }
        if old.ducking.target != new.ducking.target { ducking.append(.setDucking(.target(new.ducking.target))) }
        if old.ducking.floor != new.ducking.floor { ducking.append(.setDucking(.floor(new.ducking.floor))) }
        if old.ducking.rules != new.ducking.rules { ducking.append(.setDuckingRules(new.ducking.rules)) }
        if !ducking.isEmpty { steps.append(.events(ducking, label: "ducking")) }
        for app in old.apps where !new.apps.contains(where: { $0.name == app.name }) {
            steps.append(.events([.unregister(app: app.name)], label: "removing '\(app.name)'"))
        }
        for app in new.apps {
            guard let before = old.apps.first(where: { $0.name == app.name }) else {
                steps.append(.add(app, volume: new.volumes.apps[app.name]))
                continue
            }
            var events: [PolicyEvent] = []
            if before.configuration != app.configuration { events.append(.register(app.configuration)) }
            if before.channelMap != app.channelMap { events.append(.setChannelMap(app: app.name, app.channelMap)) }
            if before.activation != app.activation || before.signal != app.signal {
                events.append(.setActivation(app: app.name, app.activation, app.signal))
            }
            if before.unduckAfter != app.unduckAfter { steps.append(.unduckAfter(app: app.name, app.unduckAfter)) }
            if old.volumes.apps[app.name] != new.volumes.apps[app.name], let volume = new.volumes.apps[app.name] {
                events.append(.setAppVolume(app: app.name, .position(volume)))
            }
            if !events.isEmpty { steps.append(.events(events, label: "'\(app.name)'")) }
            if before.connect != app.connect || before.exclusive != app.exclusive {
                steps.append(.patchbay(app: app.name, connect: app.connect, exclusive: app.exclusive))
            }
        }
        for (route, volume) in new.volumes.routes.sorted(by: { $0.key < $1.key }) where old.volumes.routes[route] != volume {
            steps.append(.events([.setSystemVolume(route: route, .position(volume))], label: "volume of '\(route)'"))
        }
        if old.show.scenes != new.show.scenes || old.show.safe != new.show.safe || old.show.cues != new.show.cues {
            steps.append(.events([.setShow(new.show)], label: "scenes and cues"))
        }
    }

    /// The events that follow an app's registration, at start and when a reload adds it: what
    /// activates it and how its sound is judged, its map, its volume; and, when `activating`
    /// (a reload; at start the router activates once it runs), its activation.
    static func setup(of app: Session.App, volume: Double?, activating: Bool = true) -> [PolicyEvent] {
        var events: [PolicyEvent] = [.setActivation(app: app.name, app.activation, app.signal)]
        if let map = app.channelMap { events.append(.setChannelMap(app: app.name, map)) }
        if let volume { events.append(.setAppVolume(app: app.name, .position(volume))) }
        if app.settings != AppSettings() { events += app.settings.changes.map { .setAppSetting(app: app.name, $0) } }
        if activating && app.startsActive { events.append(.activate(app: app.name)) }
        return events
    }
}
