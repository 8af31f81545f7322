import Dispatch
import Engine
import Foundation
import JackHost
import Logging
import Policy
import SessionStore

/// The control plane's public face: the Swift API the OSC layer and the daemon call, and the
/// serial control queue every piece of control state lives on.
///
/// Owns: the queue, and the pieces of the control plane, each of which owns its own state
/// (`JackLink`, `PortInventory`, `Patchbay`, `PlanPublisher`, `TimedChanges`, `SignalWatcher`,
/// `StateKeeper`, `Diagnostics`) plus the policy. Data moves one way: events (OSC, JACK, timers,
/// the session) → policy (`ChangeTransaction`) → `RoutingMatrix` → `PlanPublisher` → engine;
/// levels and statistics come back through `Diagnostics` and `SignalWatcher`.
/// Public methods may be called from any thread except the control queue itself; they run on the
/// queue and return when the change has been published to the audio thread.
public final class Router: @unchecked Sendable {
    // @unchecked: every mutable field below is touched only on `queue` (or in init/deinit, when
    // nothing else can reach the router).

    public struct Configuration: Sendable {
        public var session: Session
        /// JACK server name (nil: `$JACK_DEFAULT_SERVER`, else `default`).
        public var server: String?
        /// Overrides the session's client name.
        public var clientName: String?
        /// Overrides the session's ramp time, in milliseconds.
        public var rampMilliseconds: Double?
        public var engine = Engine.Configuration()
        /// Meter every app's and route's loudness (EBU R 128, momentary and short-term: `/state`),
        /// on a thread of its own, off the process thread (session `loudness.meter`; off by default).
        public var meterLoudness = false
        /// The session file's own ducking settings, before a state file was laid over them: the
        /// target, floor and rules are saved only where they differ from these (nil: always).
        public var fileDucking: DuckingSettings?
        /// How often the control thread's housekeeping runs (retired plans, meters, timed
        /// changes, fades) while it has work to do (Router+Housekeeping.swift)...
        public var housekeepingInterval: DispatchTimeInterval = .milliseconds(10)
        /// ...and while it has none: an idle router watches its server and collects statistics
        /// at this pace.
        public var idleHousekeepingInterval: DispatchTimeInterval = .seconds(1)
        /// Receives every notification of the policy, in order, on the control queue (the OSC
        /// layer forwards them to apps and subscribers). It must not block.
        public var onNotification: @Sendable (RouterNotification) -> Void = { _ in }
        /// Called on the control queue when the JACK server goes away (false) and when the router
        /// is running on it again (true). It must not block.
        public var onJackConnection: @Sendable (Bool) -> Void = { _ in }
        /// Waits between attempts to reach a JACK server that went away: the first, doubling up to
        /// the last. The router never starts a server itself.
        public var reconnectDelays: (first: Double, maximum: Double) = (0.1, 1.0)
        /// Seconds without a process cycle, while the client is active, after which the server
        /// is given up as when it shuts the client down (`CycleWatchdog`; never less than four
        /// periods); 0 turns the watchdog off.
        public var watchdogSeconds: Double = 2
        /// Channels of an app registered at run time when the caller does not say.
        public var defaultChannelCount = 2
        /// Receives the state to keep (volumes, silent switch, selected route, ducking, apps)
        /// at most 200 ms after a change that the policy asks to save, coalesced, on the control
        /// queue, and once more on stop if one is pending. It must not block: write elsewhere,
        /// then call `done` (any thread) with nil once written, or with why not: a save not
        /// written stays pending and is handed over again (at growing intervals up to 30 s, at
        /// stop, and once after it: `handOverUnsavedAfterStop`), so nothing is lost to a full or
        /// read-only disk that comes back.
        public var onSave: (@Sendable (SavedState, _ done: @escaping @Sendable (_ failure: String?) -> Void) -> Void)?
        /// Called on the control queue at once for every change that asks for a save (before the
        /// 200 ms `onSave` waits): a session manager is told the client is dirty then. It must
        /// not block.
        public var onChange: @Sendable () -> Void = {}

        public init(session: Session, server: String? = nil) {
            self.session = session
            self.server = server
        }
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

