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

    /// Found by the chaos run (seed 7 on PipeWire): the selection a route's going clears was
    /// not saved, so a router started again with that route there selected it again, though it
    /// had run unselected since.
    @Test("a selection its route's going clears is saved (the state file holds no selection); a route going that held none saves nothing")
    func clearedSelectionSaved() throws {
        var policy = makePolicy()
        _ = try policy.apply(.selectRoute("headphones"))
        let pulled = try policy.apply(.setRouteAvailable(route: "headphones", false))
        #expect(policy.state.selectedRoute == nil)
        #expect(pulled.contains(.save), "the cleared selection is a setting that changed")
        _ = try policy.apply(.setRouteAvailable(route: "headphones", true))
        let unselected = try policy.apply(.setRouteAvailable(route: "headphones", false))
        #expect(!unselected.contains(.save), "no selection changed")
    }

    @Test("private headphones pulled: what played through them is interrupted (routeDisconnected) and stays silent on the speaker until it activates again")
    func privateRouteGoes() throws {
        var policy = makePolicy(privateRoutes: ["headphones"])
        let dj = AppConfiguration(name: "dj", category: .multiRoute, options: [.mixWithOthers])
        try policy.apply(.register(dj))
        for app in ["music", "game", "dj"] { try policy.apply(.activate(app: app)) }
        _ = try policy.apply(.selectRoute("headphones"))
        let pulled = try policy.apply(.setRouteAvailable(route: "headphones", false))
        #expect(pulled.contains(.notify(.interruption(app: "music", phase: .began, shouldResume: false, reason: .routeDisconnected))))
        #expect(pulled.contains(.notify(.interruption(app: "game", phase: .began, shouldResume: false, reason: .routeDisconnected))))
        #expect(pulled.contains(.notify(.route(reason: .oldDeviceUnavailable, route: "speaker", previous: "headphones"))))
        #expect(policy.state.app("music")?.activity == .interrupted(by: .routeDisconnected("headphones")))
        #expect(policy.mix["music"]?.gain == 0 && policy.mix["game"]?.gain == 0, "silent everywhere")
        #expect(policy.state.app("dj")?.isActive == true, "multiRoute plays on, on the routes that are left")
        // Plugging the headphones back does not bring audio back by itself; activating does.
        _ = try policy.apply(.setRouteAvailable(route: "headphones", true))
        #expect(policy.mix["music"]?.gain == 0)
        _ = try policy.apply(.activate(app: "music"))
        #expect(policy.mix["music"]?.gain == 1)
    }

    @Test("a non-private route that goes away moves the audio to the next route, no pause; a private route that was not current interrupts nobody")
    func publicRouteGoes() throws {
        var policy = makePolicy(privateRoutes: ["speaker"])
        try policy.apply(.activate(app: "music"))
        _ = try policy.apply(.setRouteAvailable(route: "headphones", false))
        _ = try policy.apply(.setRouteAvailable(route: "headphones", true))
        #expect(policy.state.currentRoute == "headphones")
        let speakerGone = try policy.apply(.setRouteAvailable(route: "speaker", false))
        #expect(!speakerGone.contains { if case .notify(.interruption) = $0 { true } else { false } }, "speaker was not current")
        var open = makePolicy()
        try open.apply(.activate(app: "music"))
        _ = try open.apply(.selectRoute("headphones"))
        let pulled = try open.apply(.setRouteAvailable(route: "headphones", false))
        #expect(open.state.app("music")?.isActive == true && open.state.currentRoute == "speaker")
        #expect(pulled.contains(.currentRoute("speaker", rampMilliseconds: 20)))
    }
}
