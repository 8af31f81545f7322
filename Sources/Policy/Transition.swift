/// One event's worth of changes, made on a copy of the state.
struct Transition {
    let before: PolicyState
    var state: PolicyState
    /// Interruption notifications, app additions and other effects in the order they happened.
    var ordered: [PolicyEffect] = []
    var save = false
    /// While a scene is recalled: how its volumes move. Each volume it names is moved, even to
    /// where it already is, so a fade running there starts again from where the sound is.
    var fade: (milliseconds: Double, curve: FadeCurve)?

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
            let changed = gain != state.systemVolumes[index].volume
            guard changed || fade != nil else { return }
            state.systemVolumes[index].volume = gain
            ordered.append(.systemVolume(route: route, gain: gain, rampMilliseconds: fade?.milliseconds ?? state.fadeMilliseconds,
                                         curve: fade?.curve ?? .linear))
            guard changed else { return }
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
            let changed = gain != state.apps[index].volume
            guard changed || fade != nil else { return }
            state.apps[index].volume = gain
            ordered.append(.appVolume(app: name, gain: gain, rampMilliseconds: fade?.milliseconds ?? state.fadeMilliseconds,
                                      curve: fade?.curve ?? .linear))
            if changed { save = true }
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
        case let .recallScene(name, fade, curve):
            try recall(name, fade: fade, curve: curve)
        case let .storeScene(name, only):
            try store(name, only: only)
        case let .deleteScene(name):
            try deleteScene(name)
        case .cueGo:
            try cueGo()
        case .cueBack:
            cueBack()
        case let .cueGoto(place):
            try cueGoto(place)
        case let .setShow(show):
            setShow(show)
        case let .sceneFadeDone(recall):
            sceneFadeDone(recall)
        }
    }
}