    let queue = DispatchQueue(label: "duckrouter.control", qos: .userInitiated)
    let logger: Logger
    let link: JackLink
    let engine: Engine
    /// The engine's peaks, for any thread (meter subscribers read them with no trip to this queue).
    let peakBoard: PeakBoard
    var inventory: PortInventory
    var patchbay: Patchbay
    /// Every change to what is published, or to what is timed, may give housekeeping work.
    var publisher: PlanPublisher { didSet { if !housekeepingBusy { paceHousekeeping() } } }
    var policy: PolicyEngine
    /// The route every app plays to (the policy's current route), as an index into the routes.
    var currentRoute: Int?
    var timed = TimedChanges() { didSet { if !housekeepingBusy { paceHousekeeping() } } }
    var signals: SignalWatcher
    /// Test seam: runs on the control queue as the router joins a server, just before its client
    /// is activated (nil in the daemon).
    var willActivate: (() -> Void)?
    var keeper: StateKeeper
    var diagnostics = Diagnostics()
    var loudness: LoudnessMeters
    /// Meter loudness even when no duck aims at a target (session `loudness.meter`).
    let meterLoudness: Bool
    /// The session file's ducking settings in force (`Configuration.fileDucking`): a reload
    /// brings the new file's, each as its step applies.
    var fileDucking: DuckingSettings?
    /// The session the router started with: what only a restart changes is compared with it.
    let startSession: Session
    /// What of the reloaded file waits for a restart (`ReloadBacklog`).
    var reloadBacklog = ReloadBacklog()
    /// The loop behind loudness-targeted ducks, and its 100 ms timer (running while one is in force).
    var loudnessDucker = LoudnessDucker()
    var loudnessDuckTimer: DispatchSourceTimer?
    var watchdog: CycleWatchdog
    /// The client name JACK gave and the server it runs on.
    var clientName: String
    var resolvedServerName: String
    var sampleRate = 48000
    var bufferSize = 128
    let rampMilliseconds: Double
    let defaultChannelCount: Int
    /// Plans are held back until `endCoalescing()` (an OSC burst).
    var coalescing = false
    var stopped = false
    /// Housekeeping's timer, and whether it runs at the fast pace (`housekeepingInterval`) or
    /// the idle one (Router+Housekeeping.swift).
    var timer: DispatchSourceTimer?
    var housekeepingBusy = true
    /// The last tick saw no cycle for `stallReportThreshold`: ticks stay fast until the watchdog
    /// gives the server up or cycles run again.
    var stallSuspected = false
    /// The client's late answers seen so far (`followServerAnswers`).
    var lateAnswersSeen = 0
    let housekeepingInterval: DispatchTimeInterval
    let idleHousekeepingInterval: DispatchTimeInterval
    /// Reads the level watches every millisecond while any app is watched (`SignalWatcher`).
    /// The level timer (Router+LevelWatch.swift): every millisecond while an app is watched,
    /// except while it sleeps.
    var levelTimer: DispatchSourceTimer?
    /// Watches the engine's eventfd that wakes the level timer from its sleep (Router+LevelWatch.swift).
    var levelWakeSource: DispatchSourceRead?
    let onNotification: @Sendable (RouterNotification) -> Void
    /// What happened lately, for a page opened later (`tell` records each notification).
    public let timeline = Timeline()
    let onJackConnection: @Sendable (Bool) -> Void
    let onChange: @Sendable () -> Void
    let onServerLost: @Sendable (String) -> Void

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
        onChange = configuration.onChange
        keeper = StateKeeper(onSave: configuration.onSave)
        watchdog = CycleWatchdog(timeout: configuration.watchdogSeconds)
        defaultChannelCount = configuration.defaultChannelCount
        housekeepingInterval = configuration.housekeepingInterval
        idleHousekeepingInterval = configuration.idleHousekeepingInterval
        let session = configuration.session
        startSession = session
        rampMilliseconds = configuration.rampMilliseconds ?? session.rampMilliseconds
        publisher = PlanPublisher(gainSlotCapacity: configuration.engine.gainSlotCapacity)
        signals = SignalWatcher(capacity: configuration.engine.maxLevelWatches, logger: logger)
        patchbay = Patchbay(logger: logger)
        policy = try Router.makePolicy(session, fadeMilliseconds: rampMilliseconds)
        clientName = configuration.clientName ?? session.client
        resolvedServerName = configuration.server ?? JackClient.defaultServerName
        link = JackLink(parameters: .init(clientName: clientName, server: configuration.server,
                                          reportsLatency: session.routes.contains { $0.lookahead > 0 || $0.unseenLatency != nil },
                                          netManager: session.usesNetJack2
                                              ? .init(session.netjack2, routes: session.netJack2Routes) : nil,
                                          reconnectDelays: configuration.reconnectDelays), queue: queue)
        var engineConfiguration = configuration.engine
        engineConfiguration.maxTapGroups = max(engineConfiguration.maxTapGroups,
                                               engineConfiguration.maxInputChannels + engineConfiguration.maxOutputChannels)
        engine = Engine(configuration: engineConfiguration, portBuffer: JackClient.portBuffer)
        peakBoard = PeakBoard(engine: engine)
        meterLoudness = configuration.meterLoudness
        fileDucking = configuration.fileDucking
        loudness = LoudnessMeters(enabled: configuration.meterLoudness || session.ducking.usesLoudness,
                                  maxInputChannels: engineConfiguration.maxInputChannels)

