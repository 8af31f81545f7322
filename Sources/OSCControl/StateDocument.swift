import ControlVocabulary
import Engine
import Foundation
import SessionStore
import Policy
import RouterCore

/// `/state`: the whole state as JSON (docs/OSC.md, "/state", names every field).
///
/// `settings` holds what a person or an app set (it changes only when someone changes something);
/// `engine` holds what moves by itself (meters, counters), so tools can compare settings alone.
/// Levels are in dB with silence as -144 (JSON has no infinity).
struct StateDocument: Encodable {
    struct App: Encodable {
        var name: String
        var category: String
        var options: [String]
        var mode: String
        var remote: [String]
        var resume: String
        /// `inactive`, `listening`, `active`, `ducked`, `interrupted` or `silenced`.
        var state: String
        var interruptedBy: String?
        /// What activates it (`osc` or `signal`), and why it is active now (`osc`, `signal`,
        /// `auto-resume`; absent while it is not).
        var activation: String
        var activeBecause: String?
        /// An active ducking app silent for its unduckAfter time ducks no one meanwhile.
        var duckReleased: Bool
        var volume: Double
        var gainDb: Double
        var ports: [String]
        var owner: String?
        var notify: String?
        /// multiRoute apps with a map: `[[app channel, "route:channel"], …]`, as in session files.
        var channelmap: [SavedState.ChannelMapLine]?
        /// Why it is not heard as it would be alone, in words ("ducked by nav"); "" when nothing
        /// holds it back.
        var why: String
        /// Each route it is ducked on (absent when it is not ducked).
        var ducking: [Duck]?
        /// What a person set on it beyond its volume: `muted`.
        var settings: AppSettings
    }

    /// One duck of an app on one route (docs/POLICY.md, "Why is this ducked?").
    struct Duck: Encodable {
        var route: String
        var by: String
        /// Where the rule came from: `session`, `pair` or `route`.
        var rule: String
        /// The rule's level (a fixed duck, or where a loudness-targeted one starts), dB.
        var levelDb: Double
        /// LU under the ducker, and the deepest it may go (loudness-targeted ducks only).
        var target: Double?
        var floorDb: Double?
        /// The depth in force now, dB.
        var gainDb: Double
        /// Measured (loudness-targeted ducks, once both apps were heard): the ducker as heard,
        /// the ducked app as it would be heard undducked (LUFS), the difference heard now (LU).
        var duckerLufs: Double?
        var duckedLufs: Double?
        var differenceLu: Double?
    }

    struct Route: Encodable {
        var name: String
        var ports: [String]
        var destinations: [String]
        var available: Bool
        /// A watched remote route's far end answers (absent for other routes).
        var farEndAnswers: Bool?
        /// The ports' playback latency, `[min, max]` ms (absent while off the server).
        var latencyMs: [Double]?
        var volume: Double
        var gainDb: Double
    }

    struct Ducking: Encodable {
        struct Rule: Encodable {
            var ducker: String
            var ducked: String
            var route: String?
            var level: Double?
            var target: Double?
            var floor: Double?
            var attack: Double?
            var release: Double?
        }
        var level: Double
        var attack: Double
        var release: Double
        /// LU under the ducker (absent: ducks are by level).
        var target: Double?
        var floor: Double
        var rules: [Rule]
    }

    struct Settings: Encodable {
        var client: String
        var server: String
        var sampleRate: Int
        var period: Int
        var ramp: Double
        var silent: Bool
        var route: String?
        var selectedRoute: String?
        var routes: [Route]
        var apps: [App]
        var ducking: Ducking
        var interruptions: [String]
        var nowPlaying: String?
        var subscribers: [String]
        var meterSubscribers: [String]
        /// The addresses `/meters/levels` sends to (set by the OSC server, as the others).
        var levelSubscribers: [String] = []
        /// What of the reloaded session file waits for a restart (empty: nothing).
        var reloadPending: [String] = []
        /// Scenes and the cue list (StateDocument+Show.swift).
        var show: ShowState? = nil
    }

    struct Meters: Encodable {
        var apps: [String: [Double]]
        var routes: [String: [Double]]
    }

    /// A request to the JACK server still unanswered past its deadline.
    struct Unanswered: Encodable {
        var request: String
        var seconds: Double
    }

    /// A state save that could not be written: when (ISO 8601, UTC), why, whether it is still
    /// unsaved and tried again, and how many hand-overs in a row failed.
    struct SaveFailure: Encodable {
        var at: String
        var error: String
        var retrying: Bool
        var attempts: Int

        init(_ failure: RouterStatus.SaveFailure) {
            at = ISO8601DateFormatter().string(from: failure.at)
            error = failure.reason
            retrying = failure.retrying
            attempts = failure.attempts
        }
    }

