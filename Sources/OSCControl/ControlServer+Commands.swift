import ControlVocabulary
import Foundation
import Logging
import OSCTransport
import Policy
import RouterCore
import SessionStore

/// Running a command (OSC server thread only): a change or query on the router, its reply values,
/// who gets told afterwards, and the notify and subscribe targets it names.
extension ControlServer {
    /// The reply's values, or nil when the command answers later itself (`/page/key/rotate`).
    func run(_ command: ControlCommand, from peer: OSCServer.Peer, path: String) throws(PolicyError) -> [OSCArgument]? {
        switch command {
        case .change, .systemVolume:
            var resolver = CommandResolver(reading: { [router] in router.policyState })
            let resolved = try resolver.resolve(command)
            guard let change = resolved.change else { return [] }
            // A UDP registration makes the peer's notify socket (`afterChange`): none while the
            // descriptors are short, so none is registered then (an app with no notify socket
            // would fail its sends and lose its owner).
            if case .change(.register, _) = resolved.command, peer.transport == .udp, DescriptorBudget.isShort() {
                throw Self.shortOfDescriptors
            }
            let effects: [PolicyEffect]
            do throws(RouterError) { effects = try router.perform([change]) } catch { throw policyError(error) }
            afterChange(resolved.command, peer: peer)
            return replyValues(resolved.command, effects: effects)
        case let .setNotify(app, url):
            try setNotify(app: app, url: url)
            return [.string(url)]
        case let .query(query):
            return try answer(query)
        case let .subscribe(url):
            let key = url.flatMap(OSCURL.init)?.description ?? peer.url
            if !subscribers.contains(where: { $0.url == key }) {
                guard subscribers.count < configuration.maximumSubscribers else {
                    throw PolicyError(.general, "too many subscribers (\(configuration.maximumSubscribers))")
                }
                subscribers.append(try target(url: url, peer: peer))
                logger.info("subscribed", metadata: ["url": "\(key)"])
            }
            return [.string(key)]
        case let .unsubscribe(url):
            let key = url.flatMap(OSCURL.init)?.description ?? peer.url
            subscribers.removeAll { target in
                guard target.url == key else { return false }
                release(target)
                return true
            }
            return [.string(key)]
        case let .meters(url, rate):
            let key = url.flatMap(OSCURL.init)?.description ?? peer.url
            // OSC /meters subscribers only: a WebSocket's LISTENed meters are its own (listenMeters).
            if let existing = meterTargets.first(where: { $0.url == key && $0.meterPaths == nil }) {
                existing.meterRate = rate
            } else if rate > 0 {
                guard meterTargets.count < configuration.maximumSubscribers else {
                    throw PolicyError(.general, "too many meter subscribers (\(configuration.maximumSubscribers))")
                }
                addMeterTarget(try target(url: url, peer: peer), rate: rate)
            }
            meterTargets.removeAll { target in
                guard target.meterRate == 0, target.meterPaths == nil else { return false }
                release(target)
                return true
            }
            return [.float(Float(rate)), .string(key)]
        case let .loudnessMeters(url, rate):
            return try subscribeLoudness(url: url, rate: rate, peer: peer)
        case .state:
            return [.string(stateJSON())]
        case let .ping(token):
            return [.string(router.jackClientName())] + (token.map { [.int32(Int32($0))] } ?? [])
        case .rights:
            return rights(of: peer)
        case .page:
            return try pageLocation(to: peer)
        case let .rotatePageKey(key):
            try rotatePageKey(presented: key, by: peer, path: path)
            return nil
        }
    }