        // The session's apps, routes and input, with their meter slots; JACK ports come next.
        inventory = PortInventory(maxInputChannels: configuration.engine.maxInputChannels,
                                  maxOutputChannels: configuration.engine.maxOutputChannels)
        do {
            try inventory.addInput(sources: session.input.ports)
            for app in session.apps {
                try inventory.addApp(app.name, channelCount: app.channelCount, connect: app.connect, on: nil, records: false)
                inventory.apps[inventory.apps.count - 1].exclusive = app.exclusive
                inventory.apps[inventory.apps.count - 1].unduckAfter = app.unduckAfter
            }
            for route in session.routes { try inventory.addRoute(route, gain: policy.state.systemVolume(route.name) ?? 1) }
        } catch {
            throw RouterError(error)
        }
        currentRoute = policy.state.currentRoute.flatMap(inventory.routeIndex)
        followMeters()
        // What the session alone makes audible (a signal-activated app listens from the start).
        let mix = policy.mix
        for index in inventory.apps.indices {
            inventory.apps[index].gain = mix[inventory.apps[index].name]?.factor ?? 0
            inventory.apps[index].routeGains = mix[inventory.apps[index].name]?.routeFactors ?? [:]
        }

        let opened: (client: JackClient, epoch: Int)
        do {
            opened = try link.open(events: eventSink())
        } catch {
            throw .jack(error)
        }
        try onQueue { () throws(RouterError) in
            updateWatches()
            try attach(opened.client, epoch: opened.epoch, selectedRoute: session.selectedRoute)
            startHousekeeping()
            for app in session.apps where app.startsActive {
                do throws(RouterError) {
                    _ = try performOnQueue([Change(.activate(app: app.name))])
                } catch {
                    logger.error("could not activate '\(app.name)' at start: \(error)")
                }
            }
            logger.info("running", metadata: ["client": "\(clientName)", "jack": "\(JackLibrary.loaded.rawValue)", "server": "\(resolvedServerName)",
                                              "rate": "\(sampleRate)", "period": "\(bufferSize)",
                                              "apps": "\(inventory.apps.count)", "routes": "\(inventory.routes.count)"])
        }
    }

    /// The last reference may go on the control queue itself (a closure that held it ends there):
    /// no other thread can reach the router any more, so it stops without going through the queue.
    deinit { stopOnQueue() }

    /// Stops the audio (deactivate) and closes the JACK client. Safe to call more than once.
    public func stop() {
        queue.sync { stopOnQueue() }
    }

    func stopOnQueue() {
        guard !stopped else { return }
        handOverSave()
        stopped = true
        timer?.cancel()
        timer = nil
        levelTimer?.cancel()
        levelTimer = nil
        levelWakeSource?.cancel()
        levelWakeSource = nil
        loudnessDuckTimer?.cancel()
        loudnessDuckTimer = nil
        // The close deactivates first. What its process callback points into stays until the
        // close returns. A close takes well under a second (hundreds of ports unregistered one by
        // one); a frozen server's may not return within the wait, and the daemon then exits
        // without it.
        link.drop(keepingAlive: engine, waitSeconds: 5)
        loudness.stop()
    }

