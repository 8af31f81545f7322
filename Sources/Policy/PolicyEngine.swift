/// The rules of audio sessions (docs/POLICY.md; the §5.1 to §5.13 this module's comments cite are
/// its rules' numbers) as a pure function of events: no C, no I/O, no clock. `apply` turns an
/// event into a new state and the effects the router carries out (gain targets with ramp times,
/// notifications, save requests), or throws and changes nothing.
public struct PolicyEngine: Sendable {
    public private(set) var state: PolicyState

    /// - Parameters:
    ///   - routes: the session's routes with their system volumes (linear). All start available
    ///     (the router then reports those whose device is missing).
    ///   - fallback: the route current at start (the built-in one); nil: the first.
    ///   - privateRoutes: routes whose audio must not fall back to another when they go (headphones).
    ///   - fadeMilliseconds: the fast fade for starts, stops and volume changes.
    public init(routes: [(name: String, volume: Float)] = [], ducking: DuckingSettings = DuckingSettings(),
                fadeMilliseconds: Double = 20, silentSwitch: Bool = false, fallback: String? = nil,
                privateRoutes: Set<String> = []) {
        state = PolicyState()
        state.privateRoutes = privateRoutes.intersection(routes.map(\.name))
        state.systemVolumes = routes.map { ($0.name, $0.volume) }
        // Last in wins: the fallback counts as the newest at start, so it is current until a
        // route becomes available (or is selected) after it.
        let first = fallback ?? routes.first?.name
        state.availableRoutes = routes.map(\.name).filter { $0 != first } + (first.map { [$0] } ?? [])
        state.ducking = ducking
        state.fadeMilliseconds = fadeMilliseconds
        state.silentSwitch = silentSwitch
    }

    /// Applies one event. On error the state is exactly as it was.
    @discardableResult
    public mutating func apply(_ event: PolicyEvent) throws(PolicyError) -> [PolicyEffect] {
        var transition = Transition(state)
        try transition.apply(event)
        transition.forgetEndedLoudnessDucks()
        state = transition.state
        return transition.effects(from: Mix(of: transition.before))
    }

    /// The audible gain (linear) and state of every app, as the mix should be now.
    public var mix: [String: AppMix] { Mix(of: state).apps }
}

/// An app's place in the mix.
public struct AppMix: Equatable, Sendable {
    /// Linear gain including volume and ducking on the app's main route (the current one, or a
    /// multiRoute app's first); 0 when not heard.
    public var gain: Float
    /// The gain on each route it plays to where that differs from `gain` (a rule for one route).
    public var routeGains: [String: Float] = [:]
    public var state: AppAudioState
    /// The deepest ducking factor on any of its routes (linear, 1 when not ducked) and the rule
    /// that sets it.
    public var duck: Float
    public var duckRule: AppliedDuckingRule?
    /// Each route it is ducked on, with the factor and the rule (`""`: no route carries it now).
    public var ducks: [String: RouteDuck] = [:]

    /// The gain on `route`.
    public func gain(on route: String) -> Float { routeGains[route] ?? gain }
}

/// How far an app is ducked on one route, and by which rule.
public struct RouteDuck: Equatable, Sendable {
    public var factor: Float
    public var rule: AppliedDuckingRule
}

/// The mix a state implies.
struct Mix {
    var apps: [String: AppMix] = [:]

