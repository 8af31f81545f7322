/// Whether an interruption starts or ends.
public enum InterruptionPhase: String, Sendable {
    case began, ended
}

/// Why an interruption happened (docs/OSC.md, `/duckrouter/interruption`).
///
/// A phone also has `builtInMicMuted` (its microphone muted by a hardware switch or a closed
/// cover). A JACK rig has no such switch that JACK reports: a muted microphone is a mixer
/// control of the sound card, outside the JACK graph, and its ports stay and carry silence. The
/// router cannot tell it from a quiet room, so that reason is never sent and is not declared.
public enum InterruptionReason: String, CaseIterable, Sendable {
    /// Another app, a spoken-audio interrupter or an outside interruption (§5.2, §5.5, §5.11).
    case `default`
    /// A private route the app played through went away (§5.9).
    case routeDisconnected
}

/// Where a scene's recall is (`/duckrouter/scene`).
public enum ScenePhase: String, Sendable {
    case began, done
}

/// Why a route changed (docs/OSC.md, `/duckrouter/route`; docs/POLICY.md, "Route notifications").
public enum RouteChangeReason: String, CaseIterable, Sendable {
    /// A route became available and is now the current one (last in wins).
    case newDeviceAvailable
    /// The current route went away; the next one (or none) is current.
    case oldDeviceUnavailable
    /// A person selected the route.
    case override
    /// An app's category change moved it to other routes (to or from multiRoute); to that app.
    case categoryChange
    /// An app activated and no route can carry it; to that app.
    case noSuitableRouteForCategory
}

/// What apps and control surfaces are told (the `/duckrouter/...` notifications of docs/OSC.md).
public enum PolicyNotification: Equatable, Sendable {
    case interruption(app: String, phase: InterruptionPhase, shouldResume: Bool, reason: InterruptionReason)
    /// The app's audio state and its audible gain in dB (-infinity when silent).
    /// Why it is active goes along (nil when it is not active), and who holds it back (a ducked or
    /// interrupted app).
    case appState(app: String, state: AppAudioState, gainDecibels: Double, reason: ActivationReason? = nil, heldBy: HeldBack? = nil)
    case silentSwitch(Bool)
    /// A route's system volume as a slider position.
    case systemVolume(route: String, volume: Double)
    case remote(app: String, command: RemoteCommand, value: Double?)
    /// The current output route changed (`route` or `previous` is empty when there is or was none).
    /// With `app`, that app's own routes changed (`categoryChange`) or none can carry it
    /// (`noSuitableRouteForCategory`): `route` and `previous` list its routes, comma-separated.
    case route(reason: RouteChangeReason, route: String, previous: String, app: String? = nil)
    /// An app's duck was released after `unduckAfter` of silence (true) or holds again (false).
    case duckReleased(app: String, released: Bool)
    /// A scene's recall began, or its fade is done.
    case scene(name: String, phase: ScenePhase)
    /// A cue was fired: its number (from 1) and its scene.
    case cue(number: Int, scene: String)
    /// The playhead moved: the cue the next GO fires, by number and scene (0 and "": past the end).
    case playhead(number: Int, scene: String)

    /// The app the notification is about, which also receives it at its own address.
    public var app: String? {
        switch self {
        case let .interruption(app, _, _, _), let .appState(app, _, _, _, _), let .remote(app, _, _), let .duckReleased(app, _): app
        case let .route(_, _, _, app): app
        case .silentSwitch, .systemVolume, .scene, .cue, .playhead: nil
        }
    }
}

/// What the router must do after an event, in order.
public enum PolicyEffect: Equatable, Sendable {
    /// A new app: register its ports.
    case appAdded(AppConfiguration)
    /// An app's configuration changed.
    case appChanged(AppConfiguration)
    /// An app is gone: fade it out and remove its ports.
    case appRemoved(String)
    /// Move the app's place in the mix (linear: its ducking and whether it is heard at all; not
    /// its volume, `appVolume`) to `gain` over the ramp; on the routes in `routeGains` (a
    /// ducking rule for that route), to the gain given there.
    case appGain(app: String, gain: Float, routeGains: [String: Float] = [:], rampMilliseconds: Double)
    /// Move the app's volume (linear) to `gain` over the ramp, along the curve. The router applies
    /// it on its own, so a volume's fade and a duck each keep their ramp.
    case appVolume(app: String, gain: Float, rampMilliseconds: Double, curve: FadeCurve = .linear)
    /// Move a route's system volume (linear) over the ramp, along the curve.
    case systemVolume(route: String, gain: Float, rampMilliseconds: Double, curve: FadeCurve = .linear)
    /// A multiRoute app's channel map changed (nil: every channel to every available route).
    case channelMap(app: String, [ChannelLink]?)
    /// Every app now plays to `route` (nil: no route is available, so nothing is heard);
    /// crossfade over the ramp.
    case currentRoute(String?, rampMilliseconds: Double)
    case notify(PolicyNotification)
    /// A scene was recalled: its fade runs for `milliseconds` from when the change is heard, and
    /// the router then tells the policy (`sceneFadeDone(recall:)`). `continueAfter`: the cue list
    /// goes on by itself (`cueGo`) that long after the fade (an auto-continue cue). `skipped`:
    /// the parts that could not apply now (an app not registered, a route not available, an
    /// activation refused), in words for the log.
    case sceneFade(name: String, recall: Int, milliseconds: Double, continueAfter: Double?, skipped: [String])
    /// Persistent settings changed: save the session.
    case save
}

/// Who holds an app back, and by which rule: the "why" of a ducked or interrupted app
/// (`/duckrouter/app`, `/state`; docs/POLICY.md, "Why is this ducked?").
public struct HeldBack: Equatable, Sendable {
    /// The app that ducks or interrupts it, the outside interruption's source, or the route that
    /// went away.
    public var by: String
    /// For a duck: `session`, `pair` or `route` (where the rule came from). For an
    /// interruption: `app`, `spokenAudio`, `outside` or `routeDisconnected`.
    public var rule: String
    /// The route the (deepest) duck is on.
    public var route: String?
    /// A loudness-targeted duck's target, LU under the ducker.
    public var target: Double?
    /// The loudness difference heard now, LU (ducker minus ducked app, with the duck): filled in
    /// by the router, which measures it.
    public var difference: Double?

    public init(by: String, rule: String, route: String? = nil, target: Double? = nil, difference: Double? = nil) {
        self.by = by
        self.rule = rule
        self.route = route
        self.target = target
        self.difference = difference
    }
}
