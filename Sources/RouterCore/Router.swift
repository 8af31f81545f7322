import Dispatch
import Engine
import Foundation
import JackHost
import Logging
import Policy
import SessionStore

/// The control thread: opens the JACK client, registers a port group per app and per route,
/// connects them, and turns the session and every runtime change into mix plans for the engine.
///
/// All state lives on one serial queue. Public methods may be called from any thread; they run on
/// that queue and return when the change has been published to the audio thread.
public final class Router: @unchecked Sendable {
    // @unchecked: every mutable field below is touched only on `queue`.

    public struct Configuration: Sendable {
        public var session: Session
        /// JACK server name (nil: `$JACK_DEFAULT_SERVER`, else `default`).
        public var server: String?
        /// Overrides the session's client name.
        public var clientName: String?
        /// Overrides the session's ramp time, in milliseconds.
        public var rampMilliseconds: Double?
        public var engine = Engine.Configuration()
        /// How often the control thread collects retired plans and meters.
        public var housekeepingInterval: DispatchTimeInterval = .milliseconds(10)
        /// Receives every notification of the policy, in order, on the control queue (the OSC
        /// layer forwards them to apps and subscribers). It must not block.
        public var onNotification: @Sendable (RouterNotification) -> Void = { _ in }
        /// Called on the control queue when the JACK server goes away (false) and when the router
        /// is running on it again (true). It must not block.
        public var onJackConnection: @Sendable (Bool) -> Void = { _ in }
        /// Waits between attempts to reach a JACK server that went away: the first, doubling up to
        /// the last. The router never starts a server itself.
        public var reconnectDelays: (first: Double, maximum: Double) = (0.1, 1.0)
        /// Channels of an app registered at run time when the caller does not say.
        public var defaultChannelCount = 2
        /// Receives the state to keep (volumes, silent switch, selected route, ducking, apps)
        /// at most 200 ms after a change that the policy asks to save, coalesced, on the control
        /// queue, and once more on stop if one is pending. It must not block: write elsewhere.
        public var onSave: (@Sendable (SavedState) -> Void)?

        public init(session: Session, server: String? = nil) {
            self.session = session
            self.server = server
        }
    }

    private struct AppState {
        var name: String
        var channelCount: Int
        /// `<app>_in_<n>`; empty while the JACK server is away (registered again when it is back).
        var ports: [JackPort]
        var meterSlots: [Int32]
        var connect: [PortPattern]
        /// Only `connect` sources may feed it: other connections are removed.
        var exclusive = false
        /// Linear gain the policy wants (volume, ducking and audibility together).
        var gain: Float
        /// The ramp of the latest gain change, until a plan carrying it is published.
        var pendingRamp: Int32?
        /// Recording apps: `<app>_capture_<n>`, one per input channel, fed from the input route.
        /// Slots are kept while the server is away; the ports are registered again with the app's.
        var capturePorts: [JackPort] = []
        var captureSlots: [Int32] = []
        /// The silence after which an active ducking app releases its duck (ms).
        var unduckAfter: Double?
        /// The level watch reporting its input peak each cycle, while it is watched.
        var watch: Int32?
        var detector: SignalDetector?
        /// The last signal activation tried (refusals are retried every 250 ms while it sounds).
        var lastSignalAttempt = Date.distantPast
        var refusalLogged = false
    }

    private struct RouteState {
        var name: String
        var channelCount: Int
        /// `<route>_out_<n>`; empty while the JACK server is away.
        var ports: [JackPort]
        var meterSlots: [Int32]
        var destinations: [String]
        /// The route's system volume, linear.
        var gain: Float
        var pendingRamp: Int32?
        /// Whether every destination port exists in the JACK graph (a route without destination
        /// ports always is). The route is available while present and enabled.
        var present = true
        /// What `/route/<route>/available` last said (for devices JACK cannot see); default yes.
        var enabled = true
        /// Milliseconds this route hears its inputs late (look-ahead for talkover), 0: none.
        var lookahead: Double = 0
    }

    private struct ScheduledChanges {
        var changes: [Change]
        var frame: UInt32
        var completion: @Sendable (Result<[PolicyEffect], RouterError>) -> Void
    }

    /// An unregistered app whose ports stay until its fade has finished and no plan the audio
    /// thread may still use reads them.
    private struct RetiringApp {
        var name: String
        /// The app channel its first port carries: 0 for a removed app, more for the channels an
        /// app dropped when it was registered again with fewer (`<app>_in_<firstChannel + 1>`…).
        var firstChannel = 0
        /// Empty once the server that had them went away.
        var ports: [JackPort]
        var meterSlots: [Int32]
        var capturePorts: [JackPort] = []
        var captureSlots: [Int32] = []
        /// The first published plan without any of its cells.
        var clearedInPlan: UInt64?
    }

    private let queue = DispatchQueue(label: "duckrouter.control", qos: .userInitiated)
    private let logger: Logger
    /// The JACK client; nil while the server is away (the router keeps its state and answers).
    private var client: JackClient?
    /// The client name asked for, the one JACK gave, and the server.
    private let requestedClientName: String
    private var clientName: String
    private let serverName: String?
    private var resolvedServerName: String
    /// Counts JACK clients opened; events of an earlier one are ignored.
    private var epoch = 0
    private var disconnectedSince: Date?
    private var lossReason = ""
    private var reconnectAttempt = 0
    private var reconnects = 0
    private var reconnectScheduled = false
    private let reconnectDelays: (first: Double, maximum: Double)
    /// Where `jack_client_open` is tried, so a slow server never holds the control queue.
    private let connector = DispatchQueue(label: "duckrouter.reconnect")
    private let onJackConnection: @Sendable (Bool) -> Void
    private let engine: Engine
    private let rampMilliseconds: Double
    private let onServerLost: @Sendable (String) -> Void
    private let onNotification: @Sendable (RouterNotification) -> Void
    private let onSave: (@Sendable (SavedState) -> Void)?
    private var savePending = false
    private let defaultChannelCount: Int
    private let maxInputChannels: Int
    private var policy: PolicyEngine
    private var apps: [AppState] = []
    private var retiring: [RetiringApp] = []
    private var freeInputSlots: [Int32] = []
    private var nextInputSlot: Int32 = 0
    private var freeOutputSlots: [Int32] = []
    private var nextOutputSlot: Int32 = 0
    private let maxOutputChannels: Int
    /// The input route (DESIGN.md §2): `input_<n>`, fed by the session's `input.ports`.
    private var inputPorts: [JackPort] = []
    private var inputSlots: [Int32] = []
    private var inputSources: [String] = []
    private var saveRequests = 0
    private var routes: [RouteState] = []
    /// The route every app plays to (the policy's current route), as an index into `routes`.
    private var currentRoute: Int?
    /// Changes waiting for their frame (bundles with a future timetag), soonest first.
    private var scheduled: [ScheduledChanges] = []
    private var compiler: PlanCompiler
    private var sampleRate: Int
    private var bufferSize: Int
    /// The state has changed since the last plan was queued (the queue was full, or plans are
    /// being coalesced); housekeeping or `endCoalescing()` publishes it.
    private var needsPublish = false
    private var coalescing = false
    private var nextDrop: UInt64?
    private var publishedGeneration: UInt64 = 0
    private var cellCount = 0
    private var xruns = 0
    private var xrunsNotified = 0
    private var lastXrunNotification = Date.distantPast
    /// Control→audio hand-offs that found the plan queue full (the state waited and was coalesced).
    private var planQueueFull = 0
    private var lastPlanQueueFullLog = Date.distantPast
    private var latestMeters: MeterReading?
    /// Ports JACK reported unregistered that may still be in its graph for a moment.
    private var unregisteredPorts: Set<String> = []
    /// Peaks since the last `takePeaks()`.
    private var peaksSinceTaken: MeterReading?
    private var timer: DispatchSourceTimer?
    /// Reads the level watches every millisecond while any app is watched.
    private var levelTimer: DispatchSourceTimer?
    private var freeWatches: [Int32] = []
    private var nextWatch: Int32 = 0
    private let maxWatches: Int
    private var levelReadings: [Engine.LevelReading] = []
    private var stopped = false

