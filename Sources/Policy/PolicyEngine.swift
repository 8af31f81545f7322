/// The rules of audio sessions (docs/POLICY.md; the §5.1 to §5.13 this module's comments cite are
/// its rules' numbers) as a pure function of events: no C, no I/O, no clock. `apply` turns an
/// event into a new state and the effects the router carries out (gain targets with ramp times,
/// notifications, save requests), or throws and changes nothing.
public struct PolicyEngine: Sendable {
    public private(set) var state: PolicyState

    /// - Parameters:
    ///   - routes: the session's routes with their system volumes (linear). All start available
    ///     (the router then reports those whose device is missing).
    ///   - fallback: the route current at start (the built-in one); nil: the first.
    ///   - privateRoutes: routes whose audio must not fall back to another when they go (headphones).
    ///   - fadeMilliseconds: the fast fade for starts, stops and volume changes.
    public init(routes: [(name: String, volume: Float)] = [], ducking: DuckingSettings = DuckingSettings(),
                fadeMilliseconds: Double = 20, silentSwitch: Bool = false, fallback: String? = nil,
                privateRoutes: Set<String> = [], show: Show = Show()) {
        state = PolicyState()
        state.privateRoutes = privateRoutes.intersection(routes.map(\.name))
        state.systemVolumes = routes.map { ($0.name, $0.volume) }
        // Last in wins: the fallback counts as the newest at start, so it is current until a
        // route becomes available (or is selected) after it.
        let first = fallback ?? routes.first?.name
        state.availableRoutes = routes.map(\.name).filter { $0 != first } + (first.map { [$0] } ?? [])
        state.ducking = ducking
        state.fadeMilliseconds = fadeMilliseconds
        state.silentSwitch = silentSwitch
        state.show = show
    }

    /// Applies one event. On error the state is exactly as it was.
    @discardableResult
    public mutating func apply(_ event: PolicyEvent) throws(PolicyError) -> [PolicyEffect] {
        var transition = Transition(state)
        try transition.apply(event)
        transition.forgetEndedLoudnessDucks()
        state = transition.state
        return transition.effects(from: Mix(of: transition.before))
    }

    /// The audible gain (linear) and state of every app, as the mix should be now.
    public var mix: [String: AppMix] { Mix(of: state).apps }
}