    init(of state: PolicyState) {
        let duckers = state.duckers
        let current = state.currentRoute
        for app in state.apps {
            // A signal-activated app is heard before it is active (its first syllable must not be
            // lost), whenever it could be activated now.
            let listening = state.isListening(app)
            let heard = app.isActive || listening
            // Only a multiRoute app plays to several routes; every other plays to the current one
            // (worked out once: this runs for every app at every event, hundreds on a big rig).
            let multi = app.configuration.category == .multiRoute
            let routes = multi ? state.routes(of: app) : []
            let main = multi ? (routes.first { $0 == current } ?? routes.first) : current
            var ducks: [String: RouteDuck] = [:]
            // The deepest duck, the first in session route order on a tie.
            var deepest: RouteDuck?
            if heard && !duckers.isEmpty {
                func duck(on route: String?) -> RouteDuck? {
                    var deepest: RouteDuck?
                    for ducker in duckers where ducker.name != app.name {
                        let rule = state.ducking.rule(ducker: ducker.name, ducked: app.name, route: route)
                        var decibels = rule.level
                        if rule.target != nil, let route, let measured = state.loudnessDucks[DuckPair(ducker: ducker.name, ducked: app.name, route: route)] {
                            // Within the rule as it is now (its floor may have moved since).
                            decibels = min(0, max(measured, rule.floor))
                        }
                        let factor = Decibels.linear(Float(decibels))
                        if factor < (deepest?.factor ?? 1) { deepest = RouteDuck(factor: factor, rule: rule) }
                    }
                    return deepest
                }
                if multi && !routes.isEmpty {
                    for route in routes {
                        guard let found = duck(on: route) else { continue }
                        ducks[route] = found
                        if found.factor < (deepest?.factor ?? .infinity) { deepest = found }
                    }
                } else if let found = duck(on: main) {
                    ducks[main ?? ""] = found
                    deepest = found
                }
            }
            let duck = deepest?.factor ?? 1
            let silenced = heard && state.silentSwitch && app.configuration.category.obeysSilentSwitch
            // Muted: silent, and ducking no one (`duckers`), whatever its state.
            let audible = heard && !silenced && !app.settings.muted
            let mixState: AppAudioState = switch app.activity {
            case .interrupted: .interrupted
            case .inactive: listening ? (silenced ? .silenced : .listening) : .inactive
            case .active: silenced ? .silenced : (duck < 1 ? .ducked : .active)
            }
            let gain = audible ? app.volume * (ducks[main ?? ""]?.factor ?? 1) : 0
            var routeGains: [String: Float] = [:]
            if audible && multi && !ducks.isEmpty {
                for route in routes where route != main {
                    let routeGain = app.volume * (ducks[route]?.factor ?? 1)
                    if routeGain != gain { routeGains[route] = routeGain }
                }
            }
            apps[app.name] = AppMix(gain: gain, routeGains: routeGains, state: mixState, duck: duck, duckRule: deepest?.rule, ducks: ducks)
        }
    }
}

/// One event's worth of changes, made on a copy of the state.
private struct Transition {
    let before: PolicyState
    var state: PolicyState
    /// Interruption notifications, app additions and other effects in the order they happened.
    var ordered: [PolicyEffect] = []
    var save = false

    init(_ state: PolicyState) {
        before = state
        self.state = state
    }