    /// Opens the JACK client, registers and connects every port of the session, and starts mixing.
    /// - Parameter onServerLost: called (on the control queue) when the JACK server shuts the
    ///   client down. The router keeps its state, keeps answering, and joins the server again
    ///   when it is back (`onJackConnection` says when).
    public init(configuration: Configuration, logger: Logger = Logger(label: "duckrouter"),
                onServerLost: @escaping @Sendable (String) -> Void = { _ in }) throws(RouterError) {
        self.logger = logger
        self.onServerLost = onServerLost
        onNotification = configuration.onNotification
        onJackConnection = configuration.onJackConnection
        reconnectDelays = configuration.reconnectDelays
        onSave = configuration.onSave
        defaultChannelCount = configuration.defaultChannelCount
        maxInputChannels = configuration.engine.maxInputChannels
        maxOutputChannels = configuration.engine.maxOutputChannels
        maxWatches = configuration.engine.maxLevelWatches
        let session = configuration.session
        rampMilliseconds = configuration.rampMilliseconds ?? session.rampMilliseconds
        compiler = PlanCompiler(slotCapacity: configuration.engine.gainSlotCapacity)
        policy = try Router.makePolicy(session, fadeMilliseconds: rampMilliseconds)
        requestedClientName = configuration.clientName ?? session.client
        clientName = requestedClientName
        serverName = configuration.server
        resolvedServerName = configuration.server ?? JackClient.defaultServerName
        engine = Engine(configuration: configuration.engine, portBuffer: JackClient.portBuffer)
        sampleRate = 48000
        bufferSize = 128

        // The session's apps, routes and input, with their meter slots; JACK ports come next.
        do {
            inputSources = session.input.ports
            inputSlots = inputSources.map { _ in takeInputSlot() }
            for app in session.apps {
                try addApp(app.name, channelCount: app.channelCount, connect: app.connect)
                apps[apps.count - 1].exclusive = app.exclusive
                apps[apps.count - 1].unduckAfter = app.unduckAfter
            }
            for route in session.routes {
                routes.append(RouteState(name: route.name, channelCount: route.channelCount, ports: [],
                                         meterSlots: (1...route.channelCount).map { _ in takeOutputSlot() },
                                         destinations: route.ports, gain: policy.state.systemVolume(route.name) ?? 1,
                                         lookahead: route.lookahead))
            }
        } catch let error as RouterError {
            throw error
        } catch {
            throw .capacity("\(error)")
        }
        currentRoute = policy.state.currentRoute.flatMap { name in routes.firstIndex { $0.name == name } }
        // What the session alone makes audible (a signal-activated app listens from the start).
        let mix = policy.mix
        for index in apps.indices { apps[index].gain = mix[apps[index].name]?.gain ?? 0 }

        let opened: JackClient
        do {
            opened = try openClient()
        } catch {
            throw .jack(error)
        }
        try onQueue { () throws(RouterError) in
            updateWatches()
            try attach(opened, selectedRoute: session.selectedRoute)
            startHousekeeping(every: configuration.housekeepingInterval)
            for app in session.apps where app.startsActive {
                do throws(RouterError) {
                    _ = try performOnQueue([Change(.activate(app: app.name))])
                } catch {
                    logger.error("could not activate '\(app.name)' at start: \(error)")
                }
            }
        }
        logger.info("running", metadata: ["client": "\(clientName)", "server": "\(resolvedServerName)",
                                          "rate": "\(sampleRate)", "period": "\(bufferSize)",
                                          "apps": "\(apps.count)", "routes": "\(routes.count)"])
    }

    deinit { stop() }

    /// Stops the audio (deactivate) and closes the JACK client. Safe to call more than once.
    public func stop() {
        queue.sync { stopOnQueue() }
    }

    private func stopOnQueue() {
        guard !stopped else { return }
        if savePending, let onSave {
            savePending = false
            onSave(savedState())
        }
        stopped = true
        timer?.cancel()
        timer = nil
        levelTimer?.cancel()
        levelTimer = nil
        client?.deactivate()
        client?.close()
        client = nil
    }

    // MARK: - The JACK client, and losing it

    /// Opens a client on the server (never starting one). Its events reach the control queue
    /// tagged with the client's epoch, so those of a client closed since are dropped. Any thread.
    private func openClient() throws(JackError) -> JackClient {
        let forward = EventForwarder()
        let opened = try JackClient(name: requestedClientName, server: serverName,
                                    reportsLatency: routes.contains { $0.lookahead > 0 },
                                    events: { event in forward.send(event) })
        let source = ObjectIdentifier(opened)
        forward.target = { [weak self] event in
            guard let router = self else { return }
            router.queue.async { [weak router] in router?.handle(event, from: source) }
        }
        return opened
    }

    /// Puts the router on a newly opened client: registers every port (the session's and those of
    /// apps registered at run time), points the engine at them, publishes the mix before the first
    /// cycle, activates, and makes every route, input and patchbay connection. On the control
    /// queue. On failure the client is closed and nothing of it is kept.
    private func attach(_ opened: JackClient, selectedRoute: String? = nil) throws(RouterError) {
        client = opened
        epoch += 1
        clientName = opened.name
        resolvedServerName = opened.serverName
        unregisteredPorts = []
        do {
            try registerPorts(on: opened)
            engine.setFrameClock(JackClient.cycleStartFrame, argument: opened.rawHandle)
            sampleRate = opened.sampleRate
            bufferSize = opened.bufferSize
            engine.setProcessTimeWindow(cycles: UInt64(10 * sampleRate / max(bufferSize, 1)))
            try opened.setProcessCallback(engineProcessCallback, argument: engine.processArgument)
            // Routes whose device is not there (yet) start unavailable (DESIGN.md §2).
            updateRoutePresence()
            if let route = selectedRoute {
                if policy.state.availableRoutes.contains(route) {
                    _ = try? performOnQueue([Change(.selectRoute(route))])
                } else {
                    logger.notice("the route selected when the router last ran is not available now", metadata: ["route": "\(route)"])
                }
            }
            try publishPlan()
            guard !needsPublish else { throw RouterError.capacity("the audio thread's plan queue is full before activation") }
            try opened.activate()
        } catch {
            detach()
            opened.close()
            switch error {
            case let error as JackError: throw .jack(error)
            case let error as RouterError: throw error
            default: throw .capacity("\(error)")
            }
        }
        connectRoutes()
        connectInputs()
        for index in apps.indices { connectSources(ofApp: index) }
        updateLatencies(recompute: true)
    }

    /// Tells JACK (through the client's latency callback) that look-ahead routes carry some inputs
    /// (the voices) that many frames late, so latency-aware recorders know. Only with a look-ahead.
    /// Called whenever the router's ports change; a port leaves the plan before it is unregistered.
    ///
    /// JACK is asked to recompute only with `recompute` (a new client): a server round trip that
    /// calls every client, far too slow to make for every app that comes or goes (ports being
    /// connected make JACK recompute anyway).
    private func updateLatencies(leavingOut gone: Set<JackPort> = [], recompute: Bool = false) {
        guard let client, let lookahead = routes.first(where: { $0.lookahead > 0 })?.lookahead else { return }
        let added = UInt32(frames(milliseconds: lookahead))
        let inputs = (inputPorts + apps.flatMap(\.ports) + retiring.flatMap(\.ports)).filter { !gone.contains($0) }
        var outputs: [(port: JackPort, added: UInt32)] = routes.flatMap { route in route.ports.map { ($0, route.lookahead > 0 ? added : 0) } }
        outputs += (apps.flatMap(\.capturePorts) + retiring.flatMap(\.capturePorts)).filter { !gone.contains($0) }.map { ($0, 0) }
        client.setLatencies(inputs: inputs, outputs: outputs, recompute: recompute)
    }

    /// Forgets the client's ports (they died with it) and the engine's plans that point at them.
    /// Slots, gains, and the policy stay. Only when no process cycle can run.
    private func detach() {
        client = nil
        for index in apps.indices {
            apps[index].ports = []
            apps[index].capturePorts = []
        }
        for index in retiring.indices {
            retiring[index].ports = []
            retiring[index].capturePorts = []
        }
        for index in routes.indices { routes[index].ports = [] }
        inputPorts = []
        engine.detach(fadeInFrames: rampFrames)
    }

    /// The server shut the client down (jackd stopped or crashed). JACK's notification only flags
    /// it; here, on the control queue, the client is closed, the router keeps every setting and
    /// keeps answering, and tries to join the server again with backoff.
    private func serverLost(_ reason: String) {
        guard !stopped, let lost = client else { return }
        onJackConnection(false)
        logger.error("the JACK server went away: \(reason); keeping the state and waiting for it to come back",
                     metadata: ["server": "\(resolvedServerName)"])
        lost.close()
        detach()
        disconnectedSince = Date()
        lossReason = reason
        reconnectAttempt = 0
        // Bundles timed on the lost server's frame clock cannot be placed on the next one.
        let pending = scheduled
        scheduled = []
        for entry in pending {
            do throws(RouterError) { entry.completion(.success(try performOnQueue(entry.changes))) } catch { entry.completion(.failure(error)) }
        }
        onNotification(.jack(connected: false, reason: reason))
        onServerLost(reason)
        scheduleReconnect()
    }

