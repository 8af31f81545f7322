import Policy
import Testing

/// Route choice as people expect it from phones: the built-in route at start, last in wins, a
/// person's selection wins until its route goes away.
@Suite("Route selection")
struct RouteSelectionTests {
    @Test("the fallback (first) route is current at start, even with other routes present")
    func fallbackAtStart() {
        #expect(makePolicy().state.currentRoute == "speaker")
        let policy = PolicyEngine(routes: [("hdmi", 1), ("speaker", 1)], fallback: "speaker")
        #expect(policy.state.currentRoute == "speaker")
    }

    @Test("a route that becomes available wins (newDeviceAvailable); when it goes the previous one is back (oldDeviceUnavailable)")
    func lastInWins() throws {
        var policy = makePolicy()
        _ = try policy.apply(.setRouteAvailable(route: "headphones", false))
        #expect(policy.state.currentRoute == "speaker")
        let plugged = try policy.apply(.setRouteAvailable(route: "headphones", true))
        #expect(plugged.contains(.currentRoute("headphones", rampMilliseconds: 20)))
        #expect(plugged.contains(.notify(.route(reason: .newDeviceAvailable, route: "headphones", previous: "speaker"))))
        let pulled = try policy.apply(.setRouteAvailable(route: "headphones", false))
        #expect(pulled.contains(.notify(.route(reason: .oldDeviceUnavailable, route: "speaker", previous: "headphones"))))
    }

    @Test("a selection wins (override) until its route goes away; selecting an unknown or absent route is refused")
    func selection() throws {
        var policy = makePolicy()
        let selected = try policy.apply(.selectRoute("headphones"))
        #expect(selected.contains(.notify(.route(reason: .override, route: "headphones", previous: "speaker"))))
        #expect(selected.contains(.save))
        _ = try policy.apply(.setRouteAvailable(route: "headphones", false))
        #expect(policy.state.currentRoute == "speaker" && policy.state.selectedRoute == nil)
        #expect(throws: PolicyError(.unknownRoute, "route 'headphones' is not available")) { try policy.apply(.selectRoute("headphones")) }
        #expect(throws: PolicyError(.unknownRoute, "no route named 'hdmi'")) { try policy.apply(.selectRoute("hdmi")) }
        let unchanged = try policy.apply(.setRouteAvailable(route: "speaker", true))
        #expect(unchanged.isEmpty, "already available: nothing happens")
    }
}