    mutating func apply(_ event: PolicyEvent) throws(PolicyError) {
        switch event {
        case let .register(configuration):
            try register(configuration)
        case let .setCategory(name, category, options, mode):
            var configuration = try state.apps[state.index(of: name)].configuration
            configuration.category = category
            configuration.options = options
            configuration.mode = mode
            try register(configuration)
        case let .unregister(name):
            let index = try state.index(of: name)
            endInterruptions(by: name, shouldResume: false, everything: true)
            state.apps.remove(at: index)
            ordered.append(.appRemoved(name))
            save = true
        case let .activate(name):
            let index = try state.index(of: name)
            try activate(index)
            state.apps[index].activatedByRequest = true
            state.apps[index].activatedBy = .osc
        case let .deactivate(name, notifyOthers):
            let index = try state.index(of: name)
            guard state.apps[index].activity != .inactive else { return }
            deactivate(index, notifyOthers: notifyOthers)
        case let .signal(name, active):
            let index = try state.index(of: name)
            if active {
                guard !state.apps[index].isActive else { return }
                try activate(index)
                state.apps[index].activatedByRequest = true
                state.apps[index].activatedBy = .signal
            } else {
                // A request outlasts the sound; what the sound (or a resume) started, silence ends.
                guard state.apps[index].isActive, state.apps[index].activatedBy != .osc else { return }
                deactivate(index, notifyOthers: true)
            }
        case let .setActivation(name, activation, signal):
            let index = try state.index(of: name)
            if let signal {
                guard signal.threshold.isFinite, Limits.signalThreshold.contains(signal.threshold), signal.attack.isFinite, Limits.signalAttack.contains(signal.attack),
                      signal.hold.isFinite, Limits.rampMilliseconds.contains(signal.hold), signal.hysteresis.isFinite, Limits.signalHysteresis.contains(signal.hysteresis) else {
                    throw PolicyError(.badArgument, "signal: expected threshold -120..0 dBFS, attack 0..10000 ms, hold 0..60000 ms, hysteresis 0..40 dB")
                }
                if state.apps[index].signal != signal { save = true }
                state.apps[index].signal = signal
            }
            if state.apps[index].configuration.activation != activation {
                state.apps[index].configuration.activation = activation
                save = true
            }
        case let .releaseDuck(name, released):
            let index = try state.index(of: name)
            let app = state.apps[index]
            guard app.isActive, app.configuration.ducksOthers, app.duckReleased != released else { return }
            state.apps[index].duckReleased = released
            ordered.append(.notify(.duckReleased(app: name, released: released)))
        case let .outsideInterruptionBegan(source):
            try beginOutsideInterruption(source)
        case let .outsideInterruptionEnded(source, shouldResume):
            try endOutsideInterruption(source, shouldResume: shouldResume)
        case let .setSilentSwitch(on):
            guard on != state.silentSwitch else { return }
            state.silentSwitch = on
            ordered.append(.notify(.silentSwitch(on)))
            save = true
        case let .setSystemVolume(route, volume):
            guard let index = state.systemVolumes.firstIndex(where: { $0.route == route }) else { throw .unknownRoute(route) }
            let gain = try linear(volume, setting: "system volume", maximumDecibels: Limits.systemGain.upperBound)
            guard gain != state.systemVolumes[index].volume else { return }
            state.systemVolumes[index].volume = gain
            ordered.append(.systemVolume(route: route, gain: gain, rampMilliseconds: state.fadeMilliseconds))
            ordered.append(.notify(.systemVolume(route: route, volume: Double(Decibels.sliderPosition(linear: gain)))))
            save = true
        case let .setChannelMap(name, links):
            let index = try state.index(of: name)
            if let links {
                guard state.apps[index].configuration.category == .multiRoute else {
                    throw PolicyError(.badArgument, "'\(name)' is not a multiRoute app: only multiRoute apps have a channel map")
                }
                var listed: Set<ChannelLink> = []
                for link in links {
                    try checkRoute(link.route)
                    guard link.appChannel >= 1, link.routeChannel >= 1 else {
                        throw PolicyError(.badArgument, "channel map \(link): channels count from 1")
                    }
                    // Two app channels onto one route channel are a sum the map asks for; one
                    // link listed twice would play that channel twice over, 6 dB too loud.
                    guard listed.insert(link).inserted else {
                        throw PolicyError(.badArgument, "channel map lists \(link) twice: list each link once")
                    }
                }
            }
            guard state.apps[index].channelMap != links else { return }
            state.apps[index].channelMap = links
            ordered.append(.channelMap(app: name, links))
            save = true
        case let .setAppVolume(name, volume):
            let index = try state.index(of: name)
            let gain = try linear(volume, setting: "app volume", maximumDecibels: Limits.appGain.upperBound)
            guard gain != state.apps[index].volume else { return }
            state.apps[index].volume = gain
            save = true
        case let .setAppSetting(name, change):
            let index = try state.index(of: name)
            guard state.apps[index].settings.apply(change) else { return }
            save = true
        case let .setDucking(parameter):
            try setDucking(parameter)
        case let .setDuckingRules(rules):
            let routes = state.systemVolumes.map(\.route)
            for rule in rules { if let problem = rule.problem(routes: routes) { throw problem } }
            guard rules != state.ducking.rules else { return }
            state.ducking.rules = rules
            save = true
        case let .setDuckingRule(rule):
            if let problem = rule.problem(routes: state.systemVolumes.map(\.route)) { throw problem }
            if let ducker = state.app(rule.ducker), !ducker.configuration.ducksOthers {
                throw PolicyError(.badArgument, "ducking rule \(rule.ducker) → \(rule.ducked): '\(rule.ducker)' does not duck others (its category has no duckOthers option), so the rule would never apply")
            }
            let rules = state.ducking.rules.setting(rule)
            guard rules != state.ducking.rules else { return }
            state.ducking.rules = rules
            save = true
        case let .removeDuckingRule(ducker, ducked, route):
            if let route { try checkRoute(route) }
            let rules = state.ducking.rules.removing(ducker: ducker, ducked: ducked, route: route)
            guard rules.count < state.ducking.rules.count else { throw .noDuckingRule(ducker: ducker, ducked: ducked, route: route) }
            state.ducking.rules = rules
            save = true
        case let .setLoudnessDucks(depths):
            try setLoudnessDucks(depths)
        case let .setRemoteCommands(name, commands):
            let index = try state.index(of: name)
            guard commands != state.apps[index].configuration.remoteCommands else { return }
            state.apps[index].configuration.remoteCommands = commands
            ordered.append(.appChanged(state.apps[index].configuration))
            save = true
        case let .remoteCommand(command, value):
            try remote(command, value: value)
        case let .selectRoute(route):
            try selectRoute(route)
        case let .setRouteAvailable(route, available):
            try setRouteAvailable(route, available)
        }
    }