    /// EBU R 128 loudness, LUFS (-144: silence, or not yet heard long enough).
    struct Loudness: Encodable {
        var momentary: Double
        var shortTerm: Double
    }

    struct LoudnessMeters: Encodable {
        var apps: [String: Loudness]
        var routes: [String: Loudness]
    }

    /// The process callback's own time per cycle, µs.
    struct ProcessTime: Encodable {
        var cycles: UInt64
        var meanUs: Double
        var p99Us: Double
        var maxUs: Double
        /// The period's length: the time a cycle must fit in.
        var budgetUs: Double

        init(_ summary: ProcessTimeSummary, budget: Double) {
            func round(_ value: Double) -> Double { (value * 10).rounded() / 10 }
            cycles = summary.cycles
            meanUs = round(summary.meanMicroseconds)
            p99Us = round(summary.p99Microseconds)
            maxUs = round(summary.maxMicroseconds)
            budgetUs = round(budget)
        }
    }

    struct EngineCounters: Encodable {
        /// `connected` while the server runs the router's cycles; `stalled` while it is connected
        /// but has run none for over half a second (the watchdog gives it up after 2 s);
        /// `disconnected` while the JACK server is away.
        var jack: String
        /// Seconds since the last cycle (only while stalled).
        var jackStalledSeconds: Double?
        /// Seconds since the server went away (only while it is away).
        var jackAwaySeconds: Double?
        var reconnects: Int
        /// Since start, and over the last 10 to 20 seconds.
        var processTime: ProcessTime
        var recentProcessTime: ProcessTime
        var planQueueFull: Int
        var cycles: UInt64
        var xruns: Int
        var missedCycles: UInt64
        /// Where the newest missed cycles fell: `[first frame, frames]` on JACK's frame clock.
        var recentGaps: [[UInt32]]
        var publishedPlan: UInt64
        var adoptedPlan: UInt64
        var cells: Int
        var nonFiniteInputBuffers: UInt64
        /// The router's JACK ports, and the spares among them (JACK2 keeps given-up ports).
        var jackPorts: Int
        var spareJackPorts: Int
        /// A request the JACK server has not answered within its deadline, and for how long it
        /// has waited (absent while the server answers).
        var jackUnanswered: Unanswered?
        var saveRequests: Int
        /// The last state save that could not be written (absent: none since start).
        var lastSaveFailure: SaveFailure? = nil
        var peaksDbfs: Meters
        /// Whether the audio thread measures RMS now (while there is a level subscriber).
        var measuresRMS = false
        /// Every metered app's and route's loudness (absent when the router meters none).
        var loudnessLufs: LoudnessMeters?
    }

    var settings: Settings
    var engine: EngineCounters
    /// The HTTP server's connections (absent without one).
    var http: HTTPConnectionState?
    /// The OSC listeners' limits and refusals, and the process's descriptors
    /// (StateDocument+Limits.swift).
    var osc: OSCLimits?
    var descriptors: Descriptors?

