import Foundation

/// What the chaos run expects of the router: every setting, who is active or interrupted, which
/// route is current, and from those what each route should sound like. It moves only on what the
/// harness did and what the router answered, by the rules of docs/POLICY.md for the apps and
/// routes of the run's session (`ChaosSession`), written out again here rather than taken from
/// the router's own code.
///
/// Some faults leave an outcome open that the rules do not fix: which route is current after the
/// router or the server comes back with several devices there at once, whether a device was seen
/// gone while the server was away, whether a change answered just before a SIGKILL reached the
/// state file. The model then holds each outcome the rules allow (`candidates`), and the first
/// check the router passes against one of them settles it.
public struct ChaosModel: Sendable, Equatable {
    public enum Category: String, Sendable { case playback, ambient }

    public struct App: Sendable, Equatable {
        public var name: String
        public var category: Category
        public var options: [String]
        public var fromSession: Bool
        public var startsActive: Bool
        public var autoResume: Bool
        public var frequency: Int
        /// The source ports the harness plays its tone on.
        public var sourcePorts: [String]
        // Settings, kept in the state file.
        public var volume: Float = 1
        public var muted = false
        // Activity, kept while the router runs.
        public var active = false
        /// Who interrupted it, as `/state` says: `app:<app>`, `outside:<source>`,
        /// `routeDisconnected:<route>`.
        public var interruptedBy: String?
        /// When it was last activated (auto-resumes go oldest first).
        public var activatedAt = 0

        /// §5.1: ambient always; playback with any option.
        public var mixable: Bool { category == .ambient || !options.isEmpty }
        public var ducks: Bool { options.contains("duckOthers") }
        public var playing: Bool { active && interruptedBy == nil }
    }

    public struct Route: Sendable, Equatable {
        public var name: String
        public var isPrivate: Bool
        public var volume: Float = 1
        /// The device (the sink client) is in the graph, and the router has seen it.
        public var available = true
    }

    public var apps: [App]
    public var routes: [Route]
    public var silent = false
    public var duckLevel: Float = -14
    public var selected: String?
    /// Outside interruptions in progress, by source.
    public var outside: [String] = []
    /// Available routes in the order they became available (the newest last: last in wins).
    public var arrivals: [String]
    var activations = 0

    public init(apps: [App], routes: [Route], fallback: String) {
        self.apps = apps
        self.routes = routes
        arrivals = routes.map(\.name).filter { $0 != fallback } + [fallback]
        for index in self.apps.indices where self.apps[index].startsActive { self.apps[index].active = true }
    }

    public func app(_ name: String) -> App? { apps.first { $0.name == name } }
    public func route(_ name: String) -> Route? { routes.first { $0.name == name } }
    func isAvailable(_ name: String) -> Bool { route(name)?.available ?? false }

    /// §5.9: the selected route while it is available, else the newest available.
    public var current: String? {
        if let selected, isAvailable(selected) { return selected }
        return arrivals.last { isAvailable($0) }
    }

    // MARK: What is heard

    /// The linear gain `app` is heard at on `route` (0: not heard): §5.4, §5.6, §5.7, mute.
    public func gain(of name: String, on routeName: String) -> Float {
        guard let app = app(name), let route = route(routeName), route.available, routeName == current,
              app.playing, !app.muted, !(silent && app.category == .ambient) else { return 0 }
        var gain = Self.taper(app.volume) * Self.taper(route.volume)
        if isDucked(app) { gain *= powf(10, duckLevel / 20) }
        return gain
    }

    /// §5.4: another active app that ducks, heard (a muted one ducks no one).
    public func isDucked(_ app: App) -> Bool {
        apps.contains { $0.name != app.name && $0.ducks && $0.playing && !$0.muted }
    }

    /// The state `/state` should give an app, where the rules fix it: nil where they leave it to
    /// the router (a muted app's "ducked").
    public func state(of app: App) -> String? {
        if app.interruptedBy != nil { return "interrupted" }
        if !app.active { return "inactive" }
        if silent && app.category == .ambient { return "silenced" }
        if app.muted { return nil }
        return isDucked(app) ? "ducked" : "active"
    }

    /// The cubic taper of the router's volume sliders.
    public static func taper(_ volume: Float) -> Float { volume * volume * volume }

    // MARK: Changes the harness asked for, as the router answered them

    /// `/app/<app>/activate`: the answer the rules give (nil: `/reply`, else the error code).
    public mutating func activate(_ name: String) -> Int32? {
        guard let index = apps.firstIndex(where: { $0.name == name }) else { return -3 }
        return activate(at: index)
    }

    mutating func activate(at index: Int) -> Int32? {
        let name = apps[index].name
        if apps[index].playing { return nil }
        // §5.11: no non-mixable app starts during an outside interruption.
        if !outside.isEmpty && !apps[index].mixable { return -6 }
        activations += 1
        apps[index].activatedAt = activations
        if !apps[index].mixable {
            // §5.2: every other active non-mixable app is interrupted.
            for other in apps.indices where other != index && apps[other].playing && !apps[other].mixable {
                apps[other].interruptedBy = "app:\(name)"
            }
        }
        apps[index].active = true
        apps[index].interruptedBy = nil
        return nil
    }

