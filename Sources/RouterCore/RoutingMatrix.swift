import Engine
import Policy

/// Which input channel feeds which output channel at what gain and ramp: the control state
/// turned into the plan compiler's inputs. Pure: built from values, it owns nothing and touches
/// nothing.
///
/// Every app plays to the current route; a route change crossfades at the fade ramp. multiRoute
/// apps play to every available route at once, through their channel map or the default one
/// (`ChannelMap`). Recording apps hear the input route, channel for channel, only while they may
/// (docs/POLICY.md §5.8). Look-ahead routes hear the signal-activated apps (the voices whose sound
/// triggers ducks) late; everything else at once.
struct RoutingMatrix {
    var inputs: [PlanCompiler.Input] = []
    var outputs: [PlanCompiler.Output] = []
    /// The ramp of cells whose feed is gone altogether.
    var rampFrames: Int32
    var lookaheadFrames = 0

    /// An empty matrix (tests and tools fill it in).
    init(rampFrames: Int32, lookaheadFrames: Int = 0) {
        self.rampFrames = rampFrames
        self.lookaheadFrames = lookaheadFrames
    }

    init(apps: [AppState], routes: [RouteState], input: InputRoute, policy: PolicyState, currentRoute: Int?,
         watches: [String: Int32], rampFrames: Int32, lookaheadFrames: Int, loudness: LoudnessMeters? = nil) {
        self.rampFrames = rampFrames
        self.lookaheadFrames = lookaheadFrames
        let sessions = policy.appsByName
        for app in apps {
            let delayed = lookaheadFrames > 0 && sessions[app.name]?.configuration.activation == .signal
            let group = loudness?.group(of: app) ?? -1
            let volume = Self.target(sessions[app.name]?.volume ?? 1, app.volumeChange, rampFrames: rampFrames)
            for (port, slot) in zip(app.ports, app.meterSlots) {
                inputs.append(.init(port: port.handle, meterSlot: slot, watch: watches[app.name] ?? -1, delayed: delayed, tapGroup: group,
                                    volume: volume))
            }
        }
        for (port, slot) in zip(input.ports, input.slots) { inputs.append(.init(port: port.handle, meterSlot: slot)) }

        // A cell moves at the ramp of whatever changed: the app's (ducking has its own attack and
        // release), else the route's, else the default. Volumes are the stages' (`target`), not
        // the cells'.
        let available = Set(policy.availableRoutes)
        for (r, route) in routes.enumerated() {
            var defaultMaps: [Int: [[ChannelMap.Feed]]] = [:]
            for (k, port) in route.ports.enumerated() {
                var feeds: [PlanCompiler.Feed] = []
                for app in apps where !app.ports.isEmpty {
                    let session = sessions[app.name]
                    let channels: [ChannelMap.Feed]
                    if session?.configuration.category == .multiRoute {
                        guard available.contains(route.name) else { continue }
                        if let links = session?.channelMap {
                            channels = links.filter { $0.route == route.name && $0.routeChannel == k + 1 && $0.appChannel <= app.ports.count }
                                .map { ChannelMap.Feed(appChannel: $0.appChannel - 1, gain: 1) }
                        } else {
                            channels = Self.defaultMap(&defaultMaps, app.ports.count, route.ports.count)[k]
                        }
                    } else {
                        guard r == currentRoute else { continue }
                        channels = Self.defaultMap(&defaultMaps, app.ports.count, route.ports.count)[k]
                    }
                    let ramp = app.pendingRamp ?? route.pendingRamp ?? rampFrames
                    for feed in channels {
                        feeds.append(.init(input: app.meterSlots[feed.appChannel], gain: (app.routeGains[route.name] ?? app.gain) * feed.gain, rampFrames: ramp))
                    }
                }
                outputs.append(.init(port: port.handle, meterSlot: route.meterSlots[k], feeds: feeds,
                                     delayed: lookaheadFrames > 0 && route.lookahead > 0, tapGroup: loudness?.group(of: route) ?? -1,
                                     volume: Self.target(route.gain, route.volumeChange, rampFrames: rampFrames)))
            }
        }
        for app in apps where !app.capturePorts.isEmpty {
            let open = sessions[app.name]?.receivesInput == true
            for (k, port) in app.capturePorts.enumerated() {
                let feeds: [PlanCompiler.Feed] = open && k < input.slots.count ? [.init(input: input.slots[k], gain: 1, rampFrames: rampFrames)] : []
                outputs.append(.init(port: port.handle, meterSlot: app.captureSlots[k], feeds: feeds))
            }
        }
    }

    /// A volume stage's target: where the volume is, moving as its latest change says. Before
    /// any change (serial 0: an app or route just added) the fast fade: a stage that goes on from
    /// an earlier owner of its port (an app that takes back its ports) must not step.
    static func target(_ gain: Float, _ change: StageChange, rampFrames: Int32) -> VolumeTarget {
        VolumeTarget(gain: gain, rampFrames: change.serial == 0 ? rampFrames : change.rampFrames, curve: change.curve, serial: change.serial)
    }

    private static func defaultMap(_ cache: inout [Int: [[ChannelMap.Feed]]], _ appChannels: Int, _ routeChannels: Int) -> [[ChannelMap.Feed]] {
        if let map = cache[appChannels] { return map }
        let map = ChannelMap.feeds(appChannels: appChannels, routeChannels: routeChannels)
        cache[appChannels] = map
        return map
    }
}
