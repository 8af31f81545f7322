@testable import OSCControl
import Policy
import SessionStore
import Testing

/// `/state`'s app and route are forms of their models: every field of AppConfiguration and
/// AppSession, and of a session's route, is shown there under a name, or is named here as not
/// shown (with why). A field added to a model fails this test until someone decides whether
/// `/state` shows it.
@Suite("/state's forms of the app and the route")
struct StateDocumentFormTests {
    static func labels(_ value: Any) -> Set<String> { Set(Mirror(reflecting: value).children.compactMap(\.label)) }

    /// The app model's fields and `/state`'s name for each (nil: not shown, and why).
    static let configuration: [String: String?] = [
        "name": "name", "category": "category", "options": "options", "mode": "mode",
        "remoteCommands": "remote", "resume": "resume", "activation": "activation",
    ]
    static let session: [String: String?] = [
        "configuration": nil,                  // its fields, above
        "activity": "state",                   // with the mix: `ducked`, `silenced`; and `interruptedBy`
        "volume": "volume",                    // and `gainDb`
        "channelMap": "channelmap",
        "activatedBy": "activeBecause",
        "duckReleased": "duckReleased",
        "settings": "settings",                // a person's settings, whole: `muted`
        "signal": nil,                         // /app/<app>/activation answers it
        "activationSequence": nil,             // internal order; Now Playing (`nowPlaying`) is what it decides
        "activatedByRequest": nil,             // internal: whether a recording app hears its input
    ]
    /// What `/state`'s app shows besides the model's fields: the router's and the OSC server's.
    static let besides: Set<String> = ["interruptedBy", "gainDb", "ports", "owner", "notify", "why", "ducking"]

    @Test("every field of AppConfiguration and AppSession is shown in /state's app, or named as not shown")
    func appFields() throws {
        var policy = PolicyEngine(routes: [("speaker", 1)])
        try policy.apply(.register(AppConfiguration(name: "x", category: .playback)))
        let app = try #require(policy.state.app("x"))
        #expect(Self.labels(app.configuration) == Set(Self.configuration.keys))
        #expect(Self.labels(app) == Set(Self.session.keys))
        let shown = StateDocument.App(name: "x", category: "playback", options: [], mode: "default", remote: [], resume: "app",
                                      state: "inactive", interruptedBy: nil, activation: "osc", activeBecause: nil, duckReleased: false,
                                      volume: 1, gainDb: 0, ports: [], owner: nil, notify: nil, channelmap: nil, why: "", ducking: nil, settings: AppSettings())
        let named = Set(Array(Self.configuration.values) + Array(Self.session.values)).compactMap { $0 }
        #expect(Self.labels(shown) == Set(named).union(Self.besides), "/state's app has exactly the model's fields shown, and the others it names")
    }

    /// The route model's fields and `/state`'s name for each (nil: not shown, and why).
    static let route: [String: String?] = [
        "name": "name", "ports": "ports",
        "isPrivate": nil,                      // the session file's declaration: what it does shows as apps paused
        "isBuiltIn": nil,                      // the session file's declaration: the fallback route
        "lookahead": nil,                      // the session file's; shows in `latencyMs`
        "remote": nil,                         // the session file's; a watched far end shows in `farEndAnswers`
    ]
    /// What `/state`'s route shows besides: the JACK graph's and the policy's.
    static let routeBesides: Set<String> = ["destinations", "available", "farEndAnswers", "latencyMs", "volume", "gainDb"]

    @Test("every field of a session's route is shown in /state's route, or named as not shown")
    func routeFields() {
        #expect(Self.labels(Session.Route(name: "speaker", ports: [])) == Set(Self.route.keys))
        let shown = StateDocument.Route(name: "speaker", ports: [], destinations: [], available: true, farEndAnswers: nil, latencyMs: nil,
                                        volume: 1, gainDb: 0)
        #expect(Self.labels(shown) == Set(Self.route.values.compactMap { $0 }).union(Self.routeBesides))
    }
}