    /// The policy as the session file sets it up: routes with their volumes, ducking, and every
    /// app registered (inactive) with its volume.
    private static func makePolicy(_ session: Session, fadeMilliseconds: Double) throws(RouterError) -> PolicyEngine {
        let routes = session.routes.map { route in
            (name: route.name, volume: Decibels.linear(sliderPosition: Float(session.volumes.routes[route.name] ?? 1)))
        }
        var policy = PolicyEngine(routes: routes, ducking: session.ducking, fadeMilliseconds: fadeMilliseconds,
                                  silentSwitch: session.silentSwitch,
                                  fallback: (session.routes.first { $0.isBuiltIn } ?? session.routes.first)?.name,
                                  privateRoutes: Set(session.routes.filter(\.isPrivate).map(\.name)), show: session.show)
        do throws(PolicyError) {
            for app in session.apps {
                try policy.apply(.register(app.configuration))
                for event in SessionReload.setup(of: app, volume: session.volumes.apps[app.name], activating: false) {
                    try policy.apply(event)
                }
            }
        } catch {
            throw .policy(error)
        }
        return policy
    }

    // MARK: - Control API

    /// Applies a policy event (docs/POLICY.md): the Swift API the OSC layer calls. Returns the
    /// effects in order (notifications among them, also sent to `onNotification`). A refused
    /// event throws `RouterError.policy` and changes nothing.
    @discardableResult
    public func perform(_ event: PolicyEvent) throws(RouterError) -> [PolicyEffect] {
        try perform([Change(event)])
    }

    /// Applies changes together (an OSC bundle): all of them or none, heard in one plan. When one
    /// is refused, throws `.batch` naming it, and nothing changes.
    @discardableResult
    public func perform(_ changes: [Change]) throws(RouterError) -> [PolicyEffect] {
        try onQueue { () throws(RouterError) in try performGivingUpHungServer(changes) }
    }

    /// Applies changes together at a moment on the wall clock (an OSC timetag, Unix seconds): the
    /// plan takes over at the JACK frame of that moment, sample-accurately. The changes are checked
    /// now against the current state (a refusal throws); `completion` gets the outcome when they
    /// apply. Moments in the past, or more than `schedulingHorizon` seconds ahead, apply at once.
    /// `keyGeneration`: the generation of the control page's key that gave the right to make
    /// them, if one did (`withdrawTimedChanges`).
    public func perform(_ changes: [Change], atUnixTime time: Double, keyGeneration: Int? = nil,
                        completion: @escaping @Sendable (Result<[PolicyEffect], RouterError>) -> Void) throws(RouterError) {
        try onQueue { () throws(RouterError) in
            guard !stopped else { throw .stopped }
            let delay = time - Date().timeIntervalSince1970
            guard let client = link.client, delay.isFinite, delay > 0, delay <= Router.schedulingHorizon else {
                logger.notice("bundle timetag is \(delay > 0 ? "more than \(Int(Router.schedulingHorizon)) s ahead" : "in the past") (\(String(format: "%+.3f", delay)) s); applying it now")
                completion(.success(try performGivingUpHungServer(changes)))
                return
            }
            _ = try ChangeTransaction(changes, policy: policy, inventory: inventory,
                                      defaultChannelCount: defaultChannelCount, fromGraph: false)
            guard !timed.isFull else {
                throw .policy(PolicyError(.general, "too many timed changes waiting (\(TimedChanges.capacity)); try again"))
            }
            let frame = client.frameTime(atMicroseconds: client.microseconds &+ UInt64(delay * 1_000_000))
            timed.insert(.init(changes: changes, frame: frame, completion: completion, keyGeneration: keyGeneration))
        }
    }

    /// Drops the changes waiting for their moment that act on `app` (it changed owner: what was
    /// allowed on it before is not the new owner's); their completions get `refusal`.
    public func withdrawTimedChanges(actingOn app: String, refusal: PolicyError) {
        let withdrawn = queue.sync { timed.take(actingOn: app) }
        for entry in withdrawn { entry.completion(.failure(.policy(refusal))) }
    }

    /// Drops the changes waiting for their moment that a control page key older than
    /// `generation` allowed (the key changed); their completions get `refusal`.
    public func withdrawTimedChanges(allowedByKeysBefore generation: Int, refusal: PolicyError) {
        let withdrawn = queue.sync { timed.take(allowedByKeysBefore: generation) }
        for entry in withdrawn { entry.completion(.failure(.policy(refusal))) }
    }

    /// How far ahead a timetag may schedule changes, in seconds.
    public static let schedulingHorizon = 60.0

    /// The JACK frame a moment on the wall clock (Unix seconds) falls on, for tests and tools.
    public func frameTime(atUnixTime time: Double) -> UInt32 {
        queue.sync {
            let delay = time - Date().timeIntervalSince1970
            guard let client = link.client else { return 0 }
            return client.frameTime(atMicroseconds: UInt64(max(0, Double(client.microseconds) + delay * 1_000_000)))
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
            try performGivingUpHungServer([Change(.register(configuration), channelCount: channels)], connect: connect)
        }
    }

