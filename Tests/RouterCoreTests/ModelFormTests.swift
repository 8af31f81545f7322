import Policy
@testable import RouterCore
import SessionStore
import Testing

/// One model per concept, and the forms derived from it: every field of the app and of a ducking
/// rule is either in the state file's form or named here as not kept there (with why), and a
/// round trip through the state file keeps every kept field. A field added to a model fails these
/// tests until someone decides where it goes.
@Suite("The state file's forms of the app and the ducking rule")
struct ModelFormTests {
    static func labels(_ value: Any) -> Set<String> { Set(Mirror(reflecting: value).children.compactMap(\.label)) }

    static let configuration = AppConfiguration(name: "x", category: .playback)

    /// The app model's fields and the state file's name for each (nil: not kept, and why).
    static let appConfiguration: [String: String?] = [
        "name": "name", "category": "category", "options": "options", "mode": "mode",
        "remoteCommands": "remote", "resume": "resume", "activation": "activation",
    ]
    static let appSession: [String: String?] = [
        "configuration": nil,              // its fields, above
        "volume": nil,                     // kept in SavedState.appVolumes, by app
        "channelMap": "channelmap", "signal": "signal", "settings": "settings",
        "activity": nil,                   // what happens at run time starts over: inactive
        "activationSequence": nil, "activatedByRequest": nil, "activatedBy": nil, "duckReleased": nil,
    ]

    @Test("every field of AppConfiguration and AppSession has a place in the state file's app, or is named as run-time only")
    func appFields() throws {
        #expect(Self.labels(Self.configuration) == Set(Self.appConfiguration.keys))
        var policy = PolicyEngine(routes: [("speaker", 1)])
        try policy.apply(.register(Self.configuration))
        let session = try #require(policy.state.app("x"))
        #expect(Self.labels(session) == Set(Self.appSession.keys))
        let saved = StateKeeper.savedState(policy.state, channels: [:], defaultChannelCount: 2).apps[0]
        let kept = Set(Array(Self.appConfiguration.values) + Array(Self.appSession.values)).compactMap { $0 }
        #expect(Self.labels(saved) == Set(kept + ["channels"]), "the state file's app has exactly the fields kept (and the app's channel count)")
    }

    @Test("a ducking rule's state-file form has the rule's fields, and keeps each")
    func ruleFields() {
        let rule = DuckingRule(ducker: "nav", ducked: "music", route: "speaker", level: -12, target: 9, floor: -30, attack: 40, release: 700)
        #expect(Self.labels(rule) == Self.labels(SavedState.Ducking.Rule(rule)))
        #expect(SavedState.Ducking.Rule(rule).rule == rule)
    }

    @Test("an app with every kept field changed from its default comes back from the state file as it was")
    func appRoundTrip() throws {
        var session = Session()
        session.routes = [Session.Route(name: "speaker", ports: ["system:playback_1", "system:playback_2"]),
                          Session.Route(name: "phones", ports: ["system:playback_3", "system:playback_4"])]
        var policy = PolicyEngine(routes: [("speaker", 1), ("phones", 1)])
        let configuration = AppConfiguration(name: "desk", category: .multiRoute, options: [.mixWithOthers], mode: .default,
                                             remoteCommands: [.play, .seek], resume: .auto, activation: .signal)
        try policy.apply(.register(configuration))
        let map = [ChannelLink(appChannel: 1, route: "phones", routeChannel: 2)]
        try policy.apply(.setChannelMap(app: "desk", map))
        let signal = SignalDetection(threshold: -30, attack: 20, hold: 800, hysteresis: 3)
        try policy.apply(.setActivation(app: "desk", .signal, signal))
        try policy.apply(.setAppVolume(app: "desk", .position(0.25)))
        try policy.apply(.setAppSetting(app: "desk", .muted(true)))
        let saved = StateKeeper.savedState(policy.state, channels: ["desk": 3], defaultChannelCount: 2)
        let (restored, notes) = session.applying(saved)
        #expect(notes.isEmpty, "\(notes)")
        let app = try #require(restored.apps.first { $0.name == "desk" })
        #expect(app.configuration == configuration)
        #expect(app.channelMap == map && app.signal == signal && app.channelCount == 3)
        var settings = AppSettings()
        settings.muted = true
        #expect(app.settings == settings, "a person's settings come back")
        #expect(restored.volumes.apps["desk"] == 0.25)
    }
}
