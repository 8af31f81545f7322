import ControlVocabulary
import Foundation
import Logging
import OSCTransport
import Policy
import RouterCore
import SessionStore

/// The OSC face of the router (docs/OSC.md): receives commands over UDP and TCP, checks who sent
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
        /// TCP connections admitted at once, in all and from one address, and the seconds a TCP
        /// peer has to send a complete packet (OSCServer+Admission.swift).
        public var tcpConnections = 64
        public var tcpConnectionsPerAddress = 32
        public var tcpPacketTimeout = 10.0
        /// Failed sends in a row after which a subscriber (or an app's notify address) is dropped.
        public var failureLimit = 8
        /// The control page's key and address (nil: no page, HTTP is off).
        public var page: PageAccess?
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
            tcpConnections = session.tcpConnections
            tcpConnectionsPerAddress = session.tcpConnectionsPerAddress
            tcpPacketTimeout = session.tcpPacketTimeout
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
    /// The HTTP server's counts for `/state`, once it is attached.
    let httpState = HTTPStateSource()
    var owners: [String: Owner] = [:]
    var notifyTargets: [String: Target] = [:]
    var subscribers: [Target] = []
    var meterTargets: [Target] = []
    /// `/meters/loudness` subscribers (their `meterRate` and `nextMeter` as for peak meters).
    var loudnessTargets: [Target] = []
    /// `/meters/levels` subscribers (their `meterRate`, `nextMeter` and `lastMeter` as for peak
    /// meters). The audio thread measures RMS exactly while there is one.
    var levelTargets: [Target] = [] {
        didSet {
            if oldValue.isEmpty != levelTargets.isEmpty { router.measureRMS(!levelTargets.isEmpty) }
        }
    }
    /// Each tick's peaks, since the oldest a meter or level subscriber has not had yet.
    var meterHistory: [(time: Double, meters: [PeakMeter])] = []
    /// The `/duckrouter/meter` bundle laid out for the meters there are (made again when they change).
    var meterBundle: OSCFloatBundle?
    private var malformed = 0
    private var lastMalformedLog = 0.0
    /// Counters for `/state` and tests.
    private(set) var received = 0
    /// Packets from senders outside `osc.allow`, and which of them are answered and logged
    /// (ControlServer+Refusals.swift).
    var refusedPackets = 0
    var refusals = RefusalBudget()
    /// Whether the router is coalescing plans for the burst being handled.
    private var inBurst = false
    /// Told after anything that may have changed what a read sees (ControlServer+Streams.swift).
    var changeObservers: [@Sendable () -> Void] = []
    /// Streams (WebSockets) whose peer presented the page's current key, by connection id, with
    /// that key's generation (`PageAccess.rotate`): a person's rights, as an osc.admin address.
    /// Those of older keys are dropped when the key changes.
    var adminStreams: [Int: Int] = [:]
    /// A new page key is being written (`rotatePageKey`): another request waits for none.
    var rotatingPageKey = false

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
        settings.maximumConnections = configuration.tcpConnections
        settings.maximumConnectionsPerAddress = configuration.tcpConnectionsPerAddress
        settings.packetTimeout = configuration.tcpPacketTimeout
        do {
            server = try OSCServer(configuration: settings)
        } catch {
            throw ControlServerError(error.description)
        }
        server.onProblem = { [logger] text in logger.warning("\(text)") }
        server.admits = { [allow = configuration.allow] address in
            allow.contains { $0.contains(address.bytes, port: address.port) }
        }
        // TCP only: a host:port entry of osc.admin grants UDP from that port, nothing over TCP.
        server.isAdmin = { [admin = configuration.admin] address in
            admin.contains { $0.port == nil && $0.contains(address.bytes, port: address.port) }
        }
        server.answerAtAccept = Self.answer(closing:_:)
    }

    /// Starts serving on the server's own thread.
    public func start() {
        relay.connect { [weak self] notification in
            guard let self else { return }
            server.execute { [weak self] in self?.deliver(notification) }
        }
        server.start(tickMilliseconds: 10, onTick: { [weak self] in self?.tick() },
                     nextTickWanted: { [weak self] in self?.nextTickWanted },
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
        router.measureRMS(false)
    }

    // MARK: Receiving

    func allowed(_ peer: OSCServer.Peer) -> Bool {
        configuration.allow.contains { $0.contains(peer.address.bytes, port: peer.address.port) }
    }

    private func isAdmin(_ peer: OSCServer.Peer) -> Bool {
        (peer.transport == .tcp && adminStreams[peer.connection] != nil) || isAdminAddress(peer)
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
        // Judged before it is decoded: a refused packet costs no more than it must.
        guard allowed(peer) else {
            refuse(bytes, from: peer)
            return
        }
        let packet: OSCPacket
        do {
            packet = try OSCCodec.decode(bytes)
        } catch {
            noteMalformed(error.description, from: peer)
            return
        }
        let messages = OSCClient.messages(in: packet)
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
            let decoded = try Vocabulary.decode(message)
            try authorize(decoded, peer)
            if let values = try run(decoded.command, from: peer, path: message.path) { sendReply(to: peer, path: message.path, values) }
        } catch {
            sendError(to: peer, path: message.path, error)
        }
    }

    /// A bundle's changes apply together (one router batch, one plan), at its time tag; its queries
    /// are answered at once. If any message is refused, none of its changes apply.
    private func executeBundle(_ messages: [OSCMessage], timetag: OSCTimetag, from peer: OSCServer.Peer) {
        var commands: [(message: OSCMessage, command: ControlCommand)] = []
        var apps: [String] = []   // the apps the bundle changes
        var adminOnly = false     // whether it does what only an admin may
        var refused = false
        for message in messages {
            do throws(PolicyError) {
                let decoded = try Vocabulary.decode(message)
                try authorize(decoded, peer)
                commands.append((message, decoded.command))
                if let app = decoded.app { apps.append(app) }
                if decoded.adminOnly { adminOnly = true }
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
            do throws(PolicyError) {
                if let values = try run(command, from: peer, path: message.path) { sendReply(to: peer, path: message.path, values) }
            } catch {
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
                try router.perform(batch, atUnixTime: timetag.unixTime,
                                   keyGeneration: reliesOnKey(apps, adminOnly: adminOnly, peer) ? adminStreams[peer.connection] : nil,
                                   completion: finish)
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

    /// Whether only the page's key the peer's stream presented gives it the right to change `apps`
    /// (one is an app another registered, and its address is not osc.admin), or to do what only an
    /// admin may.
    private func reliesOnKey(_ apps: [String], adminOnly: Bool, _ peer: OSCServer.Peer) -> Bool {
        guard peer.transport == .tcp, adminStreams[peer.connection] != nil, !isAdminAddress(peer) else { return false }
        return adminOnly || apps.contains { app in owners[app].map { $0 != Owner(peer) } == true }
    }

    /// The vocabulary says which app a message changes (`Vocabulary.Decoded.app`, from its row):
    /// its owner, if it has one, or an admin may send it.
    private func authorize(_ decoded: Vocabulary.Decoded, _ peer: OSCServer.Peer) throws(PolicyError) {
        if decoded.adminOnly && !isAdmin(peer) {
            throw PolicyError(.notPermitted, "only an osc.admin address or a holder of the page's key may do this: it says what a recall does to every app")
        }
        guard let app = decoded.app, let owner = owners[app], owner != Owner(peer), !isAdmin(peer) else { return }
        throw PolicyError(.notPermitted, "'\(app)' was registered by \(owner); only it or an osc.admin address may control it")
    }

    // MARK: State

    func stateJSON() -> String {
        var document = StateDocument(router.status(), owners: owners.mapValues(\.description),
                                     notify: notifyTargets.mapValues(\.url), subscribers: subscribers.map(\.url),
                                     meterSubscribers: meterTargets.map(\.url))
        document.settings.levelSubscribers = levelTargets.map(\.url)
        document.engine.measuresRMS = router.measuresRMS
        document.http = httpState.read()
        document.osc = limitsState()
        document.descriptors = StateDocument.Descriptors.now()
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