    // MARK: Routes (last in wins; a selection wins until its route goes away)

    func checkRoute(_ route: String) throws(PolicyError) {
        guard state.systemVolumes.contains(where: { $0.route == route }) else { throw .unknownRoute(route) }
    }

    mutating func selectRoute(_ route: String) throws(PolicyError) {
        try checkRoute(route)
        guard state.availableRoutes.contains(route) else {
            throw PolicyError(.unknownRoute, "route '\(route)' is not available")
        }
        let previous = state.currentRoute
        state.selectedRoute = route
        announceRoute(from: previous, reason: .override)
        save = true
    }

    mutating func setRouteAvailable(_ route: String, _ available: Bool) throws(PolicyError) {
        try checkRoute(route)
        guard available != state.availableRoutes.contains(route) else { return }
        let previous = state.currentRoute
        if available {
            state.availableRoutes.append(route)
        } else {
            state.availableRoutes.removeAll { $0 == route }
            if state.selectedRoute == route { state.selectedRoute = nil }
            // Headphones pulled: what played through them stops, everywhere (it must not jump to
            // the speaker). multiRoute apps play to every route at once and just lose this one.
            if previous == route && state.privateRoutes.contains(route) {
                for index in state.apps.indices where state.apps[index].isActive
                    && state.apps[index].configuration.category != .multiRoute {
                    interrupt(index, by: .routeDisconnected(route))
                }
            }
        }
        announceRoute(from: previous, reason: available ? .newDeviceAvailable : .oldDeviceUnavailable)
    }

    mutating func announceRoute(from previous: String?, reason: RouteChangeReason) {
        let current = state.currentRoute
        guard current != previous else { return }
        ordered.append(.currentRoute(current, rampMilliseconds: state.fadeMilliseconds))
        ordered.append(.notify(.route(reason: reason, route: current ?? "", previous: previous ?? "")))
    }

    // MARK: Apps

    mutating func register(_ configuration: AppConfiguration) throws(PolicyError) {
        try configuration.validate()
        guard let index = state.apps.firstIndex(where: { $0.name == configuration.name }) else {
            state.apps.append(AppSession(configuration: configuration))
            ordered.append(.appAdded(configuration))
            save = true
            return
        }
        let previous = state.apps[index].configuration
        // `/app/register` says nothing of activation: a signal-activated app stays one.
        var configuration = configuration
        configuration.activation = previous.activation
        guard previous != configuration else { return }
        let previousRoutes = state.routes(of: state.apps[index])
        state.apps[index].configuration = configuration
        ordered.append(.appChanged(configuration))
        save = true
        announceCategoryChange(of: index, from: previousRoutes)
        guard state.apps[index].isActive else { return }
        // An active app that changes category keeps playing under its new rules, as if it had
        // just been activated; spoken audio it paused and may no longer pause gets to resume.
        if previous.interruptsSpokenAudio && !configuration.interruptsSpokenAudio {
            endInterruptions(by: configuration.name, shouldResume: true, everything: false)
        }
        interruptOthers(for: index)
    }