    init(_ status: RouterStatus, owners: [String: String], notify: [String: String], subscribers: [String],
         meterSubscribers: [String]) {
        let policy = status.policy
        let why = policy.whyAll()
        let apps = status.apps.map { app -> App in
            let session = policy.app(app.name)
            let configuration = session?.configuration ?? AppConfiguration(name: app.name)
            var interruptedBy: String?
            if case let .interrupted(by)? = session?.activity {
                switch by {
                case let .app(name): interruptedBy = "app:\(name)"
                case let .spokenAudio(name): interruptedBy = "spokenAudio:\(name)"
                case let .outside(source): interruptedBy = "outside:\(source)"
                case let .routeDisconnected(route): interruptedBy = "routeDisconnected:\(route)"
                }
            }
            return App(name: app.name, category: configuration.category.rawValue,
                       options: configuration.options.map(\.rawValue).sorted(), mode: configuration.mode.rawValue,
                       remote: configuration.remoteCommands.map(\.rawValue).sorted(), resume: configuration.resume.rawValue,
                       state: app.state, interruptedBy: interruptedBy,
                       activation: configuration.activation.rawValue,
                       activeBecause: session?.isActive == true ? session?.activatedBy?.rawValue : nil,
                       duckReleased: session?.duckReleased ?? false, volume: app.volume, gainDb: level(app.gainDecibels),
                       ports: app.ports, owner: owners[app.name], notify: notify[app.name],
                       channelmap: session?.channelMap?.map { SavedState.ChannelMapLine(channel: $0.appChannel, target: "\($0.route):\($0.routeChannel)") },
                       why: why[app.name] ?? "",
                       ducking: app.ducks.isEmpty ? nil : app.ducks.map { duck in
                           Duck(route: duck.route, by: duck.rule.ducker, rule: duck.rule.scope.rawValue, levelDb: level(duck.rule.level),
                                target: duck.rule.target, floorDb: duck.rule.target == nil ? nil : duck.rule.floor,
                                gainDb: tenth(level(duck.depthDecibels)), duckerLufs: duck.duckerLufs.map(tenth),
                                duckedLufs: duck.duckedLufs.map(tenth), differenceLu: duck.differenceLu.map(tenth))
                       },
                       settings: session?.settings ?? AppSettings())
        }
        func tenth(_ value: Double) -> Double { (value * 10).rounded() / 10 }
        func level(_ dB: Double) -> Double { max(dB, Double(Decibels.floor)) }
        func ms(_ frames: UInt32) -> Double { (Double(frames) * 1000 / Double(max(status.sampleRate, 1)) * 100).rounded() / 100 }
        let routes = status.routes.map {
            Route(name: $0.name, ports: $0.ports, destinations: $0.destinations, available: $0.available,
                  farEndAnswers: $0.farEndAnswers,
                  latencyMs: $0.latencyFrames.map { range in [range.lowerBound, range.upperBound].map { ms($0) } },
                  volume: $0.volume, gainDb: level($0.gainDecibels))
        }
        let ducking = Ducking(level: policy.ducking.level, attack: policy.ducking.attack, release: policy.ducking.release,
                              target: policy.ducking.target, floor: policy.ducking.floor,
                              rules: policy.ducking.rules.map {
                                  Ducking.Rule(ducker: $0.ducker, ducked: $0.ducked, route: $0.route, level: $0.level, target: $0.target,
                                               floor: $0.floor, attack: $0.attack, release: $0.release)
                              })
        settings = Settings(client: status.client, server: status.server, sampleRate: status.sampleRate, period: status.bufferSize,
                            ramp: status.rampMilliseconds, silent: status.silentSwitch, route: status.currentRoute,
                            selectedRoute: policy.selectedRoute, routes: routes, apps: apps, ducking: ducking,
                            interruptions: status.outsideInterruptions, nowPlaying: status.nowPlaying,
                            subscribers: subscribers, meterSubscribers: meterSubscribers)
        let budget = 1_000_000 * Double(status.bufferSize) / Double(max(status.sampleRate, 1))
        engine = EngineCounters(jack: !status.jackConnected ? "disconnected" : status.jackStalledSeconds == nil ? "connected" : "stalled",
                                jackStalledSeconds: status.jackStalledSeconds.map { ($0 * 10).rounded() / 10 },
                                jackAwaySeconds: status.jackDisconnectedSeconds.map { ($0 * 10).rounded() / 10 },
                                reconnects: status.reconnects,
                                processTime: ProcessTime(status.processTime, budget: budget),
                                recentProcessTime: ProcessTime(status.recentProcessTime, budget: budget),
                                planQueueFull: status.planQueueFull, cycles: status.cycles, xruns: status.xruns, missedCycles: status.missedCycles,
                                recentGaps: status.recentGaps.map { [$0.firstFrame, $0.frames] }, publishedPlan: status.publishedPlan,
                                adoptedPlan: status.adoptedPlan, cells: status.cells, nonFiniteInputBuffers: status.nonFiniteInputBuffers,
                                jackPorts: status.jackPorts, spareJackPorts: status.spareJackPorts,
                                jackUnanswered: status.jackUnanswered.map { Unanswered(request: $0.request, seconds: ($0.seconds * 10).rounded() / 10) },
                                saveRequests: status.saveRequests,
                                peaksDbfs: Meters(apps: Dictionary(uniqueKeysWithValues: status.apps.map { ($0.name, $0.peakDecibels.map(level)) }),
                                                  routes: Dictionary(uniqueKeysWithValues: status.routes.map { ($0.name, $0.peakDecibels.map(level)) })),
                                loudnessLufs: Self.loudness(status))
        // What waits for a restart, and the state file's last failed save (docs/SESSIONS.md).
        settings.reloadPending = status.reloadPending
        settings.show = ShowState(policy.show)
        engine.lastSaveFailure = status.lastSaveFailure.map(SaveFailure.init)
    }

    /// The loudness of every metered app and route; nil when none is.
    static func loudness(_ status: RouterStatus) -> LoudnessMeters? {
        func lufs(_ reading: RouterStatus.LoudnessReading) -> Loudness {
            Loudness(momentary: max(reading.momentary ?? -144, -144), shortTerm: max(reading.shortTerm ?? -144, -144))
        }
        let apps = status.apps.compactMap { app in app.loudness.map { (app.name, lufs($0)) } }
        let routes = status.routes.compactMap { route in route.loudness.map { (route.name, lufs($0)) } }
        guard !apps.isEmpty || !routes.isEmpty else { return nil }
        return LoudnessMeters(apps: Dictionary(apps, uniquingKeysWith: { a, _ in a }), routes: Dictionary(routes, uniquingKeysWith: { a, _ in a }))
    }
}