    /// Ownership and notify addresses follow registrations and removals.
    func afterChange(_ command: ControlCommand, peer: OSCServer.Peer) {
        guard case let .change(event, _) = command else { return }
        switch event {
        case let .register(configuration):
            if owners[configuration.name] == nil {
                owners[configuration.name] = Owner(peer)
                // What others scheduled on it while it had no owner is not the new owner's.
                router.withdrawTimedChanges(actingOn: configuration.name,
                                            refusal: PolicyError(.notPermitted, "'\(configuration.name)' was registered by another peer before the timed change applied"))
                if notifyTargets[configuration.name] == nil {
                    notifyTargets[configuration.name] = Target(url: peer.url, destination: server.destination(peer),
                                                               connection: peer.transport == .tcp ? peer.connection : nil)
                }
            }
        case let .unregister(app):
            owners[app] = nil
            if let target = notifyTargets.removeValue(forKey: app) { release(target) }
        default:
            break
        }
    }

    /// The target for `url`, or the peer itself when there is none (a UDP peer gets a socket of
    /// its own, none while the descriptors are short).
    func target(url: String?, peer: OSCServer.Peer) throws(PolicyError) -> Target {
        guard let url else {
            if peer.transport == .udp, DescriptorBudget.isShort() { throw Self.shortOfDescriptors }
            return Target(url: peer.url, destination: server.destination(peer), connection: peer.transport == .tcp ? peer.connection : nil)
        }
        return try target(url: url)
    }

    func target(url: String) throws(PolicyError) -> Target {
        // `destination` opens no socket while the descriptors are short: say which it was.
        guard let parsed = OSCURL(url), let destination = server.destination(parsed) else {
            if DescriptorBudget.isShort() { throw Self.shortOfDescriptors }
            throw PolicyError(.badArgument, "url: cannot reach \(Arguments.quote(url))")
        }
        return Target(url: parsed.description, destination: destination, connection: nil)
    }

    /// The answer to a request that would open a socket while the descriptors kept in reserve are
    /// all that is left (`DescriptorBudget.isShort`).
    static let shortOfDescriptors = PolicyError(.general, DescriptorBudget.shortMessage)

    /// Checks a `/app/<app>/notify` request ("" removes the app's notify address).
    func checkNotify(app: String, url: String) throws(PolicyError) {
        guard router.policyState.app(app) != nil else { throw PolicyError(.unknownApp, "no app named '\(app)'") }
        guard url.isEmpty || OSCURL(url).map({ SocketAddress(host: $0.host, port: $0.port) != nil }) == true else {
            throw PolicyError(.badArgument, "url: cannot reach \(Arguments.quote(url))")
        }
    }

    func setNotify(app: String, url: String) throws(PolicyError) {
        try checkNotify(app: app, url: url)
        let replacement = url.isEmpty ? nil : try target(url: url)
        if let old = notifyTargets.removeValue(forKey: app) { release(old) }
        notifyTargets[app] = replacement
    }

    func replyValues(_ command: ControlCommand, effects: [PolicyEffect]) -> [OSCArgument] {
        switch command {
        case let .setNotify(_, url):
            return [.string(url)]
        case let .change(event, _):
            switch event {
            case let .register(configuration): return [.string(configuration.name)]
            case let .setCategory(_, category, options, mode):
                return [.string(category.rawValue), .string(options.map(\.rawValue).sorted().joined(separator: ",")), .string(mode.rawValue)]
            case let .setAppVolume(_, .position(p)): return [.float(Float(p))]
            case let .setAppVolume(_, .decibels(d)): return [.float(Float(max(d, Double(Decibels.floor))))]
            // The route the command was bound to when it arrived (CommandResolver), not today's.
            case let .setSystemVolume(route, .position(p)): return [.float(Float(p)), .string(route)]
            case let .setSystemVolume(route, .decibels(d)): return [.float(Float(max(d, Double(Decibels.floor)))), .string(route)]
            case let .setRemoteCommands(_, commands): return [.string(commands.map(\.rawValue).sorted().joined(separator: ","))]
            case let .setSilentSwitch(on): return [.int32(on ? 1 : 0)]
            case let .setDucking(.level(v)), let .setDucking(.attack(v)), let .setDucking(.release(v)), let .setDucking(.floor(v)):
                return [.float(Float(v))]
            case let .setDucking(.target(v)): return [v.map { .float(Float($0)) } ?? .string("off")]
            case let .setDuckingRule(rule): return Self.ruleArguments(rule)
            case let .removeDuckingRule(ducker, ducked, route): return [.string(ducker), .string(ducked), .string(route ?? "")]
            case let .selectRoute(route): return [.string(route)]
            case let .setChannelMap(_, links): return Self.channelMapArguments(links)
            case let .setActivation(app, _, _): return (try? answer(.appActivation(app))) ?? []
            // What the route is now: asking for a route whose ports are missing leaves it unavailable.
            case let .setRouteAvailable(route, _): return [.int32(router.policyState.availableRoutes.contains(route) ? 1 : 0)]
            case .remoteCommand:
                for case let .notify(.remote(app, _, _)) in effects { return [.string(app)] }
                return []
            default: return []
            }
        default:
            return []
        }
    }