    /// A category change that moves the app to other routes (to or from multiRoute) says so to
    /// the app: `categoryChange`, its routes now and before.
    mutating func announceCategoryChange(of index: Int, from previous: [String]) {
        let routes = state.routes(of: state.apps[index])
        guard routes != previous else { return }
        ordered.append(.notify(.route(reason: .categoryChange, route: routes.joined(separator: ","),
                                      previous: previous.joined(separator: ","), app: state.apps[index].name)))
    }

    /// setActive(true): may interrupt others (§5.2, §5.5) or be refused (§5.11). An app that
    /// plays where no route can carry it is told so, and is active all the same: it is heard as
    /// soon as a route comes. A `record` app is there for the input route, which the policy does
    /// not track, so it needs none.
    mutating func activate(_ index: Int) throws(PolicyError) {
        let app = state.apps[index]
        guard !app.isActive else { return }
        if let refusal = state.activationRefusal(app.configuration) { throw refusal }
        state.apps[index].activity = .active
        state.apps[index].duckReleased = false
        state.apps[index].activationSequence = state.nextActivationSequence
        state.nextActivationSequence += 1
        if app.configuration.category != .record && state.routes(of: app).isEmpty {
            ordered.append(.notify(.route(reason: .noSuitableRouteForCategory, route: "", previous: "", app: app.name)))
        }
        interruptOthers(for: index)
    }

    /// Interrupts the apps an active app must interrupt: every other active non-mixable app when
    /// it is non-mixable, every active spokenAudio app when it interrupts spoken audio.
    mutating func interruptOthers(for index: Int) {
        let interrupter = state.apps[index].configuration
        for other in state.apps.indices where other != index && state.apps[other].isActive {
            let victim = state.apps[other].configuration
            if !interrupter.isMixable && !victim.isMixable {
                interrupt(other, by: .app(interrupter.name))
            } else if interrupter.interruptsSpokenAudio && victim.isSpokenAudio {
                interrupt(other, by: .spokenAudio(interrupter.name))
            }
        }
    }

    /// setActive(false).
    mutating func deactivate(_ index: Int, notifyOthers: Bool) {
        state.apps[index].activity = .inactive
        state.apps[index].activatedByRequest = false
        state.apps[index].activatedBy = nil
        state.apps[index].duckReleased = false
        endInterruptions(by: state.apps[index].name, shouldResume: notifyOthers, everything: true)
    }

    mutating func interrupt(_ index: Int, by interrupter: Interrupter) {
        state.apps[index].activity = .interrupted(by: interrupter)
        state.apps[index].activatedByRequest = false
        state.apps[index].activatedBy = nil
        state.apps[index].duckReleased = false
        let reason: InterruptionReason = if case .routeDisconnected = interrupter { .routeDisconnected } else { .default }
        ordered.append(.notify(.interruption(app: state.apps[index].name, phase: .began, shouldResume: false, reason: reason)))
    }

    /// Ends the interruptions an app caused. Spoken audio it paused always may resume (§5.5);
    /// apps it interrupted may when `shouldResume` (§5.3). With `everything` false, only the
    /// spoken-audio interruptions end.
    mutating func endInterruptions(by name: String, shouldResume: Bool, everything: Bool) {
        var ended: [(Int, Bool)] = []
        for index in state.apps.indices {
            switch state.apps[index].activity {
            case .interrupted(by: .app(name)) where everything: ended.append((index, shouldResume))
            case .interrupted(by: .spokenAudio(name)): ended.append((index, true))
            default: continue
            }
        }
        finish(ended)
    }

    /// Marks interrupted apps inactive, tells them, and re-activates the resumable `auto` ones
    /// in the order they were first activated.
    mutating func finish(_ ended: [(index: Int, shouldResume: Bool)]) {
        for (index, shouldResume) in ended {
            state.apps[index].activity = .inactive
            state.apps[index].activatedBy = nil
            ordered.append(.notify(.interruption(app: state.apps[index].name, phase: .ended, shouldResume: shouldResume, reason: .default)))
        }
        let resuming = ended.filter { $0.shouldResume && state.apps[$0.index].configuration.resume == .auto }
            .map(\.index)
            .sorted { (state.apps[$0].activationSequence ?? 0) < (state.apps[$1].activationSequence ?? 0) }
        for index in resuming {
            // A refusal (another outside interruption began meanwhile) leaves the app inactive.
            if (try? activate(index)) != nil { state.apps[index].activatedBy = .autoResume }
        }
    }

