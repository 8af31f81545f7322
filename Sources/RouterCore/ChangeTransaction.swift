import Policy
import SessionStore

/// The checking half of a change: a batch of changes tried on a copy of the policy. Nothing is
/// changed by building one; the router commits it (ports, policy, plan) or drops it whole.
///
/// Owns: the trial policy, the effects in order, the apps the batch adds and the routes it
/// enables or disables. Must not touch: ports, plans or the live policy. Control queue only.
struct ChangeTransaction {
    private(set) var policy: PolicyEngine
    private(set) var effects: [PolicyEffect] = []
    /// Apps the batch registers, with their channel counts.
    private(set) var additions: [(name: String, channels: Int)] = []
    /// What `/route/<route>/available` said, by route index.
    private(set) var enabled: [(route: Int, Bool)] = []

    /// Applies `changes` in order to a copy of `policy`. A refused change throws (`.policy` for a
    /// single change, `.batch` naming it otherwise), and nothing is kept.
    /// - Parameter fromGraph: the change reports what the JACK graph shows (route presence).
    init(_ changes: [Router.Change], policy: PolicyEngine, inventory: PortInventory,
         defaultChannelCount: Int, fromGraph: Bool) throws(RouterError) {
        self.policy = policy
        for (index, change) in changes.enumerated() {
            var event = change.event
            // `/route/<route>/available` speaks for devices JACK cannot see: a route is available
            // while that says yes and its ports exist.
            if !fromGraph, case let .setRouteAvailable(route, flag) = event, let r = inventory.routeIndex(route) {
                enabled.append((r, flag))
                event = .setRouteAvailable(route: route, flag && inventory.routes[r].reachable)
            }
            if case let .setChannelMap(app, links?) = event {
                let appChannels = additions.last { $0.name == app }?.channels ?? inventory.apps.first { $0.name == app }?.channelCount
                for link in links {
                    let routeChannels = inventory.routes.first { $0.name == link.route }?.channelCount
                    guard appChannels.map({ link.appChannel <= $0 }) ?? true, routeChannels.map({ link.routeChannel <= $0 }) ?? true else {
                        throw .refusal(PolicyError(.badArgument, "channel map \(link): '\(app)' has \(appChannels ?? 0) channels, '\(link.route)' \(routeChannels ?? 0)"),
                                       change: index, of: changes.count)
                    }
                }
            }
            let applied: [PolicyEffect]
            do throws(PolicyError) { applied = try self.policy.apply(event) } catch {
                throw .refusal(error, change: index, of: changes.count)
            }
            for case let .appAdded(configuration) in applied {
                let channels = change.channelCount ?? defaultChannelCount
                guard (1...Session.maximumChannels).contains(channels) else {
                    throw .refusal(PolicyError(.badArgument, "channel count: expected 1 to \(Session.maximumChannels), got \(channels)"),
                                   change: index, of: changes.count)
                }
                additions.append((configuration.name, channels))
            }
            effects += applied
        }
    }
}