    /// A channel map as OSC: pairs of app channel and `route:channel`, or `default`.
    static func channelMapArguments(_ links: [ChannelLink]?) -> [OSCArgument] {
        guard let links else { return [.string("default")] }
        return links.flatMap { [OSCArgument.int32(Int32($0.appChannel)), .string("\($0.route):\($0.routeChannel)")] }
    }

    /// The reply values of a query, read from `state` (by default the router's state now).
    func answer(_ query: ControlCommand.Query, state given: PolicyState? = nil) throws(PolicyError) -> [OSCArgument] {
        let state = given ?? router.policyState
        func app(_ name: String) throws(PolicyError) -> AppSession {
            guard let app = state.app(name) else { throw PolicyError(.unknownApp, "no app named '\(name)'") }
            return app
        }
        func currentRoute() throws(PolicyError) -> (String, Float) {
            guard let route = state.currentRoute else { throw PolicyError(.unknownRoute, "no route is available") }
            return (route, state.systemVolume(route) ?? 1)
        }
        switch query {
        case let .appVolume(name): return [.float(Decibels.sliderPosition(linear: try app(name).volume))]
        case let .appGain(name): return [.float(max(Decibels.level(try app(name).volume), Decibels.floor))]
        case let .appRemote(name):
            return [.string(try app(name).configuration.remoteCommands.map(\.rawValue).sorted().joined(separator: ","))]
        case let .appNotify(name):
            _ = try app(name)
            return [.string(notifyTargets[name]?.url ?? "")]
        case let .appChannelMap(name): return Self.channelMapArguments(try app(name).channelMap)
        case let .appActivation(name):
            let session = try app(name)
            return [.string(session.configuration.activation.rawValue), .float(Float(session.signal.threshold)),
                    .float(Float(session.signal.attack)), .float(Float(session.signal.hold)), .float(Float(session.signal.hysteresis))]
        case let .appCategory(name):
            let configuration = try app(name).configuration
            return [.string(configuration.category.rawValue),
                    .string(configuration.options.map(\.rawValue).sorted().joined(separator: ",")), .string(configuration.mode.rawValue)]
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
            return Self.ruleArguments(rule)
        case .selectedRoute: return [.string(state.currentRoute ?? "")]
        case let .routeAvailable(route):
            guard state.systemVolume(route) != nil else { throw PolicyError(.unknownRoute, "no route named '\(route)'") }
            return [.int32(state.availableRoutes.contains(route) ? 1 : 0)]
        }
    }

    func policyError(_ error: RouterError) -> PolicyError {
        switch error {
        case let .policy(error): error
        case let .batch(_, error): error
        case let .unknownApp(name): PolicyError(.unknownApp, "no app named '\(name)'")
        case let .unknownRoute(name): PolicyError(.unknownRoute, "no route named '\(name)'")
        case .badValue: PolicyError(.badArgument, error.description)
        case .capacity, .jack, .stopped: PolicyError(.general, error.description)
        }
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
