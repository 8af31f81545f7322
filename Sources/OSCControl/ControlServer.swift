import Foundation
import Logging
import OSCTransport
import Policy
import RouterCore
import SessionStore

/// The OSC face of the router (DESIGN.md §3): receives commands over UDP and TCP, checks who sent
/// them, runs them on the router, answers each with `/reply` or `/error`, and sends notifications
/// to apps and subscribers, and peak meters to those who asked.
///
/// Threads: everything here runs on the OSC server's thread. Commands reach the router through its
/// own API (which runs them on the control queue and returns); notifications come back from the
/// control queue through the relay and are queued onto the server thread, so they leave in the
/// order they happened and a slow peer never blocks the router or the audio thread.
public final class ControlServer: @unchecked Sendable {
    // @unchecked: mutable state below is touched only on the OSC server's thread.

    public struct Configuration: Sendable {
        public var bind = "127.0.0.1"
        public var port: UInt16 = 9951
        /// Senders allowed at all.
        public var allow: [NetworkRange] = [try! NetworkRange.parse("127.0.0.1/32").get(), try! NetworkRange.parse("::1/128").get()]
        /// Senders that may control any app (control surfaces).
        public var admin: [NetworkRange] = []
        public var maximumSubscribers = 64
        /// Failed sends in a row after which a subscriber (or an app's notify address) is dropped.
        public var failureLimit = 8
        public init() {}

        /// The session's `osc` section, with command-line overrides.
        public init(session: Session.OSCSettings, port: Int? = nil, bind: String? = nil) throws(ControlServerError) {
            self.bind = bind ?? session.bind
            self.port = UInt16(clamping: port ?? session.port)
            self.allow = try session.allow.map { text throws(ControlServerError) in
                switch NetworkRange.parse(text) {
                case let .success(range): return range
                case let .failure(error): throw ControlServerError("osc.allow: \(error)")
                }
            }
            self.admin = try session.admin.map { text throws(ControlServerError) in
                switch NetworkRange.parse(text) {
                case let .success(range): return range
                case let .failure(error): throw ControlServerError("osc.admin: \(error)")
                }
            }
        }
    }

    /// Who owns an app: the UDP address or the TCP connection that registered it.
    enum Owner: Hashable, CustomStringConvertible {
        case udp(String, UInt16)
        case tcp(Int)

        init(_ peer: OSCServer.Peer) {
            self = peer.transport == .udp ? .udp(peer.address.host, peer.address.port) : .tcp(peer.connection)
        }

        var description: String {
            switch self {
            case let .udp(host, port): "udp \(host):\(port)"
            case let .tcp(id): "tcp connection \(id)"
            }
        }
    }

    /// A place notifications go, with its failures in a row.
    final class Target {
        let url: String
        let destination: OSCServer.Destination
        /// The TCP connection it rides on (gone with it), if any.
        let connection: Int?
        var failures = 0
        /// Meters: frames per second asked for (0: none), when the next one is due, and when the
        /// last one went (its peaks are those of the ticks after it: `meterHistory`).
        var meterRate = 0.0
        var nextMeter = 0.0
        var lastMeter = OSCServer.clockSeconds()
        /// OSCQuery meter paths (`/app/<app>/meter`, `/route/<route>/meter`) listened to on a
        /// stream: it gets those as messages of their own paths instead of `/duckrouter/meter`
        /// (nil: an OSC `/meters` subscriber).
        var meterPaths: Set<String>?
        init(url: String, destination: OSCServer.Destination, connection: Int?) {
            self.url = url
            self.destination = destination
            self.connection = connection
        }
    }

    public let configuration: Configuration
    let router: Router
    private let relay: NotificationRelay
    let logger: Logger
    let server: OSCServer
    private var owners: [String: Owner] = [:]
    private(set) var notifyTargets: [String: Target] = [:]
    private var subscribers: [Target] = []
    var meterTargets: [Target] = []
    /// Each tick's peaks, since the oldest a meter subscriber has not had yet.
    var meterHistory: [(time: Double, meters: [PeakMeter])] = []
    /// The `/duckrouter/meter` bundle laid out for the meters there are (made again when they change).
    var meterBundle: OSCFloatBundle?
    private var malformed = 0
    private var lastMalformedLog = 0.0
    /// Counters for `/state` and tests.
    private(set) var received = 0
    /// Whether the router is coalescing plans for the burst being handled.
    private var inBurst = false
    /// Told after anything that may have changed what a read sees (ControlServer+Streams.swift).
    var changeObservers: [@Sendable () -> Void] = []
    /// Streams whose peer has a person's rights (osc.admin), by connection id.
    var adminStreams: Set<Int> = []

