/// An app's place in the mix.
public struct AppMix: Equatable, Sendable {
    /// Linear gain including volume and ducking on the app's main route (the current one, or a
    /// multiRoute app's first); 0 when not heard.
    public var gain: Float
    /// The gain on each route it plays to where that differs from `gain` (a rule for one route).
    public var routeGains: [String: Float] = [:]
    /// `gain` without the volume (the mix cells' part: ducking, and whether it is heard), and
    /// the routes where that differs.
    public var factor: Float = 0
    public var routeFactors: [String: Float] = [:]
    public var state: AppAudioState
    /// The deepest ducking factor on any of its routes (linear, 1 when not ducked) and the rule
    /// that sets it.
    public var duck: Float
    public var duckRule: AppliedDuckingRule?
    /// Each route it is ducked on, with the factor and the rule (`""`: no route carries it now).
    public var ducks: [String: RouteDuck] = [:]

    /// The gain on `route`.
    public func gain(on route: String) -> Float { routeGains[route] ?? gain }
}

/// How far an app is ducked on one route, and by which rule.
public struct RouteDuck: Equatable, Sendable {
    public var factor: Float
    public var rule: AppliedDuckingRule
}

/// The mix a state implies.
struct Mix {
    var apps: [String: AppMix] = [:]

    init(of state: PolicyState) {
        let duckers = state.duckers
        let current = state.currentRoute
        for app in state.apps {
            // A signal-activated app is heard before it is active (its first syllable must not be
            // lost), whenever it could be activated now.
            let listening = state.isListening(app)
            let heard = app.isActive || listening
            // Only a multiRoute app plays to several routes; every other plays to the current one
            // (worked out once: this runs for every app at every event, hundreds on a big rig).
            let multi = app.configuration.category == .multiRoute
            let routes = multi ? state.routes(of: app) : []
            let main = multi ? (routes.first { $0 == current } ?? routes.first) : current
            var ducks: [String: RouteDuck] = [:]
            // The deepest duck, the first in session route order on a tie.
            var deepest: RouteDuck?
            if heard && !duckers.isEmpty {
                func duck(on route: String?) -> RouteDuck? {
                    var deepest: RouteDuck?
                    for ducker in duckers where ducker.name != app.name {
                        let rule = state.ducking.rule(ducker: ducker.name, ducked: app.name, route: route)
                        var decibels = rule.level
                        if rule.target != nil, let route, let measured = state.loudnessDucks[DuckPair(ducker: ducker.name, ducked: app.name, route: route)] {
                            // Within the rule as it is now (its floor may have moved since).
                            decibels = min(0, max(measured, rule.floor))
                        }
                        let factor = Decibels.linear(Float(decibels))
                        if factor < (deepest?.factor ?? 1) { deepest = RouteDuck(factor: factor, rule: rule) }
                    }
                    return deepest
                }
                if multi && !routes.isEmpty {
                    for route in routes {
                        guard let found = duck(on: route) else { continue }
                        ducks[route] = found
                        if found.factor < (deepest?.factor ?? .infinity) { deepest = found }
                    }
                } else if let found = duck(on: main) {
                    ducks[main ?? ""] = found
                    deepest = found
                }
            }
            let duck = deepest?.factor ?? 1
            let silenced = heard && state.silentSwitch && app.configuration.category.obeysSilentSwitch
            // Muted: silent, and ducking no one (`duckers`), whatever its state.
            let audible = heard && !silenced && !app.settings.muted
            let mixState: AppAudioState = switch app.activity {
            case .interrupted: .interrupted
            case .inactive: listening ? (silenced ? .silenced : .listening) : .inactive
            case .active: silenced ? .silenced : (duck < 1 ? .ducked : .active)
            }
            let factor: Float = audible ? ducks[main ?? ""]?.factor ?? 1 : 0
            let gain = app.volume * factor
            var routeGains: [String: Float] = [:], routeFactors: [String: Float] = [:]
            if audible && multi && !ducks.isEmpty {
                for route in routes where route != main {
                    let routeFactor = ducks[route]?.factor ?? 1
                    if routeFactor != factor { routeFactors[route] = routeFactor }
                    let routeGain = app.volume * routeFactor
                    if routeGain != gain { routeGains[route] = routeGain }
                }
            }
            apps[app.name] = AppMix(gain: gain, routeGains: routeGains, factor: factor, routeFactors: routeFactors,
                                    state: mixState, duck: duck, duckRule: deepest?.rule, ducks: ducks)
        }
    }
}