    // MARK: Outside interruptions (§5.11)

    mutating func beginOutsideInterruption(_ source: String) throws(PolicyError) {
        guard !source.isEmpty else { throw PolicyError(.badArgument, "an outside interruption needs a source name") }
        guard !state.outsideInterruptions.contains(source) else {
            throw PolicyError(.general, "the outside interruption '\(source)' is already in progress")
        }
        state.outsideInterruptions.append(source)
        for index in state.apps.indices where state.apps[index].isActive {
            interrupt(index, by: .outside(source))
        }
    }

    mutating func endOutsideInterruption(_ source: String, shouldResume: Bool) throws(PolicyError) {
        guard let position = state.outsideInterruptions.firstIndex(of: source) else {
            throw PolicyError(.general, "no outside interruption '\(source)' is in progress")
        }
        state.outsideInterruptions.remove(at: position)
        let victims = state.apps.indices.filter { state.apps[$0].activity == .interrupted(by: .outside(source)) }
        if let remaining = state.outsideInterruptions.last {
            // Another interruption still lasts: its end decides whether these apps may resume.
            for index in victims { state.apps[index].activity = .interrupted(by: .outside(remaining)) }
            return
        }
        finish(victims.map { ($0, shouldResume) })
    }

    // MARK: Settings

    mutating func setDucking(_ parameter: DuckingParameter) throws(PolicyError) {
        /// Sets one number of the settings, if it is finite and in `range`; whether it changed.
        func set(_ setting: WritableKeyPath<DuckingSettings, Double>, _ value: Double, _ range: ClosedRange<Double>,
                 _ name: String, _ expected: String) throws(PolicyError) -> Bool {
            guard value.isFinite, range.contains(value) else { throw badValue(name, value, expected) }
            guard value != state.ducking[keyPath: setting] else { return false }
            state.ducking[keyPath: setting] = value
            return true
        }
        let changed: Bool
        switch parameter {
        case let .level(dB): changed = try set(\.level, dB, Limits.duckLevel, "ducking level", "a level in dB from -144 to 0")
        case let .attack(ms): changed = try set(\.attack, ms, Limits.rampMilliseconds, "ducking attack", "milliseconds from 0 to 60000")
        case let .release(ms): changed = try set(\.release, ms, Limits.rampMilliseconds, "ducking release", "milliseconds from 0 to 60000")
        case let .floor(dB): changed = try set(\.floor, dB, Limits.duckLevel, "ducking floor", "a level in dB from -144 to 0")
        case let .target(lu):
            if let lu, !(lu.isFinite && Limits.duckTarget.contains(lu)) {
                throw badValue("ducking target", lu, "a loudness difference in LU from 0 to 60")
            }
            changed = lu != state.ducking.target
            state.ducking.target = lu
        }
        if changed { save = true }
    }

    /// The router's loudness loop sets the depth of loudness-targeted ducks. A pair that no longer
    /// ducks by loudness (it ended while the loop measured) is passed over; a depth that is not a
    /// level is refused. Not a setting: nothing is saved.
    mutating func setLoudnessDucks(_ depths: [DuckPair: Double]) throws(PolicyError) {
        for (pair, dB) in depths where !(dB.isFinite && Limits.duckLevel.contains(dB)) {
            throw PolicyError(.badArgument, "loudness duck \(pair): expected -144 to 0 dB, got \(dB)")
        }
        let current = Dictionary(state.loudnessTargetedDucks.map { ($0.pair, $0.rule) }, uniquingKeysWith: { first, _ in first })
        for (pair, dB) in depths {
            guard let rule = current[pair] else { continue }
            // Never louder than not ducked, never deeper than the floor.
            state.loudnessDucks[pair] = min(0, max(dB, rule.floor))
        }
    }

    /// Depths kept for pairs that no longer duck by loudness are dropped: the next duck of that
    /// pair starts again from its rule's level, as the first did.
    mutating func forgetEndedLoudnessDucks() {
        guard !state.loudnessDucks.isEmpty else { return }
        let current = Set(state.loudnessTargetedDucks.map(\.pair))
        state.loudnessDucks = state.loudnessDucks.filter { current.contains($0.key) }
    }

