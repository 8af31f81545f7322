import OSCTransport
import Policy

/// What a change replies once it has applied (docs/OSC.md, "reply values"), for every front end
/// alike; a query's reply is its row's (`PathRow.answer`). The switch is exhaustive: a new event
/// says what it replies, or does not build.
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
        case .systemVolume, .query, .subscribe, .unsubscribe, .meters, .loudnessMeters, .levelMeters, .state, .timeline, .ping, .rights, .page, .rotatePageKey:
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
        case let .setRemoteCommands(_, commands): return [.string(Vocabulary.words(commands))]
        case let .setSilentSwitch(on): return [.int32(on ? 1 : 0)]
        case let .setDucking(.level(v)), let .setDucking(.attack(v)), let .setDucking(.release(v)), let .setDucking(.floor(v)):
            return [.float(Float(v))]
        case let .setDucking(.target(v)): return [v.map { .float(Float($0)) } ?? .string("off")]
        case let .setDuckingRule(rule): return ruleArguments(rule)
        case let .removeDuckingRule(ducker, ducked, route): return [.string(ducker), .string(ducked), .string(route ?? "")]
        case let .selectRoute(route): return [.string(route)]
        case let .setChannelMap(_, links): return channelMapArguments(links)
        case let .setActivation(app, _, _): return (try? Vocabulary.answer(Query("/app/<app>/activation", app), state())) ?? []
        // A person's setting: what its path answers now (`/app/<app>/mute`).
        case let .setAppSetting(app, change): return (try? Vocabulary.answer(Query("/app/<app>/\(change.name)", app), state())) ?? []
        // What the route is now: asking for a route whose ports are missing leaves it unavailable.
        case let .setRouteAvailable(route, _): return [.int32(state().availableRoutes.contains(route) ? 1 : 0)]
        case .remoteCommand:
            for case let .notify(.remote(app, _, _)) in effects { return [.string(app)] }
            return []
        case let .recallScene(name, _, _):
            for case let .sceneFade(_, _, milliseconds, _, _) in effects { return [.string(name), .float(Float(milliseconds))] }
            return [.string(name)]
        case let .storeScene(name, _), let .deleteScene(name): return [.string(name)]
        case .cueGo:
            for case let .notify(.cue(number, scene)) in effects { return [.int32(Int32(number)), .string(scene)] }
            return []
        case .cueBack, .cueGoto:
            let state = Vocabulary.cueState(state().show)
            return Array(state[2...3])
        case .unregister, .activate, .deactivate, .signal, .releaseDuck, .outsideInterruptionBegan, .outsideInterruptionEnded,
             .setDuckingRules, .setLoudnessDucks, .setShow, .sceneFadeDone:
            return []
        }
    }

    /// A category as `/app/<app>/category` takes it: category, options (comma-separated), mode.
    static func categoryArguments(_ category: Category, _ options: Set<CategoryOption>, _ mode: Mode) -> [OSCArgument] {
        [.string(category.rawValue), .string(Vocabulary.words(options)), .string(mode.rawValue)]
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

extension Vocabulary {
    /// A set of words as one argument: sorted, comma-separated.
    static func words<T: RawRepresentable>(_ values: Set<T>) -> String where T.RawValue == String {
        values.map(\.rawValue).sorted().joined(separator: ",")
    }
}
