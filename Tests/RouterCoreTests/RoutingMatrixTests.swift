import Engine
import JackHost
import Policy
import SessionStore
import Testing
@testable import RouterCore

/// The control state turned into the compiler's inputs: which app channel reaches which route
/// channel, at what gain, delayed or not.
@Suite("Routing matrix")
struct RoutingMatrixTests {
    /// Ports whose handles are distinct tokens (FNV-1a of the name), never dereferenced.
    static func ports(_ base: String, _ count: Int) -> [JackPort] {
        (1...count).map { n in
            let name = "duckrouter:\(base)_\(n)"
            let hash = name.utf8.reduce(UInt64(14695981039346656037)) { ($0 ^ UInt64($1)) &* 1099511628211 }
            return JackPort(detached: UnsafeMutableRawPointer(bitPattern: UInt(hash >> 20) | 0x1000)!, name: name)
        }
    }

    static func app(_ name: String, channels: Int, slot: Int32, gain: Float = 1) -> AppState {
        var app = AppState(name: name, channelCount: channels, meterSlots: (0..<Int32(channels)).map { slot + $0 }, connect: [])
        app.ports = ports("\(name)_in", channels)
        app.gain = gain
        return app
    }

    static func route(_ name: String, channels: Int, slot: Int32, gain: Float = 1, lookahead: Double = 0) -> RouteState {
        var route = RouteState(name: name, channelCount: channels, meterSlots: (0..<Int32(channels)).map { slot + $0 },
                               destinations: [], gain: gain, lookahead: lookahead)
        route.ports = ports("\(name)_out", channels)
        return route
    }

    static func policy(_ apps: [AppConfiguration], routes: [String], map: (String, [ChannelLink])? = nil) throws -> PolicyState {
        var policy = PolicyEngine(routes: routes.map { (name: $0, volume: Float(1)) }, fallback: routes.first)
        for app in apps { try policy.apply(.register(app)) }
        if let map { try policy.apply(.setChannelMap(app: map.0, map.1)) }
        return policy.state
    }

    /// (route output slot, app input slot) → gain.
    static func gains(_ matrix: RoutingMatrix) -> [String: Float] {
        var result: [String: Float] = [:]
        for output in matrix.outputs { for feed in output.feeds { result["\(output.meterSlot)<\(feed.input)", default: 0] += feed.gain } }
        return result
    }

    @Test("every app plays to the current route only, at app gain × route gain")
    func currentRouteOnly() throws {
        let apps = [Self.app("music", channels: 2, slot: 0, gain: 0.5)]
        let routes = [Self.route("speaker", channels: 2, slot: 0, gain: 0.8), Self.route("phones", channels: 2, slot: 2)]
        let state = try Self.policy([AppConfiguration(name: "music", category: .playback)], routes: ["speaker", "phones"])
        let matrix = RoutingMatrix(apps: apps, routes: routes, input: InputRoute(), policy: state, currentRoute: 1,
                                   watches: [:], rampFrames: 960, lookaheadFrames: 0)
        #expect(Self.gains(matrix) == ["2<0": 1 * 0.5, "3<1": 0.5])
        #expect(matrix.outputs.count == 4, "every route output is written, fed or not")
        #expect(matrix.inputs.map(\.meterSlot) == [0, 1])
    }

    @Test("a multiRoute app plays to every available route through its channel map; without one, by the default map")
    func multiRoute() throws {
        let apps = [Self.app("dj", channels: 2, slot: 0), Self.app("synth", channels: 1, slot: 2)]
        let routes = [Self.route("pa", channels: 2, slot: 0), Self.route("cue", channels: 2, slot: 2)]
        let state = try Self.policy([AppConfiguration(name: "dj", category: .multiRoute), AppConfiguration(name: "synth", category: .multiRoute)],
                                    routes: ["pa", "cue"],
                                    map: ("dj", [ChannelLink(appChannel: 1, route: "cue", routeChannel: 1),
                                                 ChannelLink(appChannel: 2, route: "pa", routeChannel: 1),
                                                 ChannelLink(appChannel: 2, route: "pa", routeChannel: 2)]))
        let matrix = RoutingMatrix(apps: apps, routes: routes, input: InputRoute(), policy: state, currentRoute: 0,
                                   watches: [:], rampFrames: 960, lookaheadFrames: 0)
        #expect(Self.gains(matrix) == ["2<0": 1, "0<1": 1, "1<1": 1, "0<2": 1, "1<2": 1, "2<2": 1, "3<2": 1])
    }

    @Test("look-ahead: only signal-activated apps' inputs are delayed, only look-ahead routes' outputs hear them late")
    func lookahead() throws {
        let apps = [Self.app("mic", channels: 1, slot: 0), Self.app("music", channels: 2, slot: 1)]
        let routes = [Self.route("air", channels: 2, slot: 0, lookahead: 30), Self.route("monitor", channels: 2, slot: 2)]
        var mic = AppConfiguration(name: "mic", category: .playback, options: [.duckOthers])
        mic.activation = .signal
        let state = try Self.policy([mic, AppConfiguration(name: "music", category: .playback, options: [.mixWithOthers])], routes: ["air", "monitor"])
        let matrix = RoutingMatrix(apps: apps, routes: routes, input: InputRoute(), policy: state, currentRoute: 0,
                                   watches: ["mic": 7], rampFrames: 960, lookaheadFrames: 1440)
        #expect(matrix.inputs.map(\.delayed) == [true, false, false])
        #expect(matrix.inputs.map(\.watch) == [7, -1, -1])
        #expect(matrix.outputs.map(\.delayed) == [true, true, false, false])
        #expect(matrix.lookaheadFrames == 1440)
    }

    @Test("a recording app hears the input route on its capture outputs only while it may")
    func capture() throws {
        var recorder = Self.app("rec", channels: 1, slot: 0)
        recorder.capturePorts = Self.ports("rec_capture", 2)
        recorder.captureSlots = [4, 5]
        let input = InputRoute(sources: ["system:capture_1", "system:capture_2"], ports: Self.ports("input", 2), slots: [10, 11])
        var policy = PolicyEngine(routes: [(name: "speaker", volume: 1)], fallback: "speaker")
        try policy.apply(.register(AppConfiguration(name: "rec", category: .record)))
        let closed = RoutingMatrix(apps: [recorder], routes: [Self.route("speaker", channels: 2, slot: 0)], input: input,
                                   policy: policy.state, currentRoute: 0, watches: [:], rampFrames: 960, lookaheadFrames: 0)
        #expect(closed.outputs.filter { [4, 5].contains($0.meterSlot) }.allSatisfy { $0.feeds.isEmpty })
        try policy.apply(.activate(app: "rec"))
        let open = RoutingMatrix(apps: [recorder], routes: [Self.route("speaker", channels: 2, slot: 0)], input: input,
                                 policy: policy.state, currentRoute: 0, watches: [:], rampFrames: 960, lookaheadFrames: 0)
        #expect(Self.gains(open)["4<10"] == 1 && Self.gains(open)["5<11"] == 1)
    }
}