    func linear(_ volume: Volume, setting: String, maximumDecibels: Double) throws(PolicyError) -> Float {
        switch volume {
        case let .position(position):
            guard position.isFinite, Limits.volume.contains(position) else {
                throw badValue(setting, position, "a slider position from 0 to 1")
            }
            return Decibels.linear(sliderPosition: Float(position))
        case let .decibels(dB):
            guard !dB.isNaN, dB <= maximumDecibels else {
                throw badValue(setting, dB, "a level in dB, at most \(Int(maximumDecibels))")
            }
            return Decibels.linear(Float(max(dB, Double(Decibels.floor))))
        }
    }

    func badValue(_ setting: String, _ value: Double, _ expected: String) -> PolicyError {
        PolicyError(.badArgument, "\(setting): expected \(expected), got \(value)")
    }

    // MARK: Remote commands (§5.12)

    mutating func remote(_ command: RemoteCommand, value: Double?) throws(PolicyError) {
        switch command.valueRule {
        case .none:
            if value != nil { throw PolicyError(.badArgument, "remote command \(command.rawValue) takes no value") }
        case let .required(range, meaning):
            guard let value else { throw PolicyError(.badArgument, "remote command \(command.rawValue) needs a value: \(meaning)") }
            guard value.isFinite, range.contains(value) else { throw badValue("remote command \(command.rawValue)", value, meaning) }
        case let .optional(range, meaning):
            if let value, !(value.isFinite && range.contains(value)) {
                throw badValue("remote command \(command.rawValue)", value, meaning)
            }
        }
        guard let owner = state.nowPlaying, let app = state.app(owner) else {
            throw PolicyError(.noEligibleApp, "no app owns remote control (none is a non-mixable playback app that declared remote commands and was activated)")
        }
        guard app.configuration.remoteCommands.contains(command) else {
            let handled = app.configuration.remoteCommands.map(\.rawValue).sorted().joined(separator: ", ")
            throw PolicyError(.noEligibleApp, "'\(owner)' owns remote control but does not handle \(command.rawValue) (it handles \(handled))")
        }
        ordered.append(.notify(.remote(app: owner, command: command, value: value)))
    }

    // MARK: Effects

    /// The ordered effects, then a gain change and a state notification for every app whose
    /// place in the mix changed, then a save request when persistent settings changed.
    func effects(from old: Mix) -> [PolicyEffect] {
        let new = Mix(of: state)
        var effects = ordered
        for app in state.apps {
            let next = new.apps[app.name]!
            let previous = old.apps[app.name] ?? AppMix(gain: 0, state: .inactive, duck: 1, duckRule: nil)
            if next.gain != previous.gain || next.routeGains != previous.routeGains {
                effects.append(.appGain(app: app.name, gain: next.gain, routeGains: next.routeGains, rampMilliseconds: ramp(from: previous, to: next)))
            }
            if next.state != previous.state || next.gain != previous.gain || old.apps[app.name] == nil {
                effects.append(.notify(.appState(app: app.name, state: next.state, gainDecibels: Double(Decibels.level(next.gain)),
                                                 reason: app.isActive ? app.activatedBy : nil, heldBy: PolicyState.heldBack(app, next))))
            }
        }
        if save { effects.append(.save) }
        return effects
    }

    /// Ducking moves at its attack and release; everything else (starting, stopping, volume) at
    /// the fast fade.
    func ramp(from previous: AppMix, to next: AppMix) -> Double {
        func heard(_ mix: AppMix) -> Bool { mix.state == .active || mix.state == .ducked || mix.state == .listening }
        guard heard(previous), heard(next), next.ducks != previous.ducks else { return state.fadeMilliseconds }
        // Deeper on any route: the attack (one ramp carries every route's change).
        let deeper = next.ducks.contains { route, duck in duck.factor < (previous.ducks[route]?.factor ?? 1) }
        if deeper { return next.duckRule?.attack ?? state.ducking.attack }
        return previous.duckRule?.release ?? state.ducking.release
    }
}
