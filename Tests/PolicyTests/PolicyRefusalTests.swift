import Testing
import Policy

/// Rule §5.13 (docs/POLICY.md) and acceptance 3: every invalid event is an error with a clear message and leaves
/// the state exactly as it was.
struct Refusal: Sendable, CustomTestStringConvertible {
    var name: String
    var event: PolicyEvent
    var code: PolicyError.Code
    /// Words the message must contain, so the person reading it knows what to fix.
    var mentions: String
    var testDescription: String { name }
}

let refusals: [Refusal] = [
    Refusal(name: "activate an unknown app", event: .activate(app: "ghost"), code: .unknownApp, mentions: "ghost"),
    Refusal(name: "deactivate an unknown app", event: .deactivate(app: "ghost", notifyOthers: true), code: .unknownApp, mentions: "ghost"),
    Refusal(name: "volume of an unknown app", event: .setAppVolume(app: "ghost", .position(0.5)), code: .unknownApp, mentions: "ghost"),
    Refusal(name: "unregister an unknown app", event: .unregister(app: "ghost"), code: .unknownApp, mentions: "ghost"),
    Refusal(name: "category of an unknown app", event: .setCategory(app: "ghost", category: .playback, options: [], mode: .default),
            code: .unknownApp, mentions: "ghost"),
    Refusal(name: "remote commands of an unknown app", event: .setRemoteCommands(app: "ghost", [.play]), code: .unknownApp, mentions: "ghost"),
    Refusal(name: "system volume of an unknown route", event: .setSystemVolume(route: "hdmi", .position(0.5)), code: .unknownRoute, mentions: "hdmi"),
    Refusal(name: "ambient with duckOthers", event: .register(AppConfiguration(name: "x", category: .ambient, options: [.duckOthers])),
            code: .badArgument, mentions: "ambient takes no options"),
    Refusal(name: "soloAmbient with mixWithOthers", event: .register(AppConfiguration(name: "x", category: .soloAmbient, options: [.mixWithOthers])),
            code: .badArgument, mentions: "soloAmbient"),
    Refusal(name: "record with duckOthers", event: .register(AppConfiguration(name: "x", category: .record, options: [.duckOthers])),
            code: .badArgument, mentions: "record"),
    Refusal(name: "playback in voiceChat mode", event: .register(AppConfiguration(name: "x", category: .playback, mode: .voiceChat)),
            code: .badArgument, mentions: "voiceChat"),
    Refusal(name: "ambient in spokenAudio mode", event: .register(AppConfiguration(name: "x", category: .ambient, mode: .spokenAudio)),
            code: .badArgument, mentions: "spokenAudio"),
    Refusal(name: "an existing app changed to an invalid combination",
            event: .setCategory(app: "music", category: .ambient, options: [.duckOthers], mode: .default),
            code: .badArgument, mentions: "ambient"),
    Refusal(name: "a name JACK ports cannot carry", event: .register(AppConfiguration(name: "my app:1")), code: .badArgument, mentions: "my app:1"),
    Refusal(name: "an empty name", event: .register(AppConfiguration(name: "")), code: .badArgument, mentions: "name"),
    Refusal(name: "NaN app volume", event: .setAppVolume(app: "music", .position(.nan)), code: .badArgument, mentions: "nan"),
    Refusal(name: "app volume above 1", event: .setAppVolume(app: "music", .position(1.5)), code: .badArgument, mentions: "0 to 1"),
    Refusal(name: "negative app volume", event: .setAppVolume(app: "music", .position(-0.1)), code: .badArgument, mentions: "0 to 1"),
    Refusal(name: "infinite app volume", event: .setAppVolume(app: "music", .position(.infinity)), code: .badArgument, mentions: "inf"),
    Refusal(name: "NaN app gain", event: .setAppVolume(app: "music", .decibels(.nan)), code: .badArgument, mentions: "dB"),
    Refusal(name: "app gain above +24 dB", event: .setAppVolume(app: "music", .decibels(30)), code: .badArgument, mentions: "24"),
    Refusal(name: "system volume above 1", event: .setSystemVolume(route: "speaker", .position(2)), code: .badArgument, mentions: "system volume"),
    Refusal(name: "system gain above 0 dB", event: .setSystemVolume(route: "speaker", .decibels(3)), code: .badArgument, mentions: "at most 0"),
    Refusal(name: "NaN duck level", event: .setDucking(.level(.nan)), code: .badArgument, mentions: "ducking level"),
    Refusal(name: "positive duck level", event: .setDucking(.level(6)), code: .badArgument, mentions: "-144 to 0"),
    Refusal(name: "negative attack", event: .setDucking(.attack(-1)), code: .badArgument, mentions: "attack"),
    Refusal(name: "infinite release", event: .setDucking(.release(.infinity)), code: .badArgument, mentions: "release"),
    Refusal(name: "seek without a position", event: .remoteCommand(.seek, value: nil), code: .badArgument, mentions: "seek"),
    Refusal(name: "seek to NaN", event: .remoteCommand(.seek, value: .nan), code: .badArgument, mentions: "seek"),
    Refusal(name: "play with a value", event: .remoteCommand(.play, value: 1), code: .badArgument, mentions: "no value"),
    Refusal(name: "an outside interruption without a source", event: .outsideInterruptionBegan(source: ""), code: .badArgument, mentions: "source"),
    Refusal(name: "a channel map that lists one link twice",
            event: .setChannelMap(app: "dj", [ChannelLink(appChannel: 2, route: "headphones", routeChannel: 1),
                                              ChannelLink(appChannel: 2, route: "headphones", routeChannel: 1)]),
            code: .badArgument, mentions: "2 → headphones:1 twice"),
]

@Suite("Policy refusals")
struct PolicyRefusalTests {
    @Test(arguments: refusals)
    func refusal(_ refusal: Refusal) {
        // A busy state, so "nothing changed" means something: music ducked by nav, a game silenced.
        var policy = makePolicy()
        for event: PolicyEvent in [.activate(app: "music"), .activate(app: "nav"), .activate(app: "game"), .setSilentSwitch(true)] {
            try! policy.apply(event)
        }
        let before = policy.state
        #expect(throws: PolicyError.self) { try policy.apply(refusal.event) }
        do {
            try policy.apply(refusal.event)
        } catch {
            #expect(error.code == refusal.code)
            #expect(error.message.lowercased().contains(refusal.mentions.lowercased()), "\(error.message)")
        }
        #expect(policy.state == before)
    }

    @Test("an outside interruption begun twice is an error; the first one stands")
    func repeatedInterruption() throws {
        var policy = makePolicy()
        try policy.apply(.outsideInterruptionBegan(source: "phone"))
        let before = policy.state
        #expect(throws: PolicyError.self) { try policy.apply(.outsideInterruptionBegan(source: "phone")) }
        #expect(policy.state == before)
    }

    @Test("the same event twice is harmless: no effects the second time")
    func idempotent() throws {
        var policy = makePolicy()
        for event: PolicyEvent in [.activate(app: "music"), .setSilentSwitch(true), .setAppVolume(app: "music", .position(0.5)),
                                   .deactivate(app: "music", notifyOthers: false)] {
            try policy.apply(event)
            #expect(try policy.apply(event).isEmpty, "\(event)")
        }
    }
}