    /// Applies the edits between two versions of the session file while running (SIGHUP); see
    /// `SessionReload`. Returns notes: what needs a restart (the file's edits only a restart
    /// applies, and the steps refused now, which wait for it: `ReloadBacklog`).
    public func reload(from old: Session, to new: Session) -> [String] {
        queue.sync {
            guard !stopped else { return ["the router has stopped"] }
            let channels = Dictionary(inventory.apps.map { ($0.name, $0.channelCount) }, uniquingKeysWith: { a, _ in a })
            reloadBacklog.setRestartEdits(SessionReload.restartEdits(running: startSession, channels: channels, file: new))
            let edits = reloadBacklog.restartEdits.map { "\($0) changed: restart to apply" }
            return edits + carryOut(SessionReload(from: old, to: new), ducking: (old.ducking, new.ducking))
        }
    }

    /// What of the reloaded session file waits for a restart, as the log says it.
    public var reloadPending: [String] { queue.sync { reloadBacklog.descriptions } }

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

    /// What the watch of a remote route's far end found (`RemoteRoutes.FarEndWatch`): the route
    /// is available only while its far end answers, as well as while its ports exist. A change
    /// while the server is away is kept and applied when the router is back on one.
    public func setFarEndAnswers(route: String, _ answers: Bool) {
        queue.sync {
            guard !stopped, let index = inventory.routeIndex(route), let known = inventory.routes[index].farEndAnswers,
                  known != answers else { return }
            inventory.routes[index].farEndAnswers = answers
            updateRoutePresence()
        }
    }

    /// The policy's state: apps' sessions, silent switch, volumes, interruptions, ducking.
    public var policyState: PolicyState { queue.sync { policy.state } }

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
            if publisher.needsPublish && !stopped { republish() }
        }
    }

    /// The peak of every app's and route's channels since the previous call (OSC meters: no
    /// transient between two meter messages is missed). Apps first, then routes, in order. Any
    /// thread, with no trip to the control queue (`PeakBoard`).
    public func takePeaks() -> [PeakMeter] {
        peakBoard.takePeaks()
    }

    /// Forgets the peaks gathered so far (any thread, no trip to the control queue): the next
    /// `takePeaks` tells of what comes after.
    public func dropPeaks() {
        peakBoard.dropPeaks()
    }

    /// Whether the audio thread measures each metered channel's RMS (off from the start: an idle
    /// router pays nothing for it). While it does, `takePeaks` carries the sums of squares. Any
    /// thread, no trip to the control queue (`PeakBoard`): the OSC side turns it on while someone
    /// shows levels (`/meters/levels`).
    public func measureRMS(_ on: Bool) {
        peakBoard.measureRMS(on)
    }

    /// Whether RMS is measured now (`measureRMS`).
    public var measuresRMS: Bool { peakBoard.measuresRMS }

    /// Every metered app's and route's loudness, apps first, in order; nil when the router
    /// meters no loudness now (metering off, or the server away).
    public func loudnessReadings() -> [LoudnessMeterReading]? {
        queue.sync {
            guard loudness.enabled, link.client != nil else { return nil }
            return inventory.apps.compactMap { app in
                loudness.reading(app: app.name).map { LoudnessMeterReading(kind: .app, name: app.name, momentary: $0.momentary, shortTerm: $0.shortTerm) }
            } + inventory.routes.compactMap { route in
                loudness.reading(route: route.name).map { LoudnessMeterReading(kind: .route, name: route.name, momentary: $0.momentary, shortTerm: $0.shortTerm) }
            }
        }
    }

    /// The JACK thread that runs this router's process callback (for real-time checks in tests).
    public var processThread: pthread_t? { queue.sync { link.client?.processThread } }

    /// Runs `body` on the control queue, keeping its typed error.
    func onQueue<T>(_ body: () throws(RouterError) -> T) throws(RouterError) -> T {
        // Spelled out: `Result(catching:)` with a typed-throws closure crashes the 6.3 compiler.
        var outcome: Result<T, RouterError>?
        queue.sync {
            do throws(RouterError) { outcome = .success(try body()) } catch { outcome = .failure(error) }
        }
        return try outcome!.get()
    }
}