    /// The port the server listens on (UDP and TCP).
    public var port: UInt16 { server.port }

    public init(configuration: Configuration, router: Router, relay: NotificationRelay,
                logger: Logger = Logger(label: "duckrouter.osc")) throws(ControlServerError) {
        self.configuration = configuration
        self.router = router
        self.relay = relay
        self.logger = logger
        var settings = OSCServer.Configuration()
        settings.bind = configuration.bind
        settings.port = configuration.port
        do {
            server = try OSCServer(configuration: settings)
        } catch {
            throw ControlServerError(error.description)
        }
        server.onProblem = { [logger] text in logger.warning("\(text)") }
    }

    /// Starts serving on the server's own thread.
    public func start() {
        relay.connect { [weak self] notification in
            guard let self else { return }
            server.execute { [weak self] in self?.deliver(notification) }
        }
        server.start(tickMilliseconds: 10, onTick: { [weak self] in self?.tick() },
                     onClose: { [weak self] peer in self?.closed(peer) },
                     onBurstEnd: { [weak self] in self?.endBurst() },
                     handler: { [weak self] bytes, peer in self?.receive(bytes, from: peer) })
        logger.info("OSC listening", metadata: ["udp": "\(configuration.bind):\(server.port)", "tcp": "\(configuration.bind):\(server.port)"])
    }

    private func endBurst() {
        guard inBurst else { return }
        inBurst = false
        router.endCoalescing()
        for observer in changeObservers { observer() }
    }

    /// Stops serving; notifications are dropped from then on.
    public func stop() {
        relay.connect(nil)
        server.stop()
    }

    // MARK: Receiving

    private func allowed(_ peer: OSCServer.Peer) -> Bool {
        configuration.allow.contains { $0.contains(peer.address.bytes, port: peer.address.port) }
    }

    private func isAdmin(_ peer: OSCServer.Peer) -> Bool {
        (peer.transport == .tcp && adminStreams.contains(peer.connection))
            || configuration.admin.contains { $0.contains(peer.address.bytes, port: peer.address.port) }
    }

    /// Packets that arrive together are answered one by one, but their changes reach the audio
    /// thread in one plan, published when the burst has been handled: a flood of messages costs
    /// one plan per wake-up instead of one per message (docs/PERFORMANCE.md).
    private func receive(_ bytes: [UInt8], from peer: OSCServer.Peer) {
        if !inBurst {
            inBurst = true
            router.beginCoalescing()
        }
        received += 1
        let packet: OSCPacket
        do {
            packet = try OSCCodec.decode(bytes)
        } catch {
            noteMalformed(error.description, from: peer)
            return
        }
        let messages = OSCClient.messages(in: packet)
        guard allowed(peer) else {
            for message in messages {
                sendError(to: peer, path: message.path,
                          PolicyError(.notPermitted, "\(peer.address.host) is not allowed to control this router (osc.allow)"))
            }
            logger.notice("refused OSC from a sender outside osc.allow", metadata: ["peer": "\(peer)", "messages": "\(messages.count)"])
            return
        }
        switch packet {
        case let .message(message):
            execute(message, from: peer)
        case let .bundle(timetag, _):
            executeBundle(messages, timetag: timetag, from: peer)
        }
    }

    private func noteMalformed(_ problem: String, from peer: OSCServer.Peer) {
        malformed += 1
        let now = Date().timeIntervalSince1970
        if now - lastMalformedLog >= 1 {
            logger.warning("dropped a packet that is not OSC", metadata: ["peer": "\(peer)", "problem": "\(problem)", "since last report": "\(malformed)"])
            lastMalformedLog = now
            malformed = 0
        }
    }

    private func execute(_ message: OSCMessage, from peer: OSCServer.Peer) {
        do throws(PolicyError) {
            let command = try ControlCommand.decode(message)
            try authorize(command, peer)
            let values = try run(command, from: peer)
            sendReply(to: peer, path: message.path, values)
        } catch {
            sendError(to: peer, path: message.path, error)
        }
    }

