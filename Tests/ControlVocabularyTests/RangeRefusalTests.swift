import ControlVocabulary
import OSCTransport
import Policy
import Testing

private let signalRanges = "signal: expected threshold -120..0 dBFS, attack 0..10000 ms, hold 0..60000 ms, hysteresis 0..40 dB"

/// Messages the decoder accepts (their shape is right) that are refused when they run, because a
/// value is out of the range docs/OSC.md gives, or they name what does not exist. The decoder does
/// not know the state, so these are the policy's to refuse; the table keeps the documented ranges
/// and codes true for the OSC paths that carry them.
let runRefusals: [Refusal] = [
    Refusal("app volume above 1", "/app/music/volume", [.float(1.5)], .badArgument,
            "app volume: expected a slider position from 0 to 1, got 1.5"),
    Refusal("negative app volume", "/app/music/volume", [.float(-0.25)], .badArgument,
            "app volume: expected a slider position from 0 to 1, got -0.25"),
    Refusal("app gain above +24 dB", "/app/music/gain", [.float(25)], .badArgument, "app volume: expected a level in dB, at most 24, got 25.0"),
    Refusal("system volume above 1", "/system/volume", [.float(1.5)], .badArgument,
            "system volume: expected a slider position from 0 to 1, got 1.5"),
    Refusal("system gain above 0 dB", "/system/gain", [.float(0.5)], .badArgument, "system volume: expected a level in dB, at most 0, got 0.5"),
    Refusal("duck level above 0", "/duck/level", [.float(1)], .badArgument, "ducking level: expected a level in dB from -144 to 0, got 1.0"),
    Refusal("duck level below -144", "/duck/level", [.float(-145)], .badArgument,
            "ducking level: expected a level in dB from -144 to 0, got -145.0"),
    Refusal("negative attack", "/duck/attack", [.float(-1)], .badArgument, "ducking attack: expected milliseconds from 0 to 60000, got -1.0"),
    Refusal("release above 60 s", "/duck/release", [.int32(60_001)], .badArgument,
            "ducking release: expected milliseconds from 0 to 60000, got 60001.0"),
    Refusal("signal threshold above 0 dBFS", "/app/music/activation", [.string("signal"), .float(1)], .badArgument, signalRanges),
    Refusal("signal threshold below -120 dBFS", "/app/music/activation", [.string("signal"), .float(-121)], .badArgument, signalRanges),
    Refusal("signal attack above 10 s", "/app/music/activation", [.string("signal"), .float(-40), .float(10_001)], .badArgument, signalRanges),
    Refusal("signal hold above 60 s", "/app/music/activation", [.string("signal"), .float(-40), .float(10), .float(60_001)],
            .badArgument, signalRanges),
    Refusal("signal hysteresis above 40 dB", "/app/music/activation",
            [.string("signal"), .float(-40), .float(10), .float(500), .float(41)], .badArgument, signalRanges),
    Refusal("seek without a position", "/remote/seek", [], .badArgument, "remote command seek needs a value: a position in seconds, 0 or more"),
    Refusal("seek before the start", "/remote/seek", [.float(-1)], .badArgument,
            "remote command seek: expected a position in seconds, 0 or more, got -1.0"),
    Refusal("changePlaybackRate without a rate", "/remote/changePlaybackRate", [], .badArgument,
            "remote command changePlaybackRate needs a value: a playback rate from 0.0625 to 16"),
    Refusal("changePlaybackRate above 16", "/remote/changePlaybackRate", [.float(17)], .badArgument,
            "remote command changePlaybackRate: expected a playback rate from 0.0625 to 16, got 17.0"),
    Refusal("skipForward by 0 s", "/remote/skipForward", [.float(0)], .badArgument,
            "remote command skipForward: expected an interval in seconds, above 0, got 0.0"),
    Refusal("play with a value", "/remote/play", [.float(1)], .badArgument, "remote command play takes no value"),
    Refusal("register a name JACK ports cannot carry", "/app/register", [.string("my:app"), .string("playback")], .badArgument,
            "expected a name of 1 to 48 letters, digits, '-', '_' or '.', got 'my:app'"),
    Refusal("register ambient with options", "/app/register", [.string("x"), .string("ambient"), .string("duckOthers")], .badArgument,
            "category ambient takes no options (got duckOthers); options are for playback, playAndRecord and multiRoute"),
    Refusal("register playback in voiceChat mode", "/app/register", [.string("x"), .string("playback"), .string(""), .string("voiceChat")],
            .badArgument,
            "mode voiceChat does not go with category playback (expected one of default, measurement, moviePlayback, spokenAudio, voicePrompt)"),
    Refusal("a channel map on an app that is not multiRoute", "/app/music/channelmap", [.int32(1), .string("speaker:1")],
            .badArgument, "'music' is not a multiRoute app: only multiRoute apps have a channel map"),
    Refusal("a channel map onto an unknown route", "/app/desk/channelmap", [.int32(1), .string("hdmi:1")], .unknownRoute,
            "no route named 'hdmi'"),
    Refusal("a loudness target above 60 LU", "/duck/target", [.float(61)], .badArgument,
            "ducking target: expected a loudness difference in LU from 0 to 60, got 61.0"),
    Refusal("a negative loudness target", "/duck/target", [.int32(-3)], .badArgument,
            "ducking target: expected a loudness difference in LU from 0 to 60, got -3.0"),
    Refusal("a floor above 0 dB", "/duck/floor", [.float(3)], .badArgument, "ducking floor: expected a level in dB from -144 to 0, got 3.0"),
    Refusal("a rule onto a route the session lacks", "/duck/rule", [.string("nav"), .string("music"), .string("hdmi"), .string("level"), .float(-6)],
            .unknownRoute, "ducking rule nav → music on hdmi: no route named 'hdmi'"),
    Refusal("a rule whose ducker ducks no one", "/duck/rule", [.string("music"), .string("desk"), .string(""), .string("target"), .float(15)],
            .badArgument, "ducking rule music → desk: 'music' does not duck others (its category has no duckOthers option), so the rule would never apply"),
    Refusal("a rule target out of range", "/duck/rule", [.string("nav"), .string("music"), .string(""), .string("target"), .float(99)],
            .badArgument, "ducking rule nav → music: target: expected 0 to 60 LU, got 99.0"),
    Refusal("a rule floor out of range", "/duck/rule", [.string("nav"), .string("music"), .string("speaker"), .string("target"), .float(15),
                                                        .string("floor"), .float(-200)],
            .badArgument, "ducking rule nav → music on speaker: floor: expected -144 to 0 dB, got -200.0"),
    Refusal("a rule with neither level nor target", "/duck/rule", [.string("nav"), .string("music"), .string(""), .string("attack"), .float(50)],
            .badArgument, "ducking rule nav → music: give a level (dB), a target (LU) or both"),
    Refusal("removing a rule that does not exist", "/duck/rule", [.string("nav"), .string("music"), .string(""), .string("remove")],
            .general, "no ducking rule nav → music for every route"),
    Refusal("an unknown app", "/app/ghost/activate", [], .unknownApp, "no app named 'ghost'"),
    Refusal("an unknown route selected", "/route/select", [.string("hdmi")], .unknownRoute, "no route named 'hdmi'"),
    Refusal("availability of an unknown route", "/route/hdmi/available", [.int32(1)], .unknownRoute, "no route named 'hdmi'"),
    Refusal("a remote command nobody owns", "/remote/play", [], .noEligibleApp,
            "no app owns remote control (none is a non-mixable playback app that declared remote commands and was activated)"),
]

@Suite("OSC values the decoder passes and the policy refuses")
struct RangeRefusalTests {
    /// Two routes and two apps: music (playback with remote commands) and desk (multiRoute).
    static func policy() throws -> PolicyEngine {
        var policy = PolicyEngine(routes: [("speaker", 1), ("headphones", 1)])
        try policy.apply(.register(AppConfiguration(name: "music", category: .playback, remoteCommands: [.play, .seek])))
        try policy.apply(.register(AppConfiguration(name: "desk", category: .multiRoute)))
        return policy
    }

    @Test(arguments: runRefusals)
    func refused(_ refusal: Refusal) throws {
        let event: PolicyEvent
        switch try ControlCommand.decode(refusal.message) {
        case let .change(change, _): event = change
        case let .systemVolume(volume): event = .setSystemVolume(route: "speaker", volume)
        case let command:
            Issue.record("\(refusal.message) decodes to \(command), which is not a change")
            return
        }
        var policy = try Self.policy()
        let before = policy.state
        #expect(throws: PolicyError(refusal.code, refusal.text)) { try policy.apply(event) }
        #expect(policy.state == before, "a refused change leaves the state as it was")
    }
}
