/// Who or what interrupted an app.
public enum Interrupter: Hashable, Sendable {
    /// A non-mixable app that was activated (docs/POLICY.md §5.2).
    case app(String)
    /// An app with `interruptSpokenAudioAndMixWithOthers` pausing a spokenAudio app (§5.5).
    case spokenAudio(String)
    /// An outside interruption such as a phone call, named by its source (§5.11).
    case outside(String)
    /// A private route (headphones) went away while the app played through it (§5.9). It ends
    /// only when the app activates again: audio never comes back by itself on another route.
    case routeDisconnected(String)
}

/// Whether an app's session is active.
public enum Activity: Hashable, Sendable {
    case inactive
    case active
    case interrupted(by: Interrupter)
}

/// What an app's audio is doing, as notifications and `/state` report it.
public enum AppAudioState: String, CaseIterable, Sendable {
    case inactive
    /// A signal-activated app waiting for its sound: heard, but ducking and interrupting no one.
    case listening
    case active, ducked, interrupted, silenced
}

extension PolicyState {
    /// Why an app of this configuration would be refused activation now (§5.11, §5.5), or nil.
    public func activationRefusal(_ configuration: AppConfiguration) -> PolicyError? {
        if !configuration.isMixable, let source = outsideInterruptions.last {
            return PolicyError(.insufficientPriority,
                               "'\(configuration.name)' cannot be activated while the outside interruption '\(source)' lasts (a non-mixable session)")
        }
        if configuration.isSpokenAudio,
           let speaker = apps.first(where: { $0.isActive && $0.name != configuration.name && $0.configuration.interruptsSpokenAudio }) {
            return PolicyError(.insufficientPriority,
                               "'\(configuration.name)' is spoken audio and cannot be activated while '\(speaker.name)' interrupts spoken audio")
        }
        return nil
    }
}

/// One app's session.
public struct AppSession: Equatable, Sendable {
    public var configuration: AppConfiguration
    public var activity: Activity = .inactive
    /// The app's relative volume, linear (1 is unity).
    public var volume: Float = 1
    /// Increases with every activation; the newest eligible activation owns remote control.
    public var activationSequence: Int?
    /// A multiRoute app's channel map; nil: every channel to every available route.
    public var channelMap: [ChannelLink]?
    /// Whether the app itself (or a person) activated it since it was last interrupted or
    /// deactivated. A recording app hears the input only then: an automatic resume never
    /// re-opens a microphone (§5.8).
    public var activatedByRequest = false
    /// Why it is active (nil while it is not).
    public var activatedBy: ActivationReason?
    /// An active app with duckOthers that has been silent for its `unduckAfter` time: it no
    /// longer ducks the others until it sounds again.
    public var duckReleased = false
    /// How its sound is judged (signal activation, unduckAfter).
    public var signal = SignalDetection()
    /// What a person set on it beyond its volume (mute).
    public var settings = AppSettings()

    /// Whether the app receives the input route now: a recording category, active, and activated
    /// on request since its last interruption.
    public var receivesInput: Bool { configuration.category.recordsInput && isActive && activatedByRequest }

    public var name: String { configuration.name }
    public var isActive: Bool { activity == .active }
}

/// Everything the policy decides from: the apps' sessions and the system settings.
public struct PolicyState: Equatable, Sendable {
    /// Apps in registration order.
    public internal(set) var apps: [AppSession] = []
    public internal(set) var silentSwitch = false
    /// System volume per route, linear (1 is full), in the session's route order.
    public internal(set) var systemVolumes: [(route: String, volume: Float)] = []
    /// Available routes in the order they became available (newest last): last in wins.
    public internal(set) var availableRoutes: [String] = []
    /// The route a person selected (`/route/select`); it wins while it is available.
    public internal(set) var selectedRoute: String?
    /// Private routes (headphones): when one goes away, what played through it stops (§5.9).
    public internal(set) var privateRoutes: Set<String> = []
    /// Outside interruptions in progress, oldest first.
    public internal(set) var outsideInterruptions: [String] = []
    public internal(set) var ducking = DuckingSettings()
    /// The depth (dB) each loudness-targeted duck has now, by pair and route, as the router's
    /// loudness loop worked it out from what it measures (`setLoudnessDucks`). Absent: not yet
    /// measured, so the rule's `level` applies. Kept only while the pair ducks on that route.
    public internal(set) var loudnessDucks: [DuckPair: Double] = [:]
    /// Milliseconds of the fast fade used when audio starts or stops (interruptions, activation,
    /// the silent switch) and for volume changes.
    public internal(set) var fadeMilliseconds: Double = 20
    /// The scenes, the cue list and where the show stands in it.
    public internal(set) var show = Show()
    var nextActivationSequence = 0

    public init() {}

    /// Compares every stored field. OSCQuery's listeners (HTTPControl's `Namespace.Inputs`) see
    /// a change only where this sees one: a field added to the state must be compared here.
    public static func == (a: PolicyState, b: PolicyState) -> Bool {
        a.apps == b.apps && a.silentSwitch == b.silentSwitch
            && a.systemVolumes.elementsEqual(b.systemVolumes) { $0 == $1 }
            && a.availableRoutes == b.availableRoutes && a.selectedRoute == b.selectedRoute
            && a.privateRoutes == b.privateRoutes
            && a.outsideInterruptions == b.outsideInterruptions && a.ducking == b.ducking
            && a.loudnessDucks == b.loudnessDucks
            && a.fadeMilliseconds == b.fadeMilliseconds && a.nextActivationSequence == b.nextActivationSequence
            && a.show == b.show
    }

    public func app(_ name: String) -> AppSession? { apps.first { $0.name == name } }

    /// Every app's session by name, for callers that look up many (one pass instead of a search
    /// per app).
    public var appsByName: [String: AppSession] {
        Dictionary(apps.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    func index(of name: String) throws(PolicyError) -> Int {
        guard let index = apps.firstIndex(where: { $0.name == name }) else { throw .unknownApp(name) }
        return index
    }

    public func systemVolume(_ route: String) -> Float? { systemVolumes.first { $0.route == route }?.volume }

    /// The route every app plays to: the selected one while it is available, else the newest
    /// available one (last in wins), else none.
    public var currentRoute: String? {
        if let selectedRoute, availableRoutes.contains(selectedRoute) { return selectedRoute }
        return availableRoutes.last
    }

    /// The routes an app's sound goes to now, in session order: the current route, or for a
    /// multiRoute app every available route (those its channel map names, when it has one).
    /// Empty: no route can carry it.
    public func routes(of app: AppSession) -> [String] {
        guard app.configuration.category == .multiRoute else { return currentRoute.map { [$0] } ?? [] }
        let mapped = app.channelMap.map { Set($0.map(\.route)) }
        return systemVolumes.map(\.route).filter { availableRoutes.contains($0) && mapped?.contains($0) != false }
    }

    /// The app that remote commands go to (docs/POLICY.md §5.12): the most recently activated
    /// non-mixable playback app that declared remote commands.
    public var nowPlaying: String? {
        apps.filter { $0.configuration.canOwnRemoteControl && $0.activationSequence != nil }
            .max { $0.activationSequence! < $1.activationSequence! }?.name
    }
}
