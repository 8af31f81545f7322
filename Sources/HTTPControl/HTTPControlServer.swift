import Dispatch
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOPosix
import ControlVocabulary
import OSCTransport
import ServiceLifecycle
import SessionStore

/// The HTTP face of the router (docs/HTTP.md): OSCQuery over HTTP/1.1 on
/// Hummingbird, bound to `osc.bind` and admitting only `osc.allow`, like OSC.
///
/// Threads: requests run on SwiftNIO's event loops and Swift's concurrency pool, never on the
/// control queue or the audio thread. What a request reads comes through `ControlService.read`,
/// which runs on the OSC server's thread exactly as an OSC query does (same decoder, same
/// answers); the request waits for it without holding a thread. Plain HTTP only reads; changes
/// come as OSC in a WebSocket's binary frames, run by the OSC server (WebSocketSession).
///
/// The daemon starts it (binds the port) before the router, so a taken port is known before JACK
/// ports are made, and attaches the control server once OSC runs; until then, and once OSC has
/// stopped, requests that need the control plane get 503.
public final class HTTPControlServer: Sendable {
    public struct Configuration: Sendable {
        /// Where to listen (the session's `osc.bind`, or `--osc-bind`).
        public var bind = "127.0.0.1"
        /// The TCP port (the session's `http.port`, or `--http-port`); not 0.
        public var port = 9952
        /// Who may ask at all (`osc.allow`); anyone else gets 403.
        public var allow: [NetworkRange] = []
        /// Who may take a slot of `adminReserve` when the others are taken (`osc.admin`).
        public var admin: [NetworkRange] = []
        /// Limits that keep one client from holding memory or slots: a request body (GETs have none
        /// worth reading), the header block, header fields, connections admitted at once in all
        /// and from one address (lowered at start by the descriptor
        /// limit: `descriptorReserve`), and the slots beyond the total that only `admin` addresses
        /// may take, so that allowed peers holding every other slot never lock an admin out.
        public var maximumBodyBytes = 1024
        public var maximumHeaderBytes = 16 * 1024
        public var maximumHeaderFields = 100
        public var maximumConnections = 64
        public var maximumConnectionsPerAddress = 16
        public var adminReserve = 8
        /// Descriptors of the soft `RLIMIT_NOFILE` limit (read when the server is made) that
        /// admitted HTTP connections never take: the total cap is at most the limit minus this,
        /// or half the limit when that is less (state file, JACK, OSC, log).
        public var descriptorReserve = 256
        /// An admitted connection must get from acceptance, a request's head or a response's
        /// end to the next of these within this time, or it is closed (slow or endless requests,
        /// peers that do not read, idle keep-alive).
        public var exchangeTimeoutSeconds: Int64 = 10
        /// A WebSocket's unsent frames (replies, values, notifications) past which sends to it
        /// fail, as to a slow OSC TCP peer; its meters never queue (the latest replaces the last).
        public var webSocketQueueBytes = 1 << 20
        /// The largest message a WebSocket peer may send (an OSC packet, a JSON command); a
        /// larger one closes the connection.
        public var maximumWebSocketMessageBytes = 64 * 1024
        /// How often a WebSocket is pinged; one that has not answered the last ping by the next
        /// is closed.
        public var webSocketPingSeconds: Int64 = 10

        public init() {}

        /// The HTTP server of a daemon whose OSC server binds `bind` and admits `allow` and
        /// `admin` (as OSC does).
        public init(port: Int, bind: String, allow: [NetworkRange], admin: [NetworkRange]) {
            self.port = port
            self.bind = bind
            self.allow = allow
            self.admin = admin
        }
    }

    public let configuration: Configuration
    private let control = AttachedControl()
    private let logger: Logger
    private let running = LockedTask()
    private let hub: ListenHub
    /// The admitted connections against their caps, the counts `/state` shows, the refusal log.
    private let book: ConnectionBook

    public init(configuration: Configuration, logger: Logger = Logger(label: "duckrouter.http")) {
        self.configuration = configuration
        self.logger = logger
        hub = ListenHub(control: control, logger: logger)
        book = ConnectionBook(limits: .init(total: configuration.maximumConnections, perAddress: configuration.maximumConnectionsPerAddress,
                                            descriptorLimit: ConnectionBook.Limits.descriptorLimit(), reserve: configuration.descriptorReserve,
                                            adminReserve: configuration.adminReserve),
                              logger: logger)
    }

    /// Gives requests the control server to read from (before this: 503), has WebSocket
    /// listeners told of its changes, and `/state` show this server's connections.
    public func attach(_ control: any ControlService) {
        self.control.set(control)
        control.observeChanges { [hub] in hub.poke() }
        control.showInState { [book, port = configuration.port] in
            var counts = book.counts
            counts.port = port
            return counts
        }
    }