    /// `/app/<app>/deactivate [notifyOthers]`: §5.3, the interruptions it caused end.
    public mutating func deactivate(_ name: String, notifyOthers: Bool) -> Int32? {
        guard let index = apps.firstIndex(where: { $0.name == name }) else { return -3 }
        // An inactive app's deactivation changes nothing, not even the interruptions it caused
        // before it was itself interrupted and ended (Transition.swift).
        guard apps[index].active || apps[index].interruptedBy != nil else { return nil }
        apps[index].active = false
        apps[index].interruptedBy = nil
        endInterruptions(by: "app:\(name)", shouldResume: notifyOthers)
        return nil
    }

    /// The interrupted apps become inactive; the `auto` ones resume on a resumable end, oldest
    /// activation first, each as if activated (a non-mixable one interrupts others again).
    mutating func endInterruptions(by interrupter: String, shouldResume: Bool) {
        let ended = apps.indices.filter { apps[$0].interruptedBy == interrupter }
        for index in ended {
            apps[index].interruptedBy = nil
            apps[index].active = false
        }
        let resuming = ended.filter { shouldResume && apps[$0].autoResume }.map { apps[$0].name }
            .sorted { app($0)!.activatedAt < app($1)!.activatedAt }
        for name in resuming {
            if let index = apps.firstIndex(where: { $0.name == name }) { _ = activate(at: index) }
        }
    }

    public mutating func beginOutside(_ source: String) -> Int32? {
        guard !outside.contains(source) else { return -1 }
        outside.append(source)
        for index in apps.indices where apps[index].playing { apps[index].interruptedBy = "outside:\(source)" }
        return nil
    }

    public mutating func endOutside(_ source: String, shouldResume: Bool) -> Int32? {
        guard let at = outside.firstIndex(of: source) else { return -1 }
        outside.remove(at: at)
        if outside.isEmpty { endInterruptions(by: "outside:\(source)", shouldResume: shouldResume) }
        return nil
    }

    public mutating func setVolume(_ name: String, _ volume: Float) -> Int32? {
        guard let index = apps.firstIndex(where: { $0.name == name }) else { return -3 }
        apps[index].volume = volume
        return nil
    }

    public mutating func setMuted(_ name: String, _ muted: Bool) -> Int32? {
        guard let index = apps.firstIndex(where: { $0.name == name }) else { return -3 }
        apps[index].muted = muted
        return nil
    }

    /// `/system/volume`: the route the router's answer names.
    public mutating func setRouteVolume(_ name: String, _ volume: Float) {
        if let index = routes.firstIndex(where: { $0.name == name }) { routes[index].volume = volume }
    }

    public mutating func select(_ name: String) -> Int32? {
        guard isAvailable(name) else { return -4 }
        selected = name
        return nil
    }

    /// `/app/register` of a new app (registered over OSC: inactive, volume 1, kept in the state
    /// file), or of one that exists: its category and options change, nothing else (the harness
    /// changes only between mixable ones, so nobody is interrupted by it).
    public mutating func register(_ app: App) {
        if let index = apps.firstIndex(where: { $0.name == app.name }) {
            apps[index].category = app.category
            apps[index].options = app.options
        } else {
            apps.append(app)
        }
    }

    /// `/app/<app>/unregister`: gone, and the interruptions it caused end without a resume.
    public mutating func unregister(_ name: String) -> Int32? {
        guard let index = apps.firstIndex(where: { $0.name == name }) else { return -3 }
        apps.remove(at: index)
        endInterruptions(by: "app:\(name)", shouldResume: false)
        return nil
    }

    // MARK: The graph

    /// A route's device went away (§5.9): a private current route interrupts every active app.
    public mutating func deviceGone(_ name: String) {
        guard let index = routes.firstIndex(where: { $0.name == name }), routes[index].available else { return }
        let wasCurrent = current == name
        routes[index].available = false
        arrivals.removeAll { $0 == name }
        if selected == name { selected = nil }
        if wasCurrent && routes[index].isPrivate {
            for app in apps.indices where apps[app].playing { apps[app].interruptedBy = "routeDisconnected:\(name)" }
        }
    }

    /// A route's device came (back): last in wins.
    public mutating func deviceBack(_ name: String) {
        guard let index = routes.firstIndex(where: { $0.name == name }), !routes[index].available else { return }
        routes[index].available = true
        arrivals.removeAll { $0 == name }
        arrivals.append(name)
    }

    /// The router started again (killed, and started as systemd would): what the state file
    /// keeps stays, activity starts over from the session (§5.9: the fallback counts as newest).
    public mutating func routerRestarted(fallback: String) {
        outside = []
        for index in apps.indices {
            apps[index].interruptedBy = nil
            apps[index].active = apps[index].startsActive
        }
        // A selection is taken up again only if its route is there at the start.
        if let selected, !isAvailable(selected) { self.selected = nil }
        arrivals = routes.map(\.name).filter { $0 != fallback && isAvailable($0) } + (isAvailable(fallback) ? [fallback] : [])
    }
}