    private func scheduleReconnect() {
        guard !stopped, client == nil, !reconnectScheduled else { return }
        reconnectScheduled = true
        let delay = min(reconnectDelays.first * pow(2, Double(min(reconnectAttempt, 16))), reconnectDelays.maximum)
        reconnectAttempt += 1
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self else { return }
            reconnectScheduled = false
            guard !stopped, client == nil else { return }
            // jack_client_open runs off the control queue: OSC keeps being answered meanwhile.
            connector.async { [weak self] in
                guard let self else { return }
                let outcome: Result<JackClient, JackError>
                do throws(JackError) { outcome = .success(try openClient()) } catch { outcome = .failure(error) }
                let handover = Handover(outcome)
                queue.async { [weak self] in self?.reconnected(handover.value) }
            }
        }
    }

    private func reconnected(_ outcome: Result<JackClient, JackError>) {
        guard !stopped, client == nil else {
            if case let .success(opened) = outcome { opened.close() }
            return
        }
        switch outcome {
        case let .failure(error):
            if reconnectAttempt == 1 || reconnectAttempt % 30 == 0 {
                logger.notice("JACK server still away: \(error)", metadata: ["attempts": "\(reconnectAttempt)"])
            }
            scheduleReconnect()
        case let .success(opened):
            do throws(RouterError) {
                try attach(opened)
            } catch {
                logger.error("joined the JACK server again but could not start on it: \(error); trying again")
                scheduleReconnect()
                return
            }
            let away = disconnectedSince.map { Date().timeIntervalSince($0) } ?? 0
            disconnectedSince = nil
            reconnects += 1
            logger.notice("running again on the JACK server", metadata: [
                "server": "\(resolvedServerName)", "away": "\(String(format: "%.1f", away)) s",
                "rate": "\(sampleRate)", "period": "\(bufferSize)", "apps": "\(apps.count)"])
            onNotification(.jack(connected: true, reason: "reconnected after \(String(format: "%.1f", away)) s"))
            onJackConnection(true)
        }
    }

    // MARK: - Setup

    /// The policy as the session file sets it up: routes with their volumes, ducking, and every
    /// app registered (inactive) with its volume.
    private static func makePolicy(_ session: Session, fadeMilliseconds: Double) throws(RouterError) -> PolicyEngine {
        let routes = session.routes.map { route in
            (name: route.name, volume: Decibels.linear(sliderPosition: Float(session.volumes.routes[route.name] ?? 1)))
        }
        var policy = PolicyEngine(routes: routes, ducking: session.ducking, fadeMilliseconds: fadeMilliseconds,
                                  silentSwitch: session.silentSwitch,
                                  fallback: (session.routes.first { $0.isBuiltIn } ?? session.routes.first)?.name,
                                  privateRoutes: Set(session.routes.filter(\.isPrivate).map(\.name)))
        do throws(PolicyError) {
            for app in session.apps {
                try policy.apply(.register(app.configuration))
                if let volume = session.volumes.apps[app.name] { try policy.apply(.setAppVolume(app: app.name, .position(volume))) }
                if let map = app.channelMap { try policy.apply(.setChannelMap(app: app.name, map)) }
                try policy.apply(.setActivation(app: app.name, app.activation, app.signal))
            }
        } catch {
            throw .policy(error)
        }
        return policy
    }

    private func takeInputSlot() -> Int32 {
        if let slot = freeInputSlots.popLast() { return slot }
        nextInputSlot += 1
        return nextInputSlot - 1
    }

    private func takeOutputSlot() -> Int32 {
        if let slot = freeOutputSlots.popLast() { return slot }
        nextOutputSlot += 1
        return nextOutputSlot - 1
    }

    /// Registers every port the router has on a new client: the input route, each app's inputs
    /// (and capture outputs for recording apps), each route's outputs. Meter slots stay as they were.
    private func registerPorts(on client: JackClient) throws {
        inputPorts = try inputSources.indices.map { n in try client.registerAudioPort("input_\(n + 1)", direction: .input) }
        setPrettyNames(inputPorts, "input")
        for index in apps.indices {
            try registerAppPorts(index)
        }
        for index in routes.indices {
            routes[index].ports = try (1...routes[index].channelCount).map { n in
                try client.registerAudioPort("\(routes[index].name)_out_\(n)", direction: .output)
            }
            setPrettyNames(routes[index].ports, routes[index].name)
        }
    }

    /// Registers an app's `<app>_in_<n>` ports (and its capture outputs when it records) on the
    /// current client, when it has none yet. Nothing when the server is away.
    /// `reusing`: ports of channels taken back from a retiring app of that name (nil: register).
    private func registerAppPorts(_ index: Int, reusing: [JackPort?] = []) throws {
        guard let client, apps[index].ports.isEmpty else { return }
        let name = apps[index].name
        var ports: [JackPort] = []
        var registered: [JackPort] = []
        do {
            for n in 1...apps[index].channelCount {
                if n <= reusing.count, let port = reusing[n - 1] {
                    ports.append(port)
                } else {
                    let port = try client.registerAudioPort("\(name)_in_\(n)", direction: .input)
                    registered.append(port)
                    ports.append(port)
                }
            }
        } catch {
            for port in registered { client.unregister(port) }
            throw error
        }
        setPrettyNames(ports, name)
        apps[index].ports = ports
        if !apps[index].captureSlots.isEmpty || policy.state.app(name)?.configuration.category.recordsInput == true {
            try addCapturePorts(toApp: index)
        }
    }

    /// Adds an app with its meter slots and, while the server is there, its input ports
    /// `<app>_in_1…`. It starts silent: the policy opens it when it is activated.
    ///
    /// An app removed moments ago still owns its port names and slots while it fades: a new app of
    /// that name takes them back, channel for channel (JACK would refuse the names otherwise). Its
    /// channels beyond the new count go on retiring; channels beyond the old count are new.
    private func addApp(_ name: String, channelCount: Int, connect: [PortPattern]) throws {
        let reclaimed = retiring.indices.filter { retiring[$0].name == name }
        var ports: [JackPort?] = []
        var slots: [Int32] = []
        var capturePorts: [JackPort] = []
        var captureSlots: [Int32] = []
        var surplus = RetiringApp(name: name, firstChannel: channelCount, ports: [], meterSlots: [])
        if !reclaimed.isEmpty {
            // Their channels together are 0..<n (a removed app, and what it once dropped).
            // A piece retired before the server went away has no ports left (their names are free).
            // Pieces of one name are all with ports or all without: a registration while the
            // server is away, or after it is back, takes every piece of its name.
            let pieces = reclaimed.map { retiring[$0] }.sorted { $0.firstChannel < $1.firstChannel }
            for piece in pieces {
                for (k, slot) in piece.meterSlots.enumerated() {
                    let port = k < piece.ports.count ? piece.ports[k] : nil
                    if piece.firstChannel + k < channelCount {
                        slots.append(slot)
                        ports.append(port)
                    } else {
                        surplus.meterSlots.append(slot)
                        if let port { surplus.ports.append(port) }
                    }
                }
                if piece.firstChannel == 0 {
                    capturePorts = piece.capturePorts
                    captureSlots = piece.captureSlots
                }
            }
        }
        let used = apps.reduce(0) { $0 + $1.channelCount } + retiring.reduce(0) { $0 + $1.meterSlots.count } + inputSlots.count
        let needed = channelCount - slots.count
        guard used + needed <= maxInputChannels else {
            throw RouterError.capacity("'\(name)' needs \(needed) more input channels; the engine has \(maxInputChannels - used) left")
        }
        let fresh = (0..<needed).map { _ in takeInputSlot() }
        let before = retiring
        retiring = retiring.enumerated().filter { !reclaimed.contains($0.offset) }.map(\.element)
        if !surplus.meterSlots.isEmpty { retiring.append(surplus) }
        apps.append(AppState(name: name, channelCount: channelCount, ports: [], meterSlots: slots + fresh,
                             connect: connect, gain: 0, capturePorts: capturePorts, captureSlots: captureSlots))
        do {
            try registerAppPorts(apps.count - 1, reusing: ports)
        } catch {
            apps.removeLast()
            retiring = before
            freeInputSlots.append(contentsOf: fresh)
            throw error
        }
    }

    /// What patchbays show for channel `n` (from 1) of `count`: "music L"/"music R" for a pair,
    /// "nav" for one channel, "surround 3" otherwise.
    static func prettyName(_ base: String, channel n: Int, of count: Int) -> String {
        switch count {
        case 1: base
        case 2: "\(base) \(n == 1 ? "L" : "R")"
        default: "\(base) \(n)"
        }
    }

    private func setPrettyNames(_ ports: [JackPort], _ base: String) {
        for (k, port) in ports.enumerated() { client?.setPrettyName(port, Self.prettyName(base, channel: k + 1, of: ports.count)) }
    }

    /// Gives a recording app its capture outputs `<app>_capture_<n>`, one per input channel (none
    /// when the session has no input), keeping the slots it had before a reconnect. Kept until the
    /// app is removed. Nothing while the server is away (they come with the app's other ports).
    private func addCapturePorts(toApp index: Int) throws {
        guard let client, !inputSources.isEmpty, apps[index].capturePorts.isEmpty else { return }
        let reuse = apps[index].captureSlots.count == inputSources.count
        let used = Int(nextOutputSlot) - freeOutputSlots.count
        guard reuse || used + inputSources.count <= maxOutputChannels else {
            throw RouterError.capacity("'\(apps[index].name)' needs \(inputSources.count) capture outputs; the engine has \(maxOutputChannels - used) left")
        }
        var ports: [JackPort] = []
        do {
            for n in 1...inputSources.count {
                ports.append(try client.registerAudioPort("\(apps[index].name)_capture_\(n)", direction: .output))
            }
        } catch {
            for port in ports { client.unregister(port) }
            throw error
        }
        setPrettyNames(ports, "\(apps[index].name) capture")
        apps[index].capturePorts = ports
        if !reuse { apps[index].captureSlots = ports.map { _ in takeOutputSlot() } }
    }

    private func addCapturePortsLogging(_ name: String) {
        guard let index = apps.firstIndex(where: { $0.name == name }) else { return }
        do {
            try addCapturePorts(toApp: index)
        } catch {
            logger.error("'\(name)' gets no capture ports: \(error)")
        }
    }

    /// Connects the session's input ports to the input route's ports, where they exist.
    private func connectInputs(onlyPort newPort: String? = nil) {
        guard let client, inputPorts.count == inputSources.count else { return }
        for (k, source) in inputSources.enumerated() where newPort == nil || newPort == source {
            guard client.portExists(source) else {
                logger.warning("input port is missing; will connect when it appears", metadata: ["port": "\(source)"])
                continue
            }
            do {
                try client.connect(source, to: inputPorts[k].name)
            } catch {
                logger.error("\(error)", metadata: ["input": "\(source)"])
            }
        }
    }

    /// Connects each route channel to its destination port, where that port exists.
    private func connectRoutes(onlyPort newPort: String? = nil) {
        guard let client else { return }
        for route in routes where route.ports.count == route.channelCount {
            for (k, destination) in route.destinations.enumerated() where newPort == nil || newPort == destination {
                guard client.portExists(destination) else {
                    logger.warning("route destination is missing; will connect when it appears",
                                   metadata: ["route": "\(route.name)", "port": "\(destination)"])
                    continue
                }
                do {
                    try client.connect(route.ports[k].name, to: destination)
                } catch {
                    logger.error("\(error)", metadata: ["route": "\(route.name)"])
                }
            }
        }
    }

    /// Connects the ports an app's `connect` patterns match to the app's inputs.
    private func connectSources(ofApp index: Int) {
        let app = apps[index]
        guard let client, !app.connect.isEmpty, !app.ports.isEmpty else { return }
        let own = client.name + ":"
        let candidates = client.ports(direction: .output).filter { !$0.hasPrefix(own) }
        var sources: [String] = []
        for pattern in app.connect {
            for port in candidates where pattern.matches(port) && !sources.contains(port) { sources.append(port) }
        }
        let assignments = ChannelMap.sourceAssignments(sources: sources, channels: app.ports.count)
        for (source, channel) in assignments {
            do {
                try client.connect(source, to: app.ports[channel].name)
            } catch {
                logger.error("\(error)", metadata: ["app": "\(app.name)"])
            }
        }
        // Never removes a connection a person made, unless the app is exclusive.
        guard app.exclusive else { return }
        for (channel, port) in app.ports.enumerated() {
            for source in client.connections(of: port.name)
            where !assignments.contains(where: { $0.source == source && $0.channel == channel }) {
                do {
                    try client.disconnect(source, from: port.name)
                    logger.notice("removed a connection to an exclusive app", metadata: ["app": "\(app.name)", "source": "\(source)"])
                } catch {
                    logger.error("\(error)", metadata: ["app": "\(app.name)"])
                }
            }
        }
    }

    // MARK: - Events (control queue)

    private func handle(_ event: JackEvent, from source: ObjectIdentifier) {
        // Events of a client closed since (the server went away) are stale.
        guard !stopped, let client, ObjectIdentifier(client) == source else { return }
        switch event {
        case let .portRegistered(name):
            if name.hasPrefix(client.name + ":") { return }
            unregisteredPorts.remove(name)
            // Connected first, so audio moved to a route that just appeared is heard at once.
            if routes.contains(where: { $0.destinations.contains(name) }) { connectRoutes(onlyPort: name) }
            updateRoutePresence(port: name)
            if inputSources.contains(name) { connectInputs(onlyPort: name) }
            for index in apps.indices where apps[index].connect.contains(where: { $0.matches(name) }) {
                connectSources(ofApp: index)
            }
        case let .portUnregistered(name):
            if name.hasPrefix(client.name + ":") { return }
            // JACK says so before the port has left the graph (jack_port_by_name still finds it),
            // so the name is remembered as gone until it registers again. When JACK could not
            // name it, every route is checked again a little later.
            if name.isEmpty {
                queue.asyncAfter(deadline: .now() + .milliseconds(50)) { [weak self] in
                    guard let self, !stopped, self.client != nil else { return }
                    updateRoutePresence()
                }
            } else {
                unregisteredPorts.insert(name)
            }
            updateRoutePresence()
        case let .bufferSizeChanged(frames):
            guard frames != bufferSize else { return }
            logger.info("JACK period changed", metadata: ["from": "\(bufferSize)", "to": "\(frames)"])
            bufferSize = frames
            engine.setProcessTimeWindow(cycles: UInt64(10 * sampleRate / max(bufferSize, 1)))
            republish()
        case let .sampleRateChanged(rate):
            guard rate != sampleRate else { return }
            logger.info("JACK sample rate changed", metadata: ["from": "\(sampleRate)", "to": "\(rate)"])
            sampleRate = rate
            republish()
        case .xrun:
            xruns += 1
        case let .shutdown(reason):
            serverLost(reason)
        case let .portsConnected(_, destination):
            // Someone connected to an exclusive app: only its own sources stay.
            for index in apps.indices where apps[index].exclusive && apps[index].ports.contains(where: { $0.name == destination }) {
                connectSources(ofApp: index)
            }
        case .portsDisconnected:
            break
        }
    }

    /// Follows the JACK graph: a route is present while all its destination ports exist. When
    /// that changes (a device's ports appeared or vanished) the policy hears that the route became
    /// available or unavailable (DESIGN.md §5.9): last in wins, private routes stop what played
    /// through them. `port`: only routes with that destination; nil: every route.
    private func updateRoutePresence(port: String? = nil) {
        // While the server is away nothing is known of the graph: routes stay as they were.
        guard let client else { return }
        // Names JACK announced as gone that have left the graph by now need no remembering.
        unregisteredPorts = unregisteredPorts.filter { client.portExists($0) }
        for index in routes.indices where port.map(routes[index].destinations.contains) ?? true {
            let present = routes[index].destinations.allSatisfy { !unregisteredPorts.contains($0) && client.portExists($0) }
            routes[index].present = present
            let name = routes[index].name
            let available = present && routes[index].enabled
            guard available != policy.state.availableRoutes.contains(name) else { continue }
            logger.info(present ? "a route's device is there" : "a route's device is missing", metadata: ["route": "\(name)"])
            do throws(RouterError) {
                _ = try performOnQueue([Change(.setRouteAvailable(route: name, available))], fromGraph: true)
            } catch {
                logger.error("could not update the availability of route '\(name)': \(error)")
            }
        }
    }

    private func startHousekeeping(every interval: DispatchTimeInterval) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [weak self] in self?.housekeeping() }
        timer.resume()
        self.timer = timer
    }

    private func housekeeping() {
        guard !stopped else { return }
        engine.collectProcessTimes()
        notifyXruns()
        guard client != nil else { return }
        engine.collectRetiredPlans()
        if let reading = engine.collectMeters() {
            latestMeters = reading
            if peaksSinceTaken == nil { peaksSinceTaken = reading } else { peaksSinceTaken!.merge(reading) }
        }
        runDueSchedules()
        let due = nextDrop.map { engine.statistics.processedFrames >= $0 } ?? false
        if needsPublish || due { republish() }
        removeRetiredPorts()
    }

    // MARK: - Signal activation (docs/POLICY.md)

    /// Gives every app that is activated by its sound, or has `unduckAfter`, a level watch (and
    /// frees those no longer needed), and runs the level timer while any exists.
    private func updateWatches() {
        var changed = false
        let sessions = Dictionary(policy.state.apps.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for index in apps.indices {
            let session = sessions[apps[index].name]
            let wanted = session?.configuration.activation == .signal || apps[index].unduckAfter != nil
            if let signal = session?.signal, apps[index].detector != nil, apps[index].detector?.settings != signal {
                apps[index].detector?.settings = signal
            }
            if wanted, apps[index].watch == nil {
                let watch = freeWatches.popLast() ?? (nextWatch < Int32(maxWatches) ? nextWatch : -1)
                guard watch >= 0 else {
                    logger.error("no level watch left for '\(apps[index].name)' (the engine has \(maxWatches)); it is not watched")
                    continue
                }
                if watch == nextWatch { nextWatch += 1 }
                apps[index].watch = watch
                apps[index].detector = SignalDetector(settings: session?.signal ?? SignalDetection())
                changed = true
            } else if !wanted, let watch = apps[index].watch {
                freeWatches.append(watch)
                apps[index].watch = nil
                apps[index].detector = nil
                changed = true
            }
        }
        if changed { needsPublish = true }
        let watching = apps.contains { $0.watch != nil }
        if watching && levelTimer == nil {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + .milliseconds(1), repeating: .milliseconds(1), leeway: .microseconds(200))
            timer.setEventHandler { [weak self] in self?.watchLevels() }
            timer.resume()
            levelTimer = timer
        } else if !watching, let timer = levelTimer {
            timer.cancel()
            levelTimer = nil
        }
    }

    /// Feeds each watched app's per-cycle peaks to its detector, then brings the policy in line:
    /// a signal-activated app is activated when its sound turns the detector on and deactivated
    /// when it has been silent for the hold time; an active ducking app with `unduckAfter`
    /// releases its duck after that much silence and takes it back when it sounds again.
    private func watchLevels() {
        guard !stopped, client != nil else { return }
        engine.collectLevels(into: &levelReadings)
        guard !levelReadings.isEmpty else { return }
        var owners: [Int32: Int] = [:]
        for index in apps.indices { if let watch = apps[index].watch { owners[watch] = index } }
        var rose = Set<Int>()
        for reading in levelReadings {
            guard let index = owners[Int32(reading.watch)] else { continue }
            if apps[index].detector?.feed(peak: reading.peak, frames: reading.frames, sampleRate: sampleRate) == true {
                rose.insert(index)
            }
        }
        var changed = false
        for index in apps.indices {
            guard let detector = apps[index].detector, let session = policy.state.app(apps[index].name) else { continue }
            let name = apps[index].name
            if session.configuration.activation == .signal {
                if detector.on && !session.isActive {
                    let now = Date()
                    if rose.contains(index) || now.timeIntervalSince(apps[index].lastSignalAttempt) >= 0.25 {
                        apps[index].lastSignalAttempt = now
                        do throws(RouterError) {
                            _ = try performOnQueue([Change(.signal(app: name, active: true))])
                            changed = true
                            apps[index].refusalLogged = false
                        } catch {
                            if !apps[index].refusalLogged {
                                logger.notice("'\(name)' sounds but cannot be activated: \(error)")
                                apps[index].refusalLogged = true
                            }
                        }
                    }
                } else if !detector.on && session.isActive && session.activatedBy != .osc && detector.heldSilent(sampleRate: sampleRate) {
                    _ = try? performOnQueue([Change(.signal(app: name, active: false))])
                    changed = true
                }
            }
            guard let unduckAfter = apps[index].unduckAfter, let current = policy.state.app(name),
                  current.isActive, current.configuration.ducksOthers else { continue }
            if !current.duckReleased && detector.silentMilliseconds(sampleRate: sampleRate) >= unduckAfter {
                logger.notice("'\(name)' has been silent for \(Int(unduckAfter)) ms: its duck is released")
                _ = try? performOnQueue([Change(.releaseDuck(app: name, true))])
                changed = true
            } else if current.duckReleased && detector.loudFrames > 0 {
                _ = try? performOnQueue([Change(.releaseDuck(app: name, false))])
                changed = true
            }
        }
        // Talkover must not wait for the end of an OSC burst or the next housekeeping tick.
        if changed && needsPublish { republish() }
    }

    /// Tells subscribers about xruns, at most once a second however many come.
    private func notifyXruns() {
        guard xruns > xrunsNotified, Date().timeIntervalSince(lastXrunNotification) >= 1 else { return }
        let new = xruns - xrunsNotified
        xrunsNotified = xruns
        lastXrunNotification = Date()
        logger.notice("JACK xruns", metadata: ["new": "\(new)", "total": "\(xruns)"])
        onNotification(.xruns(total: xruns, new: new))
    }

    /// Unregisters the ports of removed apps once no plan the audio thread may use reads them.
    private func removeRetiredPorts() {
        guard let client, !retiring.isEmpty, !needsPublish else { return }
        for index in retiring.indices where retiring[index].clearedInPlan == nil {
            if !retiring[index].meterSlots.contains(where: compiler.hasCells(input:))
                && !retiring[index].captureSlots.contains(where: compiler.hasCells(output:)) {
                retiring[index].clearedInPlan = publishedGeneration
            }
        }
        let adopted = engine.adoptedPlanGeneration
        let done = retiring.filter { app in app.clearedInPlan.map { adopted >= $0 } ?? false }
        guard !done.isEmpty else { return }
        retiring.removeAll { app in app.clearedInPlan.map { adopted >= $0 } ?? false }
        let gone = done.flatMap { $0.ports + $0.capturePorts }
        updateLatencies(leavingOut: Set(gone))
        for app in done {
            for port in app.ports + app.capturePorts { client.unregister(port) }
            freeInputSlots.append(contentsOf: app.meterSlots)
            freeOutputSlots.append(contentsOf: app.captureSlots)
        }
    }

    /// Publishes a new plan, logging (not throwing) failures: used where no caller waits.
    private func republish(startFrame: UInt32? = nil) {
        do {
            try publishPlan(startFrame: startFrame)
        } catch {
            logger.error("could not update the mix: \(error)")
        }
    }

    // MARK: - Plans

    private var rampFrames: Int32 { frames(milliseconds: rampMilliseconds) }

    private func frames(milliseconds: Double) -> Int32 {
        Int32(max(1, min((milliseconds * Double(sampleRate) / 1000).rounded(), Double(Int32.max / 2))))
    }

    /// Compiles the current state into a plan and queues it. When the queue is full the state is
    /// kept and the housekeeping timer publishes it (coalesced with any later change).
    private func publishPlan(startFrame: UInt32? = nil) throws(RouterError) {
        // While the server is away the state only changes; the plan goes out with the new ports.
        guard client != nil else {
            needsPublish = true
            return
        }
        let sessions = Dictionary(policy.state.apps.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let inputs = apps.flatMap { app in
            // Look-ahead routes hear the voices late (the signal-activated apps, whose sound
            // triggers ducks), everything else at once.
            let delayed = sessions[app.name]?.configuration.activation == .signal
            return zip(app.ports, app.meterSlots).map {
                PlanCompiler.Input(port: $0.handle, key: $1, watch: app.watch ?? -1, delayed: delayed)
            }
        } + zip(inputPorts, inputSlots).map { PlanCompiler.Input(port: $0.handle, key: $1) }
        var outputs: [PlanCompiler.Output] = []
        // Every app plays to the current route; a route change crossfades at the fade ramp.
        // multiRoute apps play to every available route at once, through their channel map.
        // A cell moves at the ramp of whatever changed: the app's (ducking has its own attack and
        // release), else the route's, else the default.
        let available = Set(policy.state.availableRoutes)
        for (r, route) in routes.enumerated() {
            let defaultMaps = Dictionary(Set(apps.map(\.ports.count)).map {
                ($0, ChannelMap.feeds(appChannels: $0, routeChannels: route.ports.count))
            }, uniquingKeysWith: { a, _ in a })
            for (k, port) in route.ports.enumerated() {
                var feeds: [(input: Int32, gain: Float, rampFrames: Int32)] = []
                for app in apps {
                    let session = sessions[app.name]
                    let channels: [Int]
                    if session?.configuration.category == .multiRoute {
                        guard available.contains(route.name) else { continue }
                        if let links = session?.channelMap {
                            channels = links.filter { $0.route == route.name && $0.routeChannel == k + 1 }
                                .map { $0.appChannel - 1 }.filter { $0 < app.ports.count }
                        } else {
                            channels = defaultMaps[app.ports.count]![k]
                        }
                    } else {
                        guard r == currentRoute else { continue }
                        channels = defaultMaps[app.ports.count]![k]
                    }
                    let ramp = app.pendingRamp ?? route.pendingRamp ?? rampFrames
                    for c in channels { feeds.append((app.meterSlots[c], app.gain * route.gain, ramp)) }
                }
                outputs.append(.init(port: port.handle, key: route.meterSlots[k], feeds: feeds))
            }
        }
        // Recording apps hear the input route, channel for channel, only while they may (§5.8).
        for app in apps where !app.capturePorts.isEmpty {
            let open = sessions[app.name]?.receivesInput == true
            for (k, port) in app.capturePorts.enumerated() {
                let feeds: [(input: Int32, gain: Float, rampFrames: Int32)] = open ? [(inputSlots[k], Float(1), rampFrames)] : []
                outputs.append(.init(port: port.handle, key: app.captureSlots[k], feeds: feeds))
            }
        }
        var result: PlanCompiler.Result
        do {
            result = try compiler.compile(inputs: inputs, outputs: outputs, rampFrames: rampFrames,
                                          now: engine.statistics.processedFrames,
                                          settleFrames: UInt64(2 * max(bufferSize, 1) + rampFramesMargin))
            result.plan.startFrame = startFrame
            // Look-ahead routes hear the voices as they were that long ago; gains apply at once.
            if let lookahead = routes.first(where: { $0.lookahead > 0 })?.lookahead {
                result.plan.lookaheadFrames = Int(frames(milliseconds: lookahead))
                let delayed = Set(routes.filter { $0.lookahead > 0 }.flatMap(\.meterSlots))
                for k in result.plan.outputs.indices where delayed.contains(result.plan.outputs[k].meterSlot) {
                    result.plan.outputs[k].delayed = true
                }
            }
        } catch {
            throw .capacity(error.description)
        }
        nextDrop = result.nextDrop
        cellCount = result.cellCount
        do {
            if let generation = try engine.publish(result.plan) {
                publishedGeneration = generation
                needsPublish = false
                for index in apps.indices { apps[index].pendingRamp = nil }
                for index in routes.indices { routes[index].pendingRamp = nil }
            } else {
                // Nothing is dropped: the state waits here, later changes join it, and housekeeping
                // publishes it as soon as the audio thread has taken a plan.
                needsPublish = true
                planQueueFull += 1
                if startFrame != nil {
                    logger.warning("the audio thread's plan queue is full: a scheduled change will apply late")
                } else if Date().timeIntervalSince(lastPlanQueueFullLog) >= 10 {
                    lastPlanQueueFullLog = Date()
                    logger.warning("the audio thread's plan queue is full: changes wait and are coalesced into the next plan",
                                   metadata: ["times": "\(planQueueFull)"])
                }
            }
        } catch {
            throw .capacity(error.description)
        }
    }

    /// Slack for the control thread's own scheduling delay when deciding a fade has finished.
    private var rampFramesMargin: Int { sampleRate / 10 }

    // MARK: - Control API

    /// Applies a policy event (DESIGN.md §5): the Swift API the OSC layer calls. Returns the
    /// effects in order (notifications among them, also sent to `onNotification`). A refused
    /// event throws `RouterError.policy` and changes nothing.
    @discardableResult
    public func perform(_ event: PolicyEvent) throws(RouterError) -> [PolicyEffect] {
        try onQueue { () throws(RouterError) in try performOnQueue([Change(event)]) }
    }

    /// One change of a batch: a policy event, and for a registration the app's channel count.
    public struct Change: Sendable, Equatable {
        public var event: PolicyEvent
        /// Channels of an app this change registers (nil: the default, 2).
        public var channelCount: Int?
        public init(_ event: PolicyEvent, channelCount: Int? = nil) {
            self.event = event
            self.channelCount = channelCount
        }
    }

    /// Applies changes together (an OSC bundle): all of them or none, heard in one plan. When one
    /// is refused, throws `.batch` naming it, and nothing changes.
    @discardableResult
    public func perform(_ changes: [Change]) throws(RouterError) -> [PolicyEffect] {
        try onQueue { () throws(RouterError) in try performOnQueue(changes) }
    }

    /// Applies changes together at a moment on the wall clock (an OSC timetag, Unix seconds): the
    /// plan takes over at the JACK frame of that moment, sample-accurately. The changes are checked
    /// now against the current state (a refusal throws); `completion` gets the outcome when they
    /// apply. Moments in the past, or more than `schedulingHorizon` seconds ahead, apply at once.
    public func perform(_ changes: [Change], atUnixTime time: Double,
                        completion: @escaping @Sendable (Result<[PolicyEffect], RouterError>) -> Void) throws(RouterError) {
        try onQueue { () throws(RouterError) in
            guard !stopped else { throw .stopped }
            let delay = time - Date().timeIntervalSince1970
            guard let client, delay.isFinite, delay > 0, delay <= Router.schedulingHorizon else {
                logger.notice("bundle timetag is \(delay > 0 ? "more than \(Int(Router.schedulingHorizon)) s ahead" : "in the past") (\(String(format: "%+.3f", delay)) s); applying it now")
                completion(.success(try performOnQueue(changes)))
                return
            }
            var trial = policy
            for (index, change) in changes.enumerated() {
                do throws(PolicyError) { _ = try trial.apply(change.event) } catch {
                    throw changes.count == 1 ? .policy(error) : .batch(index: index, error)
                }
            }
            let frame = client.frameTime(atMicroseconds: client.microseconds &+ UInt64(delay * 1_000_000))
            let entry = ScheduledChanges(changes: changes, frame: frame, completion: completion)
            let position = scheduled.firstIndex { Int32(bitPattern: $0.frame &- frame) > 0 } ?? scheduled.count
            scheduled.insert(entry, at: position)
        }
    }

    /// How far ahead a timetag may schedule changes, in seconds.
    public static let schedulingHorizon = 60.0

    /// The JACK frame a moment on the wall clock (Unix seconds) falls on, for tests and tools.
    public func frameTime(atUnixTime time: Double) -> UInt32 {
        queue.sync {
            let delay = time - Date().timeIntervalSince1970
            guard let client else { return 0 }
            return client.frameTime(atMicroseconds: UInt64(max(0, Double(client.microseconds) + delay * 1_000_000)))
        }
    }

    /// Applies the scheduled changes due within the next few periods, each in a plan that starts
    /// at its frame. The lead covers the housekeeping interval and the hand-over to the audio thread.
    private func runDueSchedules() {
        guard let client, !scheduled.isEmpty else { return }
        let now = client.frameTime
        let lead = Int32(3 * bufferSize + sampleRate / 25)
        while let first = scheduled.first, Int32(bitPattern: first.frame &- now) <= lead {
            scheduled.removeFirst()
            let late = Int32(bitPattern: first.frame &- now) <= 0
            do throws(RouterError) {
                first.completion(.success(try performOnQueue(first.changes, startFrame: late ? nil : first.frame)))
            } catch {
                logger.error("a scheduled change was refused when it came due: \(error)")
                first.completion(.failure(error))
            }
        }
    }

    /// Registers an app at run time (or reconfigures it) with its own input ports.
    @discardableResult
    public func register(_ configuration: AppConfiguration, channelCount: Int? = nil,
                         connect: [PortPattern] = []) throws(RouterError) -> [PolicyEffect] {
        let channels = channelCount ?? defaultChannelCount
        guard (1...Session.maximumChannels).contains(channels) else {
            throw .policy(PolicyError(.badArgument, "channel count: expected 1 to \(Session.maximumChannels), got \(channels)"))
        }
        return try onQueue { () throws(RouterError) in
            try performOnQueue([Change(.register(configuration), channelCount: channels)], connect: connect)
        }
    }

    /// Applies the edits between two versions of the session file while running (SIGHUP):
    /// apps added, removed or reconfigured (category, options, mode, remote commands, resume,
    /// channel map, `connect`, `exclusive`), ducking settings and rules, and volumes the file
    /// changed. Run-time changes to anything the file did not change stay. What cannot change
    /// without re-registering the client (its name, routes, the input, ramp, an app's channel
    /// count) is left for a restart and said in the returned notes, as is any edit refused.
    public func reload(from old: Session, to new: Session) -> [String] {
        queue.sync {
            guard !stopped else { return ["the router has stopped"] }
            var notes: [String] = []
            if old.client != new.client { notes.append("client name changed: restart to apply") }
            if old.routes != new.routes { notes.append("routes changed: restart to apply") }
            if old.input != new.input { notes.append("input changed: restart to apply") }
            if old.rampMilliseconds != new.rampMilliseconds { notes.append("ramp changed: restart to apply") }
            func apply(_ events: [PolicyEvent], _ what: String) {
                for event in events {
                    do throws(RouterError) { _ = try performOnQueue([Change(event)]) } catch { notes.append("\(what): \(error)") }
                }
            }
            // Ducking.
            var ducking: [PolicyEvent] = []
            if old.ducking.level != new.ducking.level { ducking.append(.setDucking(.level(new.ducking.level))) }
            if old.ducking.attack != new.ducking.attack { ducking.append(.setDucking(.attack(new.ducking.attack))) }
            if old.ducking.release != new.ducking.release { ducking.append(.setDucking(.release(new.ducking.release))) }
            if old.ducking.rules != new.ducking.rules { ducking.append(.setDuckingRules(new.ducking.rules)) }
            apply(ducking, "ducking")
            // Apps the file no longer has.
            for app in old.apps where !new.apps.contains(where: { $0.name == app.name }) {
                apply([.unregister(app: app.name)], "removing '\(app.name)'")
            }
            for app in new.apps {
                guard let before = old.apps.first(where: { $0.name == app.name }) else {
                    // A new app: ports, patchbay rules, map, volume, and activation as declared.
                    do throws(RouterError) {
                        _ = try performOnQueue([Change(.register(app.configuration), channelCount: app.channelCount)], connect: app.connect)
                        if let index = apps.firstIndex(where: { $0.name == app.name }) {
                            apps[index].exclusive = app.exclusive
                            apps[index].unduckAfter = app.unduckAfter
                            if app.exclusive { connectSources(ofApp: index) }
                        }
                    } catch {
                        notes.append("adding '\(app.name)': \(error)")
                        continue
                    }
                    var events: [PolicyEvent] = [.setActivation(app: app.name, app.activation, app.signal)]
                    if let map = app.channelMap { events.append(.setChannelMap(app: app.name, map)) }
                    if let volume = new.volumes.apps[app.name] { events.append(.setAppVolume(app: app.name, .position(volume))) }
                    if app.startsActive { events.append(.activate(app: app.name)) }
                    apply(events, "'\(app.name)'")
                    continue
                }
                if before.channelCount != app.channelCount { notes.append("'\(app.name)' channel count changed: restart to apply") }
                var events: [PolicyEvent] = []
                if before.configuration != app.configuration { events.append(.register(app.configuration)) }
                if before.channelMap != app.channelMap { events.append(.setChannelMap(app: app.name, app.channelMap)) }
                if before.activation != app.activation || before.signal != app.signal {
                    events.append(.setActivation(app: app.name, app.activation, app.signal))
                }
                if before.unduckAfter != app.unduckAfter, let index = apps.firstIndex(where: { $0.name == app.name }) {
                    apps[index].unduckAfter = app.unduckAfter
                    updateWatches()
                }
                if old.volumes.apps[app.name] != new.volumes.apps[app.name], let volume = new.volumes.apps[app.name] {
                    events.append(.setAppVolume(app: app.name, .position(volume)))
                }
                apply(events, "'\(app.name)'")
                if before.connect != app.connect || before.exclusive != app.exclusive,
                   let index = apps.firstIndex(where: { $0.name == app.name }) {
                    apps[index].connect = app.connect
                    apps[index].exclusive = app.exclusive
                    connectSources(ofApp: index)
                }
            }
            // Route volumes the file changed.
            for (route, volume) in new.volumes.routes.sorted(by: { $0.key < $1.key }) where old.volumes.routes[route] != volume {
                apply([.setSystemVolume(route: route, .position(volume))], "volume of '\(route)'")
            }
            return notes
        }
    }

    /// Sets an app's relative volume from a slider position 0...1 (cubic taper).
    public func setAppVolume(_ app: String, position: Double) throws(RouterError) {
        try perform(.setAppVolume(app: app, .position(position)))
    }

    /// Sets an app's relative volume in dB (-144 or less is silence, at most +24).
    public func setAppGain(_ app: String, decibels: Double) throws(RouterError) {
        try perform(.setAppVolume(app: app, .decibels(decibels)))
    }

    /// Sets a route's system volume from a slider position 0...1 (cubic taper).
    public func setRouteVolume(_ route: String, position: Double) throws(RouterError) {
        try perform(.setSystemVolume(route: route, .position(position)))
    }

    /// The policy's state: apps' sessions, silent switch, volumes, interruptions, ducking.
    public var policyState: PolicyState { queue.sync { policy.state } }

    private func performOnQueue(_ changes: [Change], connect: [PortPattern] = [],
                                startFrame: UInt32? = nil, fromGraph: Bool = false) throws(RouterError) -> [PolicyEffect] {
        guard !stopped else { throw .stopped }
        var next = policy
        var effects: [PolicyEffect] = []
        var additions: [(name: String, channels: Int)] = []
        var enabled: [(route: Int, Bool)] = []
        for (index, change) in changes.enumerated() {
            var event = change.event
            // `/route/<route>/available` speaks for devices JACK cannot see: a route is available
            // while that says yes and its ports exist.
            if !fromGraph, case let .setRouteAvailable(route, flag) = event, let r = routes.firstIndex(where: { $0.name == route }) {
                enabled.append((r, flag))
                event = .setRouteAvailable(route: route, flag && routes[r].present)
            }
            if case let .setChannelMap(app, links?) = event {
                let appChannels = additions.last { $0.name == app }?.channels ?? apps.first { $0.name == app }?.channelCount
                for link in links {
                    let routeChannels = routes.first { $0.name == link.route }?.channelCount
                    guard appChannels.map({ link.appChannel <= $0 }) ?? true, routeChannels.map({ link.routeChannel <= $0 }) ?? true else {
                        let error = PolicyError(.badArgument, "channel map \(link): '\(app)' has \(appChannels ?? 0) channels, '\(link.route)' \(routeChannels ?? 0)")
                        throw changes.count == 1 ? .policy(error) : .batch(index: index, error)
                    }
                }
            }
            let applied: [PolicyEffect]
            do throws(PolicyError) { applied = try next.apply(event) } catch {
                throw changes.count == 1 ? .policy(error) : .batch(index: index, error)
            }
            for case let .appAdded(configuration) in applied {
                let channels = change.channelCount ?? defaultChannelCount
                guard (1...Session.maximumChannels).contains(channels) else {
                    let error = PolicyError(.badArgument, "channel count: expected 1 to \(Session.maximumChannels), got \(channels)")
                    throw changes.count == 1 ? .policy(error) : .batch(index: index, error)
                }
                additions.append((configuration.name, channels))
            }
            effects += applied
        }
        // Ports first: if JACK refuses them, the policy keeps its old state and no port stays.
        let appsBefore = apps.count
        for addition in additions {
            do {
                try addApp(addition.name, channelCount: addition.channels, connect: connect)
            } catch {
                for app in apps[appsBefore...] {
                    for port in app.ports + app.capturePorts { client?.unregister(port) }
                    freeOutputSlots.append(contentsOf: app.captureSlots)
                    freeInputSlots.append(contentsOf: app.meterSlots)
                }
                apps.removeSubrange(appsBefore...)
                switch error {
                case let error as JackError: throw .jack(error)
                case let error as RouterError: throw error
                default: throw .capacity("\(error)")
                }
            }
        }
        for index in appsBefore..<apps.count { connectSources(ofApp: index) }
        for (r, flag) in enabled { routes[r].enabled = flag }
        // Apps that record (new ones, or ones whose category changed) get capture outputs.
        for case let .appAdded(configuration) in effects where configuration.category.recordsInput {
            addCapturePortsLogging(configuration.name)
        }
        for case let .appChanged(configuration) in effects where configuration.category.recordsInput {
            addCapturePortsLogging(configuration.name)
        }
        policy = next
        for effect in effects { carryOut(effect) }
        updateWatches()
        if appsBefore != apps.count || !additions.isEmpty { updateLatencies() }
        if startFrame != nil {
            // A scheduled plan carries everything before it: changes still being coalesced go
            // out now, or they would wait for the scheduled frame.
            if needsPublish { republish() }
            republish(startFrame: startFrame)
        } else if coalescing {
            needsPublish = true
        } else {
            republish()
        }
        return effects
    }

    /// Starts coalescing plans: until `endCoalescing()`, changes update the state (and are
    /// answered) at once, and the mix plan that carries them is published once, at the end. The
    /// OSC server brackets each burst of packets with these, so a flood costs one plan per burst.
    /// Scheduled changes (bundles with a timetag) are never held back.
    public func beginCoalescing() {
        queue.sync { coalescing = true }
    }

    /// Ends coalescing and publishes what changed meanwhile.
    public func endCoalescing() {
        queue.sync {
            coalescing = false
            if needsPublish && !stopped { republish() }
        }
    }

    private func carryOut(_ effect: PolicyEffect) {
        switch effect {
        case .appAdded, .appChanged, .channelMap:
            break
        case let .appRemoved(name):
            guard let index = apps.firstIndex(where: { $0.name == name }) else { return }
            let app = apps.remove(at: index)
            retiring.append(RetiringApp(name: app.name, ports: app.ports, meterSlots: app.meterSlots,
                                        capturePorts: app.capturePorts, captureSlots: app.captureSlots))
        case let .appGain(name, gain, milliseconds):
            guard let index = apps.firstIndex(where: { $0.name == name }) else { return }
            apps[index].gain = gain
            apps[index].pendingRamp = frames(milliseconds: milliseconds)
        case let .systemVolume(route, gain, milliseconds):
            guard let index = routes.firstIndex(where: { $0.name == route }) else { return }
            routes[index].gain = gain
            routes[index].pendingRamp = frames(milliseconds: milliseconds)
        case let .currentRoute(name, milliseconds):
            currentRoute = routes.firstIndex { $0.name == name }
            for index in apps.indices { apps[index].pendingRamp = frames(milliseconds: milliseconds) }
        case let .notify(notification):
            onNotification(.policy(notification))
        case .save:
            saveRequests += 1
            scheduleSave()
        }
    }

    /// Coalesces save requests: the state is taken 200 ms after the first of a burst.
    private func scheduleSave() {
        guard onSave != nil, !savePending else { return }
        savePending = true
        queue.asyncAfter(deadline: .now() + .milliseconds(200)) { [weak self] in
            guard let self, savePending, !stopped else { return }
            savePending = false
            onSave?(savedState())
        }
    }

    /// What a restart should find, now (a session manager's save). A save request still waiting
    /// for its 200 ms is answered by this one.
    public func currentSavedState() -> SavedState {
        queue.sync {
            savePending = false
            return savedState()
        }
    }

    /// What a restart should find (SessionStore.SavedState), from the policy and the ports.
    private func savedState() -> SavedState {
        let state = policy.state
        // Slider positions to 6 decimals: 0.3, not 0.30000001192092896 (the policy keeps floats).
        func position(_ linear: Float) -> Double { (Double(Decibels.sliderPosition(linear: linear)) * 1e6).rounded() / 1e6 }
        let channels = Dictionary(apps.map { ($0.name, $0.channelCount) }, uniquingKeysWith: { a, _ in a })
        return SavedState(
            silent: state.silentSwitch, selectedRoute: state.selectedRoute,
            ducking: .init(level: state.ducking.level, attack: state.ducking.attack, release: state.ducking.release),
            routeVolumes: Dictionary(state.systemVolumes.map { ($0.route, position($0.volume)) },
                                     uniquingKeysWith: { a, _ in a }),
            appVolumes: Dictionary(state.apps.map { ($0.name, position($0.volume)) },
                                   uniquingKeysWith: { a, _ in a }),
            apps: state.apps.map { app in
                let c = app.configuration
                var saved = SavedState.App(name: app.name, category: c.category.rawValue, options: c.options.map(\.rawValue).sorted(),
                                           mode: c.mode.rawValue, remote: c.remoteCommands.map(\.rawValue).sorted(),
                                           resume: c.resume.rawValue, channels: channels[app.name] ?? defaultChannelCount,
                                           channelmap: app.channelMap?.map { .init(channel: $0.appChannel, target: "\($0.route):\($0.routeChannel)") })
                if c.activation != .osc { saved.activation = c.activation.rawValue }
                if app.signal != SignalDetection() { saved.signal = .init(app.signal) }
                return saved
            })
    }

    /// Runs `body` on the control queue, keeping its typed error.
    private func onQueue<T>(_ body: () throws(RouterError) -> T) throws(RouterError) -> T {
        // Spelled out: `Result(catching:)` with a typed-throws closure crashes the 6.3 compiler.
        var outcome: Result<T, RouterError>?
        queue.sync {
            do throws(RouterError) { outcome = .success(try body()) } catch { outcome = .failure(error) }
        }
        return try outcome!.get()
    }

    private func checkPosition(_ value: Double, setting: String) throws(RouterError) {
        guard value.isFinite, (0...1).contains(value) else {
            throw .badValue(setting: setting, value: value, expected: "a slider position from 0 to 1")
        }
    }

    private func checkDecibels(_ value: Double, setting: String) throws(RouterError) {
        guard !value.isNaN, value <= 24 else {
            throw .badValue(setting: setting, value: value, expected: "a level in dB, at most +24")
        }
    }

    /// What the router is doing now.
    public func status() -> RouterStatus {
        queue.sync {
            let statistics = engine.statistics
            func peaks(_ slots: [Int32], _ table: [Float]?) -> [Double] {
                slots.map { slot in Double(Decibels.level(table?[Int(slot)] ?? 0)) }
            }
            let mix = policy.mix
            return RouterStatus(
                client: clientName, server: resolvedServerName, jackConnected: client != nil,
                jackDisconnectedSeconds: disconnectedSince.map { Date().timeIntervalSince($0) }, reconnects: reconnects,
                processTime: engine.processTimes.sinceStart.summary, recentProcessTime: engine.processTimes.recent.summary,
                planQueueFull: planQueueFull, sampleRate: sampleRate, bufferSize: bufferSize,
                rampMilliseconds: rampMilliseconds,
                apps: apps.map { app in
                    .init(name: app.name, ports: (app.ports + app.capturePorts).map(\.name),
                          state: mix[app.name]?.state.rawValue ?? "inactive",
                          volume: Double(Decibels.sliderPosition(linear: policy.state.app(app.name)?.volume ?? 1)),
                          gainDecibels: Double(Decibels.level(app.gain)),
                          peakDecibels: peaks(app.meterSlots, latestMeters?.inputPeaks))
                },
                routes: routes.map {
                    .init(name: $0.name, ports: $0.ports.map(\.name), destinations: $0.destinations,
                          available: policy.state.availableRoutes.contains($0.name),
                          volume: Double(Decibels.sliderPosition(linear: $0.gain)),
                          gainDecibels: Double(Decibels.level($0.gain)),
                          peakDecibels: peaks($0.meterSlots, latestMeters?.outputPeaks))
                },
                currentRoute: currentRoute.map { routes[$0].name }, policy: policy.state,
                silentSwitch: policy.state.silentSwitch, outsideInterruptions: policy.state.outsideInterruptions,
                nowPlaying: policy.state.nowPlaying, saveRequests: saveRequests,
                publishedPlan: publishedGeneration, adoptedPlan: engine.adoptedPlanGeneration,
                cells: cellCount, cycles: statistics.cycles, xruns: xruns,
                nonFiniteInputBuffers: statistics.nonFiniteInputBuffers)
        }
    }

    /// The peak of every app's and route's channels since the previous call (OSC meters: no
    /// transient between two meter messages is missed). Apps first, then routes, in order.
    public func takePeaks() -> [PeakMeter] {
        queue.sync {
            let reading = peaksSinceTaken
            peaksSinceTaken = nil
            func peaks(_ slots: [Int32], _ table: [Float]?) -> [Float] { slots.map { table?[Int($0)] ?? 0 } }
            return apps.map { PeakMeter(kind: .app, name: $0.name, peaks: peaks($0.meterSlots, reading?.inputPeaks)) }
                + routes.map { PeakMeter(kind: .route, name: $0.name, peaks: peaks($0.meterSlots, reading?.outputPeaks)) }
        }
    }

    /// The JACK thread that runs this router's process callback (for real-time checks in tests).
    public var processThread: pthread_t? { queue.sync { client?.processThread } }
}

/// Hands JACK notifications to the router once it exists; before that they are dropped (nothing
/// is connected yet, and the router connects everything itself right after activation).
private final class EventForwarder: @unchecked Sendable {
    // Written once on the constructing thread before JACK can deliver events that matter; the lock
    // makes the hand-over explicit.
    private let lock = NSLock()
    private var _target: (@Sendable (JackEvent) -> Void)?

    var target: (@Sendable (JackEvent) -> Void)? {
        get { lock.withLock { _target } }
        set { lock.withLock { _target = newValue } }
    }

    func send(_ event: JackEvent) { target?(event) }
}

/// Carries a value opened on one queue to another that takes it over (a JACK client opened on the
/// connector queue, used only on the control queue from then on).
private final class Handover<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