    /// Starts listening and returns once the port is bound; throws when it cannot be.
    public func start() throws(HTTPControlError) {
        let page = ControlPage(directories: ControlPage.defaultDirectories())
        let responder = OSCQueryResponder(control: control, configuration: configuration, page: page, logger: logger)
        let decoder = HTTP1Channel.Configuration.DecoderConfiguration(
            maxHeaderFieldSize: configuration.maximumHeaderBytes, maxHeaderListSize: configuration.maximumHeaderBytes,
            maxHeaderFieldCount: configuration.maximumHeaderFields)
        let outcome = StartOutcome()
        // Hummingbird logs every request at debug and its own start at info; ours says where.
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .notice)
        // No availableConnectionsDelegate: it stops accepting at the limit, which leaves the next
        // peers in the kernel's backlog unanswered. Admission accepts them, answers 503 and
        // closes. At the descriptor limit AcceptPause, added to the listening channel once it
        // runs, pauses accepting for a second instead of retrying at once.
        let rules = Admission.Rules(allow: configuration.allow, admin: configuration.admin, exchangeTimeout: .seconds(configuration.exchangeTimeoutSeconds))
        let book = book
        let channel = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(additionalChannelHandlers: [ConnectionGate()], httpDecoderConfiguration: decoder),
            ws: .init(maxFrameSize: configuration.maximumWebSocketMessageBytes,
                      autoPing: .enabled(timePeriod: .seconds(configuration.webSocketPingSeconds)),
                      closeTimeout: .seconds(5), validateUTF8: true))
        // One thread for every connection: a control server's traffic is light, and one loop
        // woken once per meter tick writes every WebSocket's frames of that tick.
        let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let waker = OutletWaker(eventLoop: eventLoops.next())
        let interval = TimeAmount.seconds(ConnectionBook.logInterval)
        eventLoops.next().scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in book.flushLog() }
        let (control, hub, configuration, logger) = (control, hub, configuration, logger)
        let server = HTTPServerBuilder { responder in
            HTTPControlChannel(
                inner: HTTP1WebSocketUpgradeChannel(responder: responder, configuration: channel) { request, connection, _ in
                    HTTPControlChannel.shouldUpgrade(request, connection, control: control, hub: hub, waker: waker,
                                                     configuration: configuration, logger: logger)
                },
                rules: rules, book: book)
        }
        let application = Application(
            responder: responder,
            server: server,
            configuration: ApplicationConfiguration(address: .hostname(configuration.bind, port: configuration.port),
                                                    serverName: "duckrouter"),
            onServerRunning: { [logger] listener in
                do {
                    try await listener.eventLoop.submit {
                        try listener.pipeline.syncOperations.addHandler(AcceptPause(logger: logger), position: .first)
                    }.get()
                } catch {
                    logger.warning("HTTP: no pause of accepts at the descriptor limit: \(error)")
                }
                outcome.set(nil)
            },
            eventLoopGroupProvider: .shared(eventLoops),
            logger: quiet)
        // No signals: the daemon's own signal thread stops it, through stop().
        let group = ServiceGroup(configuration: .init(services: [application], gracefulShutdownSignals: [], logger: quiet))
        let task = Task {
            do {
                try await group.run()
            } catch {
                outcome.set("\(error)")
            }
            outcome.set("stopped before it listened")
        }
        running.set(Running(task: task, group: group, eventLoops: eventLoops))
        if let failure = outcome.wait() {
            if let running = running.take() { running.end(cancelling: true) }
            throw HTTPControlError("cannot listen for HTTP on \(configuration.bind):\(configuration.port): \(failure)")
        }
        logger.info("HTTP (OSCQuery) listening", metadata: ["tcp": "\(configuration.bind):\(configuration.port)",
                                                           "connections": "\(book.limits.total), \(book.limits.perAddress) per address"])
        // The page's address is logged by the daemon, with its key (pageAddress).
        if page.files.isEmpty {
            logger.warning("the control page's files were not found; /ui/ answers 404", metadata: ["looked in": "\(page.searched)"])
        }
    }

    /// Stops listening, lets requests under way finish and closes connections (waits up to two
    /// seconds, then cancels what is left).
    public func stop() {
        guard let running = running.take() else { return }
        let done = DispatchSemaphore(value: 0)
        Task {
            await running.group.triggerGracefulShutdown()
            _ = await running.task.result
            done.signal()
        }
        running.end(cancelling: done.wait(timeout: .now() + 2) == .timedOut)
    }
}

/// The server's task, its service group and its event loop, taken once by `stop()`.
private struct Running: Sendable {
    let task: Task<Void, Never>
    let group: ServiceGroup
    let eventLoops: MultiThreadedEventLoopGroup

    /// Cancels the task if asked, and shuts the event loop down once the task has ended (its
    /// connections, whose writers schedule work on the loop, end with it).
    func end(cancelling: Bool) {
        if cancelling { task.cancel() }
        Task { [task, eventLoops] in
            _ = await task.result
            eventLoops.shutdownGracefully { _ in }
        }
    }
}

/// Why the HTTP server could not start.
public struct HTTPControlError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The first outcome of starting: listening (nil) or a failure; later ones are ignored.
private final class StartOutcome: @unchecked Sendable {
    // @unchecked: `state` is read and written only under `lock` (NSLock, which TSan sees).
    private let lock = NSLock()
    private var state: (set: Bool, failure: String?) = (false, nil)
    private let semaphore = DispatchSemaphore(value: 0)

    func set(_ failure: String?) {
        let first = lock.withLock {
            guard !state.set else { return false }
            state = (true, failure)
            return true
        }
        if first { semaphore.signal() }
    }

    func wait() -> String? {
        semaphore.wait()
        return lock.withLock { state.failure }
    }
}

/// The control server requests read from, once the daemon has one.
final class AttachedControl: @unchecked Sendable {
    // @unchecked: `control` is read and written only under `lock`.
    private let lock = NSLock()
    private var control: (any ControlService)?
    func set(_ control: any ControlService) { lock.withLock { self.control = control } }
    func get() -> (any ControlService)? { lock.withLock { control } }
}

/// The running server, taken once by `stop()`.
private final class LockedTask: @unchecked Sendable {
    // @unchecked: `running` is read and written only under `lock`.
    private let lock = NSLock()
    private var running: Running?
    func set(_ running: Running) { lock.withLock { self.running = running } }
    func take() -> Running? { lock.withLock { defer { self.running = nil }; return running } }
}