    /// A bundle's changes apply together (one router batch, one plan), at its time tag; its queries
    /// are answered at once. If any message is refused, none of its changes apply.
    private func executeBundle(_ messages: [OSCMessage], timetag: OSCTimetag, from peer: OSCServer.Peer) {
        var commands: [(message: OSCMessage, command: ControlCommand)] = []
        var refused = false
        for message in messages {
            do throws(PolicyError) {
                let command = try ControlCommand.decode(message)
                try authorize(command, peer)
                commands.append((message, command))
            } catch {
                sendError(to: peer, path: message.path, error)
                refused = true
            }
        }
        let changes = commands.filter { $0.command.isChange }
        if refused {
            for (message, _) in changes { sendError(to: peer, path: message.path, Self.notApplied) }
            return
        }
        for (message, command) in commands where !command.isChange {
            do throws(PolicyError) { sendReply(to: peer, path: message.path, try run(command, from: peer)) } catch {
                sendError(to: peer, path: message.path, error)
            }
        }
        guard !changes.isEmpty else { return }
        // One reading of the state for the whole bundle, when it arrives (CommandResolver).
        var resolver = CommandResolver(reading: { [router] in router.policyState })
        var resolved: [(message: OSCMessage, command: ControlCommand)] = []
        var batch: [Router.Change] = []
        var positions: [Int] = []     // batch index → index in `changes`
        for (k, (message, command)) in changes.enumerated() {
            do throws(PolicyError) {
                let next = try resolver.resolve(command)
                if let change = next.change {
                    batch.append(change)
                    positions.append(k)
                } else if case let .setNotify(app, url) = command {
                    try checkNotify(app: app, url: url)   // checked now, set once the batch applies
                }
                resolved.append((message, next.command))
            } catch {
                for (j, (message, _)) in changes.enumerated() {
                    sendError(to: peer, path: message.path, j == k ? error : Self.notApplied)
                }
                return
            }
        }
        let indices = positions
        let answered = resolved
        let finish: @Sendable (Result<[PolicyEffect], RouterError>) -> Void = { [weak self] result in
            guard let self else { return }
            server.execute { [weak self] in self?.finishBundle(answered, positions: indices, result: result, peer: peer) }
        }
        if timetag.isImmediate {
            do throws(RouterError) { finishBundle(resolved, positions: positions, result: .success(try router.perform(batch)), peer: peer) } catch {
                finishBundle(resolved, positions: positions, result: .failure(error), peer: peer)
            }
        } else {
            do throws(RouterError) {
                try router.perform(batch, atUnixTime: timetag.unixTime, completion: finish)
            } catch {
                finishBundle(resolved, positions: positions, result: .failure(error), peer: peer)
            }
        }
    }

    /// Answers a bundle's changes once it has applied (or was refused); `changes` are resolved.
    private func finishBundle(_ changes: [(message: OSCMessage, command: ControlCommand)], positions: [Int],
                              result: Result<[PolicyEffect], RouterError>, peer: OSCServer.Peer) {
        switch result {
        case let .success(effects):
            for (message, command) in changes {
                if case let .setNotify(app, url) = command {
                    do throws(PolicyError) { try setNotify(app: app, url: url) } catch {
                        sendError(to: peer, path: message.path, error)
                        continue
                    }
                }
                afterChange(command, peer: peer)
                sendReply(to: peer, path: message.path, replyValues(command, effects: effects))
            }
        case let .failure(error):
            var culprit: Int?
            if case let .batch(index, _) = error { culprit = positions[index] }
            for (k, (message, _)) in changes.enumerated() {
                sendError(to: peer, path: message.path, culprit == nil || culprit == k ? policyError(error) : Self.notApplied)
            }
        }
    }

    /// What the other messages of a bundle get when one of them is refused.
    private static let notApplied = PolicyError(.general, "not applied: another message of its bundle was refused")

    private func authorize(_ command: ControlCommand, _ peer: OSCServer.Peer) throws(PolicyError) {
        guard let app = command.app, let owner = owners[app], owner != Owner(peer), !isAdmin(peer) else { return }
        throw PolicyError(.notPermitted, "'\(app)' was registered by \(owner); only it or an osc.admin address may control it")
    }

    // MARK: Running commands

