import OSCTransport
import Policy

/// What a path answers (docs/OSC.md, "reply values"), for every front end alike: a query's values
/// read from the policy state, and a change's reply once it has applied. Both switches are
/// exhaustive: a new query or event says what it answers, or does not build.
extension ControlCommand.Query {
    /// The reply values, read from `state`; `notify` gives an app's notify address ("" for none),
    /// the one value the OSC server keeps rather than the policy.
    public func answer(_ state: PolicyState, notify: (String) -> String) throws(PolicyError) -> [OSCArgument] {
        func app(_ name: String) throws(PolicyError) -> AppSession {
            guard let app = state.app(name) else { throw PolicyError(.unknownApp, "no app named '\(name)'") }
            return app
        }
        func currentRoute() throws(PolicyError) -> (String, Float) {
            guard let route = state.currentRoute else { throw PolicyError(.unknownRoute, "no route is available") }
            return (route, state.systemVolume(route) ?? 1)
        }
        switch self {
        case let .appVolume(name): return [.float(Decibels.sliderPosition(linear: try app(name).volume))]
        case let .appGain(name): return [.float(max(Decibels.level(try app(name).volume), Decibels.floor))]
        case let .appRemote(name): return [.string(Self.words(try app(name).configuration.remoteCommands))]
        case let .appNotify(name):
            _ = try app(name)
            return [.string(notify(name))]
        case let .appChannelMap(name): return ControlCommand.channelMapArguments(try app(name).channelMap)
        case let .appActivation(name):
            let session = try app(name)
            return [.string(session.configuration.activation.rawValue), .float(Float(session.signal.threshold)),
                    .float(Float(session.signal.attack)), .float(Float(session.signal.hold)), .float(Float(session.signal.hysteresis))]
        case let .appCategory(name):
            let configuration = try app(name).configuration
            return ControlCommand.categoryArguments(configuration.category, configuration.options, configuration.mode)
        case .systemVolume:
            let (route, volume) = try currentRoute()
            return [.float(Decibels.sliderPosition(linear: volume)), .string(route)]
        case .systemGain:
            let (route, volume) = try currentRoute()
            return [.float(max(Decibels.level(volume), Decibels.floor)), .string(route)]
        case .silentSwitch: return [.int32(state.silentSwitch ? 1 : 0)]
        case .duckLevel: return [.float(Float(state.ducking.level))]
        case .duckAttack: return [.float(Float(state.ducking.attack))]
        case .duckRelease: return [.float(Float(state.ducking.release))]
        case .duckTarget: return [state.ducking.target.map { .float(Float($0)) } ?? .string("off")]
        case .duckFloor: return [.float(Float(state.ducking.floor))]
        case let .duckRule(ducker, ducked, route):
            if let route, state.systemVolume(route) == nil { throw PolicyError(.unknownRoute, "no route named '\(route)'") }
            guard let rule = state.ducking.storedRule(ducker: ducker, ducked: ducked, route: route) else {
                throw PolicyError.noDuckingRule(ducker: ducker, ducked: ducked, route: route)
            }
            return ControlCommand.ruleArguments(rule)
        case .selectedRoute: return [.string(state.currentRoute ?? "")]
        case let .routeAvailable(route):
            guard state.systemVolume(route) != nil else { throw PolicyError(.unknownRoute, "no route named '\(route)'") }
            return [.int32(state.availableRoutes.contains(route) ? 1 : 0)]
        }
    }

    /// A set of words as one argument: sorted, comma-separated.
    static func words<T: RawRepresentable>(_ values: Set<T>) -> String where T.RawValue == String {
        values.map(\.rawValue).sorted().joined(separator: ",")
    }
}

