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
            return try Vocabulary.answer(query, router.policyState, notify: { [notifyTargets] in notifyTargets[$0]?.url ?? "" })
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
        case let .levelMeters(url, rate):
            return try subscribeLevels(url: url, rate: rate, peer: peer)
        case .state:
            return [.string(stateJSON())]
        case let .timeline(after):
            return [.string(timelineJSON(after: after))]
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
            // A TCP peer gone before its change applied (a bundle timed for later, or a reply
            // whose send closed it) owns nothing: its close has let go of what it held already.
            if owners[configuration.name] == nil, server.isConnected(peer) {
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
        command.replyValues(effects: effects, after: { [router] in router.policyState })
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
}