    private func run(_ command: ControlCommand, from peer: OSCServer.Peer) throws(PolicyError) -> [OSCArgument] {
        switch command {
        case .change, .systemVolume:
            var resolver = CommandResolver(reading: { [router] in router.policyState })
            let resolved = try resolver.resolve(command)
            guard let change = resolved.change else { return [] }
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
        case .state:
            return [.string(stateJSON())]
        }
    }

    /// Ownership and notify addresses follow registrations and removals.
    private func afterChange(_ command: ControlCommand, peer: OSCServer.Peer) {
        guard case let .change(event, _) = command else { return }
        switch event {
        case let .register(configuration):
            if owners[configuration.name] == nil {
                owners[configuration.name] = Owner(peer)
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

    /// The target for `url`, or the peer itself when there is none.
    private func target(url: String?, peer: OSCServer.Peer) throws(PolicyError) -> Target {
        guard let url else {
            return Target(url: peer.url, destination: server.destination(peer), connection: peer.transport == .tcp ? peer.connection : nil)
        }
        return try target(url: url)
    }

    private func target(url: String) throws(PolicyError) -> Target {
        guard let parsed = OSCURL(url), let destination = server.destination(parsed) else {
            throw PolicyError(.badArgument, "url: cannot reach \(Arguments.quote(url))")
        }
        return Target(url: parsed.description, destination: destination, connection: nil)
    }

    /// Checks a `/app/<app>/notify` request ("" removes the app's notify address).
    private func checkNotify(app: String, url: String) throws(PolicyError) {
        guard router.policyState.app(app) != nil else { throw PolicyError(.unknownApp, "no app named '\(app)'") }
        guard url.isEmpty || OSCURL(url).map({ SocketAddress(host: $0.host, port: $0.port) != nil }) == true else {
            throw PolicyError(.badArgument, "url: cannot reach \(Arguments.quote(url))")
        }
    }

    private func setNotify(app: String, url: String) throws(PolicyError) {
        try checkNotify(app: app, url: url)
        let replacement = url.isEmpty ? nil : try target(url: url)
        if let old = notifyTargets.removeValue(forKey: app) { release(old) }
        notifyTargets[app] = replacement
    }

    private func replyValues(_ command: ControlCommand, effects: [PolicyEffect]) -> [OSCArgument] {
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
            case let .setDucking(.level(v)), let .setDucking(.attack(v)), let .setDucking(.release(v)): return [.float(Float(v))]
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
        case .selectedRoute: return [.string(state.currentRoute ?? "")]
        case let .routeAvailable(route):
            guard state.systemVolume(route) != nil else { throw PolicyError(.unknownRoute, "no route named '\(route)'") }
            return [.int32(state.availableRoutes.contains(route) ? 1 : 0)]
        }
    }

    private func policyError(_ error: RouterError) -> PolicyError {
        switch error {
        case let .policy(error): error
        case let .batch(_, error): error
        case let .unknownApp(name): PolicyError(.unknownApp, "no app named '\(name)'")
        case let .unknownRoute(name): PolicyError(.unknownRoute, "no route named '\(name)'")
        case .badValue: PolicyError(.badArgument, error.description)
        case .capacity, .jack, .stopped: PolicyError(.general, error.description)
        }
    }

    // MARK: Sending

    private func sendReply(to peer: OSCServer.Peer, path: String, _ values: [OSCArgument]) {
        let bytes = OSCCodec.encode(OSCMessage("/reply", [.string(path)] + values))
        if !server.send(bytes, to: peer), peer.transport == .udp, bytes.count > 65_000 {
            sendError(to: peer, path: path, PolicyError(.general, "the reply is \(bytes.count) bytes, too large for UDP; ask over TCP"))
        }
    }

    private func sendError(to peer: OSCServer.Peer, path: String, _ error: PolicyError) {
        var message = error.message
        if message.utf8.count > 1024 { message = String(decoding: message.utf8.prefix(1000), as: UTF8.self) + "…" }
        let shownPath = path.utf8.count > 1024 ? String(decoding: path.utf8.prefix(1000), as: UTF8.self) + "…" : path
        server.send(OSCCodec.encode(OSCMessage("/error", [.string(shownPath), .int32(error.code.rawValue), .string(message)])), to: peer)
    }

    /// Lets a target go. A target made for an address has a socket of its own (UDP) or a connection
    /// the router opened (TCP), closed here; one that rides on a peer's TCP connection leaves that
    /// connection to the peer, who may still be using it.
    func release(_ target: Target) {
        if target.connection == nil { server.close(target.destination) }
    }

    /// Sends to a target, counting failures in a row; false once it has failed too often.
    func send(_ bytes: [UInt8], to target: Target, conflatable: Bool = false) -> Bool {
        if server.send(bytes, to: target.destination, conflatable: conflatable) {
            target.failures = 0
        } else {
            target.failures += 1
        }
        return target.failures < configuration.failureLimit
    }

    /// Sends a notification to the app it concerns and to every subscriber, once per address.
    private func deliver(_ notification: RouterNotification) {
        for observer in changeObservers { observer() }
        let bytes = OSCCodec.encode(Self.message(for: notification))
        var reached = Set<String>()
        if let app = notification.app, let target = notifyTargets[app] {
            reached.insert(target.url)
            if !send(bytes, to: target) {
                logger.warning("dropping an app's notify address after repeated failures", metadata: ["app": "\(app)", "url": "\(target.url)"])
                notifyTargets[app] = nil
                // A UDP owner that cannot be reached has gone (a restarted program gets a new
                // port): the app is free to be registered again.
                if case let .udp(host, port)? = owners[app], target.url == OSCURL(transport: .udp, host: host, port: port).description {
                    owners[app] = nil
                }
                release(target)
            }
        }
        subscribers.removeAll { target in
            guard reached.insert(target.url).inserted else { return false }
            if send(bytes, to: target) { return false }
            logger.warning("dropping a subscriber after repeated failures", metadata: ["url": "\(target.url)"])
            release(target)
            return true
        }
    }

    static func message(for notification: RouterNotification) -> OSCMessage {
        switch notification {
        case let .policy(notification): message(for: notification)
        case let .jack(connected, reason):
            OSCMessage("/duckrouter/jack", [.string(connected ? "connected" : "disconnected"), .string(reason)])
        case let .xruns(total, new):
            OSCMessage("/duckrouter/xrun", [.int32(Int32(clamping: total)), .int32(Int32(clamping: new))])
        }
    }

    static func message(for notification: PolicyNotification) -> OSCMessage {
        switch notification {
        case let .interruption(app, phase, shouldResume, reason):
            OSCMessage("/duckrouter/interruption", [.string(app), .string(phase.rawValue), .int32(shouldResume ? 1 : 0), .string(reason.rawValue)])
        case let .appState(app, state, gain, reason):
            OSCMessage("/duckrouter/app", [.string(app), .string(state.rawValue), .float(Float(max(gain, Double(Decibels.floor)))),
                                           .string(reason?.rawValue ?? "")])
        case let .silentSwitch(on):
            OSCMessage("/duckrouter/silent", [.int32(on ? 1 : 0)])
        case let .systemVolume(route, volume):
            OSCMessage("/duckrouter/volume", [.float(Float(volume)), .string(route)])
        case let .remote(app, command, value):
            OSCMessage("/duckrouter/remote", [.string(app), .string(command.rawValue)] + (value.map { [.float(Float($0))] } ?? []))
        case let .route(reason, route, previous, app):
            OSCMessage("/duckrouter/route", [.string(reason.rawValue), .string(route), .string(previous)] + (app.map { [.string($0)] } ?? []))
        case let .duckReleased(app, released):
            OSCMessage("/duckrouter/duck", [.string(app), .string(released ? "released" : "holding")])
        }
    }

    /// A TCP peer went away: its apps become unowned, and what rode on its connection is dropped.
    private func closed(_ peer: OSCServer.Peer) {
        let owner = Owner(peer)
        for (app, o) in owners where o == owner { owners[app] = nil }
        for (app, target) in notifyTargets where target.connection == peer.connection { notifyTargets[app] = nil }
        subscribers.removeAll { $0.connection == peer.connection }
        meterTargets.removeAll { $0.connection == peer.connection }
        adminStreams.remove(peer.connection)
    }

    // MARK: State

    private func stateJSON() -> String {
        let document = StateDocument(router.status(), owners: owners.mapValues(\.description),
                                     notify: notifyTargets.mapValues(\.url), subscribers: subscribers.map(\.url),
                                     meterSubscribers: meterTargets.map(\.url))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        guard let data = try? encoder.encode(document) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Why the OSC control server could not start.
public struct ControlServerError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
