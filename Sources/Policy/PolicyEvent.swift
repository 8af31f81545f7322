/// A volume as a person sets it: a slider position or a level in dB.
public enum Volume: Equatable, Sendable {
    /// 0...1 with a cubic taper (0.5 is about -18 dB).
    case position(Double)
    case decibels(Double)
}

/// A ducking setting changed at run time.
public enum DuckingParameter: Equatable, Sendable {
    /// dB, -144 to 0.
    case level(Double)
    /// Milliseconds, 0 to 60,000.
    case attack(Double)
    case release(Double)
    /// LU under the ducker that ducks aim at, 0 to 60; nil: ducks are by level.
    case target(Double?)
    /// dB, -144 to 0: the deepest a loudness-targeted duck goes.
    case floor(Double)
}

/// Everything that can happen to the policy. Events come from OSC, the session file and the JACK
/// graph; the policy turns each into a new state and effects, or refuses it and changes nothing.
public enum PolicyEvent: Equatable, Sendable {
    /// Create an app, or reconfigure it when it exists (`/app/register`).
    case register(AppConfiguration)
    /// Change an existing app's category, options and mode (`/app/<app>/category`).
    case setCategory(app: String, category: Category, options: Set<CategoryOption>, mode: Mode)
    case unregister(app: String)
    case activate(app: String)
    /// `notifyOthers`: the apps it interrupted may resume.
    case deactivate(app: String, notifyOthers: Bool)
    /// A signal-activated app's input rose above its threshold for the attack time (true), or
    /// stayed below it for the hold time (false; the apps it interrupted may resume).
    case signal(app: String, active: Bool)
    /// An active ducking app has been silent for its `unduckAfter` time (true: its duck is
    /// released), or sounds again (false: it ducks again).
    case releaseDuck(app: String, Bool)
    /// What activates the app from now on, and (when given) how its sound is judged.
    case setActivation(app: String, Activation, SignalDetection?)
    case outsideInterruptionBegan(source: String)
    case outsideInterruptionEnded(source: String, shouldResume: Bool)
    case setSilentSwitch(Bool)
    case setSystemVolume(route: String, Volume)
    case setAppVolume(app: String, Volume)
    /// A person's setting of an app (`AppSettings`), such as mute.
    case setAppSetting(app: String, AppSettings.Change)
    case setDucking(DuckingParameter)
    /// Replaces the per-pair ducking rules (a session file reloaded).
    case setDuckingRules([DuckingRule])
    /// Adds a per-pair rule, or replaces the one for the same pair and route (`/duck/rule`).
    case setDuckingRule(DuckingRule)
    /// Removes the per-pair rule for that pair and route (nil: the rule for every route).
    case removeDuckingRule(ducker: String, ducked: String, route: String?)
    /// The router's loudness loop measured how deep loudness-targeted ducks must be (dB, by pair
    /// and route; clamped to each rule's floor and 0). Pairs that no longer duck are passed over.
    case setLoudnessDucks([DuckPair: Double])
    case setRemoteCommands(app: String, Set<RemoteCommand>)
    /// A remote command for the now-playing app, with its optional value.
    case remoteCommand(RemoteCommand, value: Double?)
    /// A person picks the output route (`/route/select`); it wins until it goes away.
    case selectRoute(String)
    /// A route's device appeared or went away (`/route/<route>/available`, or the JACK graph).
    case setRouteAvailable(route: String, Bool)
    /// Which app channel feeds which route channel, for a multiRoute app (§5.10); nil: every
    /// channel to every available route, as a normal app plays to the current one.
    case setChannelMap(app: String, [ChannelLink]?)
    /// Recall a scene (`/scene/recall`): its settings at once, its volumes over the fade (the
    /// recall's, else the scene's) along the curve (the recall's, else the scene's).
    case recallScene(String, fade: Double?, curve: FadeCurve?)
    /// Store the settings as they are as a scene (`/scene/store`): every app and route but the
    /// recall-safe ones, or only the apps and routes named.
    case storeScene(String, only: [String]?)
    /// Delete a stored scene (a session file's scene of that name is the one again).
    case deleteScene(String)
    /// Fire the cue at the playhead (`/cue/go`).
    case cueGo
    /// Move the playhead back one cue, recalling nothing (`/cue/back`).
    case cueBack
    /// Move the playhead to a cue, recalling nothing (`/cue/goto`).
    case cueGoto(CuePlace)
    /// The scenes, recall-safe list and cues a session file declares (a reload); stored scenes
    /// are kept, and the playhead as far as the new list has room.
    case setShow(Show)
    /// The fade of the recall with that serial (`PolicyEffect.sceneFade`) has run its time: the
    /// router's clock says so. Nothing happens if a later recall took over.
    case sceneFadeDone(recall: Int)
}

/// A place in the cue list, as `/cue/goto` names it.
public enum CuePlace: Equatable, Sendable {
    /// Counting from 1, as a cue sheet does.
    case number(Int)
    /// The first cue of that scene.
    case scene(String)
}

extension PolicyEvent {
    /// The app the event acts on (nil: none, or every app alike). Every case is listed, with no
    /// default: a new event must say, so a check that follows it (ownership, the timed changes
    /// withdrawn with an app) cannot miss one.
    public var app: String? {
        switch self {
        case let .register(configuration): configuration.name
        case let .setCategory(app, _, _, _), let .unregister(app), let .activate(app), let .deactivate(app, _),
             let .signal(app, _), let .releaseDuck(app, _), let .setActivation(app, _, _), let .setAppVolume(app, _),
             let .setRemoteCommands(app, _), let .setChannelMap(app, _), let .setAppSetting(app, _):
            app
        case .outsideInterruptionBegan, .outsideInterruptionEnded, .setSilentSwitch, .setSystemVolume, .setDucking,
             .setDuckingRules, .setDuckingRule, .removeDuckingRule, .setLoudnessDucks, .remoteCommand, .selectRoute,
             .setRouteAvailable, .recallScene, .storeScene, .deleteScene, .cueGo, .cueBack, .cueGoto, .setShow, .sceneFadeDone:
            nil
        }
    }
}

/// One line of a multiRoute app's channel map: app channel → route channel (both from 1).
public struct ChannelLink: Hashable, Sendable, CustomStringConvertible {
    public var appChannel: Int
    public var route: String
    public var routeChannel: Int

    public init(appChannel: Int, route: String, routeChannel: Int) {
        self.appChannel = appChannel
        self.route = route
        self.routeChannel = routeChannel
    }

    /// `"1>headphones:2"`-like text for messages: app channel, then `route:channel`.
    public var description: String { "\(appChannel) → \(route):\(routeChannel)" }
}