extension ControlCommand {
    /// The reply to the command once it has applied (a `systemVolume` is answered as the
    /// `setSystemVolume` it was bound to when it arrived): `effects` are what the change did, and
    /// `state` reads the policy state after it (called only by the few replies that need it: a
    /// reading may cost a trip to the control queue). Commands that are not changes answer for
    /// themselves.
    public func replyValues(effects: [PolicyEffect], after state: () -> PolicyState) -> [OSCArgument] {
        switch self {
        case let .setNotify(_, url): return [.string(url)]
        case let .change(event, _): return Self.reply(to: event, effects: effects, after: state)
        case .systemVolume, .query, .subscribe, .unsubscribe, .meters, .loudnessMeters, .state, .ping, .rights, .page, .rotatePageKey:
            return []
        }
    }

    static func reply(to event: PolicyEvent, effects: [PolicyEffect], after state: () -> PolicyState) -> [OSCArgument] {
        func floored(_ decibels: Double) -> OSCArgument { .float(Float(max(decibels, Double(Decibels.floor)))) }
        switch event {
        case let .register(configuration): return [.string(configuration.name)]
        case let .setCategory(_, category, options, mode): return categoryArguments(category, options, mode)
        // The value as sent (read back through the taper it could differ in the last bit).
        case let .setAppVolume(_, .position(p)): return [.float(Float(p))]
        case let .setAppVolume(_, .decibels(d)): return [floored(d)]
        // The route the command was bound to when it arrived (CommandResolver), not today's.
        case let .setSystemVolume(route, .position(p)): return [.float(Float(p)), .string(route)]
        case let .setSystemVolume(route, .decibels(d)): return [floored(d), .string(route)]
        case let .setRemoteCommands(_, commands): return [.string(Query.words(commands))]
        case let .setSilentSwitch(on): return [.int32(on ? 1 : 0)]
        case let .setDucking(.level(v)), let .setDucking(.attack(v)), let .setDucking(.release(v)), let .setDucking(.floor(v)):
            return [.float(Float(v))]
        case let .setDucking(.target(v)): return [v.map { .float(Float($0)) } ?? .string("off")]
        case let .setDuckingRule(rule): return ruleArguments(rule)
        case let .removeDuckingRule(ducker, ducked, route): return [.string(ducker), .string(ducked), .string(route ?? "")]
        case let .selectRoute(route): return [.string(route)]
        case let .setChannelMap(_, links): return channelMapArguments(links)
        case let .setActivation(app, _, _): return (try? Query.appActivation(app).answer(state(), notify: { _ in "" })) ?? []
        // What the route is now: asking for a route whose ports are missing leaves it unavailable.
        case let .setRouteAvailable(route, _): return [.int32(state().availableRoutes.contains(route) ? 1 : 0)]
        case .remoteCommand:
            for case let .notify(.remote(app, _, _)) in effects { return [.string(app)] }
            return []
        case .unregister, .activate, .deactivate, .signal, .releaseDuck, .outsideInterruptionBegan, .outsideInterruptionEnded,
             .setDuckingRules, .setLoudnessDucks:
            return []
        }
    }

    /// A category as `/app/<app>/category` takes it: category, options (comma-separated), mode.
    static func categoryArguments(_ category: Category, _ options: Set<CategoryOption>, _ mode: Mode) -> [OSCArgument] {
        [.string(category.rawValue), .string(Query.words(options)), .string(mode.rawValue)]
    }

    /// A channel map as OSC: pairs of app channel and `route:channel`, or `default`.
    static func channelMapArguments(_ links: [ChannelLink]?) -> [OSCArgument] {
        guard let links else { return [.string("default")] }
        return links.flatMap { [OSCArgument.int32(Int32($0.appChannel)), .string("\($0.route):\($0.routeChannel)")] }
    }

    /// A rule as `/duck/rule` takes it: ducker, ducked, route (`""`: every route), then the
    /// settings it gives as key and value.
    static func ruleArguments(_ rule: DuckingRule) -> [OSCArgument] {
        var arguments: [OSCArgument] = [.string(rule.ducker), .string(rule.ducked), .string(rule.route ?? "")]
        for (key, value) in [("level", rule.level), ("target", rule.target), ("floor", rule.floor),
                             ("attack", rule.attack), ("release", rule.release)] {
            if let value { arguments += [.string(key), .float(Float(value))] }
        }
        return arguments
    }
}
