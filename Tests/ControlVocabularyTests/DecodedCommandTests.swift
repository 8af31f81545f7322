import ControlVocabulary
import OSCTransport
import Policy
import Testing

/// One message the decoder accepts, and the command it must become.
struct Decoding: Sendable, CustomTestStringConvertible {
    var name: String
    var message: OSCMessage
    var command: ControlCommand
    var testDescription: String { name }

    init(_ name: String, _ path: String, _ arguments: [OSCArgument] = [], _ command: ControlCommand) {
        self.name = name
        self.message = OSCMessage(path, arguments)
        self.command = command
    }
}

private func change(_ event: PolicyEvent, channels: Int? = nil) -> ControlCommand { .change(event, channels: channels) }

private let udp = "osc.udp://127.0.0.1:9000/"
private let tcp = "osc.tcp://127.0.0.1:9000/"

/// Every path of docs/OSC.md, set and (where settable) queried, in the words of the table there.
let decodings: [Decoding] = [
    // /app/register
    Decoding("register with a category only: no options, default mode, default channels", "/app/register",
             [.string("music"), .string("playback")],
             change(.register(AppConfiguration(name: "music", category: .playback)))),
    Decoding("register with options, mode and channels", "/app/register",
             [.string("nav"), .string("playback"), .string("duckOthers,interruptSpokenAudioAndMixWithOthers"),
              .string("voicePrompt"), .int32(1)],
             change(.register(AppConfiguration(name: "nav", category: .playback,
                                               options: [.duckOthers, .interruptSpokenAudioAndMixWithOthers], mode: .voicePrompt)),
                    channels: 1)),
    Decoding("register: options may have spaces around the commas", "/app/register",
             [.string("nav"), .string("playback"), .string(" duckOthers , mixWithOthers ")],
             change(.register(AppConfiguration(name: "nav", category: .playback, options: [.duckOthers, .mixWithOthers])))),
    Decoding("register: empty options and an empty mode are none and default", "/app/register",
             [.string("game"), .string("ambient"), .string(""), .string("")],
             change(.register(AppConfiguration(name: "game", category: .ambient)))),
    Decoding("register: 32 channels as a float", "/app/register",
             [.string("desk"), .string("multiRoute"), .string(""), .string("default"), .float(32)],
             change(.register(AppConfiguration(name: "desk", category: .multiRoute)), channels: 32)),

    // /app/<app>/category
    Decoding("category query", "/app/music/category", [], .query(.init("/app/<app>/category", "music"))),
    Decoding("category set", "/app/book/category", [.string("playback"), .string(""), .string("spokenAudio")],
             change(.setCategory(app: "book", category: .playback, options: [], mode: .spokenAudio))),
    Decoding("category set with the category only", "/app/game/category", [.string("soloAmbient")],
             change(.setCategory(app: "game", category: .soloAmbient, options: [], mode: .default))),

    // activate, deactivate, unregister
    Decoding("activate", "/app/nav/activate", [], change(.activate(app: "nav"))),
    Decoding("deactivate without notifyOthers", "/app/nav/deactivate", [], change(.deactivate(app: "nav", notifyOthers: false))),
    Decoding("deactivate notifyOthers i 1", "/app/nav/deactivate", [.int32(1)], change(.deactivate(app: "nav", notifyOthers: true))),
    Decoding("deactivate notifyOthers F", "/app/nav/deactivate", [.false], change(.deactivate(app: "nav", notifyOthers: false))),
    Decoding("unregister", "/app/nav/unregister", [], change(.unregister(app: "nav"))),

    // volume and gain
    Decoding("app volume query", "/app/music/volume", [], .query(.init("/app/<app>/volume", "music"))),
    Decoding("app volume set", "/app/music/volume", [.float(0.5)], change(.setAppVolume(app: "music", .position(0.5)))),
    Decoding("app gain query", "/app/music/gain", [], .query(.init("/app/<app>/gain", "music"))),
    Decoding("app gain set", "/app/music/gain", [.float(-6)], change(.setAppVolume(app: "music", .decibels(-6)))),
    Decoding("app gain -inf (f) is silence", "/app/music/gain", [.float(-.infinity)],
             change(.setAppVolume(app: "music", .decibels(-.infinity)))),
    Decoding("app gain -inf (d) is silence", "/app/music/gain", [.double(-.infinity)],
             change(.setAppVolume(app: "music", .decibels(-.infinity)))),

    // remote, notify
    Decoding("app remote query", "/app/music/remote", [], .query(.init("/app/<app>/remote", "music"))),
    Decoding("app remote set", "/app/music/remote", [.string("play,pause,seek")],
             change(.setRemoteCommands(app: "music", [.play, .pause, .seek]))),
    Decoding("app remote set to none", "/app/music/remote", [.string("")], change(.setRemoteCommands(app: "music", []))),
    Decoding("app notify query", "/app/music/notify", [], .query(.init("/app/<app>/notify", "music"))),
    Decoding("app notify over UDP", "/app/music/notify", [.string(udp)], .setNotify(app: "music", url: udp)),
    Decoding("app notify over TCP", "/app/music/notify", [.string(tcp)], .setNotify(app: "music", url: tcp)),
    Decoding("app notify removed", "/app/music/notify", [.string("")], .setNotify(app: "music", url: "")),

    // activation
    Decoding("activation query", "/app/mic/activation", [], .query(.init("/app/<app>/activation", "mic"))),
    Decoding("activation osc", "/app/mic/activation", [.string("osc")], change(.setActivation(app: "mic", .osc, nil))),
    Decoding("activation signal, defaults", "/app/mic/activation", [.string("signal")], change(.setActivation(app: "mic", .signal, nil))),
    Decoding("activation signal with a threshold: the rest default", "/app/mic/activation", [.string("signal"), .float(-30)],
             change(.setActivation(app: "mic", .signal, SignalDetection(threshold: -30)))),
    Decoding("activation signal with every setting", "/app/mic/activation",
             [.string("signal"), .float(-30), .int32(20), .double(400), .int64(3)],
             change(.setActivation(app: "mic", .signal, SignalDetection(threshold: -30, attack: 20, hold: 400, hysteresis: 3)))),

    // channelmap
    Decoding("channel map query", "/app/desk/channelmap", [], .query(.init("/app/<app>/channelmap", "desk"))),
    Decoding("channel map default", "/app/desk/channelmap", [.string("default")], change(.setChannelMap(app: "desk", nil))),
    Decoding("channel map pairs", "/app/desk/channelmap", [.int32(1), .string("speaker:2"), .float(2), .string("headphones:1")],
             change(.setChannelMap(app: "desk", [ChannelLink(appChannel: 1, route: "speaker", routeChannel: 2),
                                                 ChannelLink(appChannel: 2, route: "headphones", routeChannel: 1)]))),
    Decoding("channel map with channel 1024", "/app/desk/channelmap", [.int32(1024), .string("speaker:1")],
             change(.setChannelMap(app: "desk", [ChannelLink(appChannel: 1024, route: "speaker", routeChannel: 1)]))),

    // /system
    Decoding("system volume query", "/system/volume", [], .query(.init("/system/volume"))),
    Decoding("system volume set", "/system/volume", [.float(0.25)], .systemVolume(.position(0.25))),
    Decoding("system gain query", "/system/gain", [], .query(.init("/system/gain"))),
    Decoding("system gain set", "/system/gain", [.float(-12)], .systemVolume(.decibels(-12))),
    Decoding("system gain -inf is silence", "/system/gain", [.float(-.infinity)], .systemVolume(.decibels(-.infinity))),
    Decoding("silent switch query", "/system/silent", [], .query(.init("/system/silent"))),
    Decoding("silent switch on", "/system/silent", [.int32(1)], change(.setSilentSwitch(true))),
    Decoding("interruption begins", "/system/interruption/begin", [.string("phone")], change(.outsideInterruptionBegan(source: "phone"))),
    Decoding("interruption ends, no resume", "/system/interruption/end", [.string("phone")],
             change(.outsideInterruptionEnded(source: "phone", shouldResume: false))),
    Decoding("interruption ends with resume", "/system/interruption/end", [.string("phone"), .true],
             change(.outsideInterruptionEnded(source: "phone", shouldResume: true))),

    // /route
    Decoding("route select query", "/route/select", [], .query(.init("/route/select"))),
    Decoding("route select", "/route/select", [.string("headphones")], change(.selectRoute("headphones"))),
    Decoding("route available query", "/route/hdmi/available", [], .query(.init("/route/<route>/available", "hdmi"))),
    Decoding("route available 0", "/route/hdmi/available", [.int32(0)], change(.setRouteAvailable(route: "hdmi", false))),
    Decoding("route available T", "/route/hdmi/available", [.true], change(.setRouteAvailable(route: "hdmi", true))),

    // /remote
    Decoding("remote play", "/remote/play", [], change(.remoteCommand(.play, value: nil))),
    Decoding("remote seek to 30 s", "/remote/seek", [.float(30)], change(.remoteCommand(.seek, value: 30))),
    Decoding("remote skipForward 15 s as a double", "/remote/skipForward", [.double(15)], change(.remoteCommand(.skipForward, value: 15))),
    Decoding("remote changePlaybackRate", "/remote/changePlaybackRate", [.float(1.5)],
             change(.remoteCommand(.changePlaybackRate, value: 1.5))),

    // /duck
    Decoding("duck level query", "/duck/level", [], .query(.init("/duck/level"))),
    Decoding("duck level set", "/duck/level", [.float(-20)], change(.setDucking(.level(-20)))),
    Decoding("duck attack query", "/duck/attack", [], .query(.init("/duck/attack"))),
    Decoding("duck attack set", "/duck/attack", [.int32(50)], change(.setDucking(.attack(50)))),
    Decoding("duck release query", "/duck/release", [], .query(.init("/duck/release"))),
    Decoding("duck release set", "/duck/release", [.double(800)], change(.setDucking(.release(800)))),

    // Observation
    Decoding("subscribe the sender", "/subscribe", [], .subscribe(url: nil)),
    Decoding("subscribe an address", "/subscribe", [.string(udp)], .subscribe(url: udp)),
    Decoding("subscribe host:port, which is UDP", "/subscribe", [.string("127.0.0.1:9000")], .subscribe(url: "127.0.0.1:9000")),
    Decoding("unsubscribe the sender", "/unsubscribe", [], .unsubscribe(url: nil)),
    Decoding("unsubscribe an address", "/unsubscribe", [.string(tcp)], .unsubscribe(url: tcp)),
    Decoding("duck target query", "/duck/target", [], .query(.init("/duck/target"))),
    Decoding("duck target set", "/duck/target", [.float(15)], change(.setDucking(.target(15)))),
    Decoding("duck target off", "/duck/target", [.string("off")], change(.setDucking(.target(nil)))),
    Decoding("duck floor set", "/duck/floor", [.int32(-30)], change(.setDucking(.floor(-30)))),
    Decoding("duck floor query", "/duck/floor", [], .query(.init("/duck/floor"))),
    Decoding("a rule for a pair on one route, by loudness", "/duck/rule",
             [.string("mic"), .string("music"), .string("tx"), .string("target"), .float(18), .string("floor"), .float(-30)],
             change(.setDuckingRule(DuckingRule(ducker: "mic", ducked: "music", route: "tx", target: 18, floor: -30)))),
    Decoding("a rule for every route, with a level and times", "/duck/rule",
             [.string("mic"), .string("music"), .string(""), .string("level"), .float(-6), .string("attack"), .int32(50),
              .string("release"), .float(800)],
             change(.setDuckingRule(DuckingRule(ducker: "mic", ducked: "music", level: -6, attack: 50, release: 800)))),
    Decoding("a rule removed", "/duck/rule", [.string("mic"), .string("music"), .string("tx"), .string("remove")],
             change(.removeDuckingRule(ducker: "mic", ducked: "music", route: "tx"))),
    Decoding("a rule asked for", "/duck/rule", [.string("mic"), .string("music"), .string("")],
             .query(.init("/duck/rule", "", ["mic", "music", ""]))),
    Decoding("loudness meters at 10 Hz by default", "/meters/loudness", [], .loudnessMeters(url: nil, rate: 10)),
    Decoding("loudness meters above 10 Hz are capped at 10", "/meters/loudness", [.float(50), .string(udp)], .loudnessMeters(url: udp, rate: 10)),
    Decoding("meters to the sender at 20 Hz by default", "/meters", [], .meters(url: nil, rate: 20)),
    Decoding("meters at 5 Hz", "/meters", [.float(5)], .meters(url: nil, rate: 5)),
    Decoding("meters above 20 Hz are capped at 20", "/meters", [.int32(50)], .meters(url: nil, rate: 20)),
    Decoding("meters 0 stops them", "/meters", [.int32(0)], .meters(url: nil, rate: 0)),
    Decoding("meters to an address", "/meters", [.float(10), .string(udp)], .meters(url: udp, rate: 10)),
    Decoding("levels to the sender at 20 Hz by default", "/meters/levels", [], .levelMeters(url: nil, rate: 20)),
    Decoding("levels above 20 Hz are capped at 20", "/meters/levels", [.int32(50), .string(udp)], .levelMeters(url: udp, rate: 20)),
    Decoding("levels 0 stops them", "/meters/levels", [.float(0)], .levelMeters(url: nil, rate: 0)),
    Decoding("state", "/state", [], .state),
    Decoding("the whole timeline", "/timeline", [], .timeline(after: 0)),
    Decoding("the timeline after an event", "/timeline", [.int32(42)], .timeline(after: 42)),
    Decoding("ping", "/ping", [], .ping(token: nil)),
    Decoding("ping with a token to echo", "/ping", [.int32(123_456_789)], .ping(token: 123_456_789)),
    Decoding("rights", "/rights", [], .rights),
    Decoding("page", "/page", [], .page),
    Decoding("rotate the page's key as an osc.admin address or a key-holding WebSocket", "/page/key/rotate", [], .rotatePageKey(key: nil)),
    Decoding("rotate the page's key giving the current one", "/page/key/rotate", [.string("k3y")], .rotatePageKey(key: "k3y")),
]

@Suite("ControlCommand.decode: what each path becomes")
struct DecodedCommandTests {
    @Test(arguments: decodings)
    func decodes(_ case: Decoding) throws {
        #expect(try ControlCommand.decode(`case`.message) == `case`.command)
    }

    /// Numbers: i, f, d and h all carry the same value.
    @Test(arguments: [OSCArgument.int32(-6), .float(-6), .double(-6), .int64(-6)])
    func numberTypes(_ argument: OSCArgument) throws {
        #expect(try ControlCommand.decode(OSCMessage("/app/music/gain", [argument])) == change(.setAppVolume(app: "music", .decibels(-6))))
        #expect(try ControlCommand.decode(OSCMessage("/duck/level", [argument])) == change(.setDucking(.level(-6))))
    }

    /// Whole numbers (register's channels) in any number type.
    @Test(arguments: [OSCArgument.int32(4), .float(4), .double(4), .int64(4)])
    func wholeNumberTypes(_ argument: OSCArgument) throws {
        let message = OSCMessage("/app/register", [.string("desk"), .string("multiRoute"), .string(""), .string(""), argument])
        #expect(try ControlCommand.decode(message) == change(.register(AppConfiguration(name: "desk", category: .multiRoute)), channels: 4))
    }

    /// Booleans: i, f, d and h 0 or 1, T and F, on every boolean argument.
    @Test(arguments: [(OSCArgument.int32(1), true), (.int32(0), false), (.float(1), true), (.float(0), false),
                      (.double(1), true), (.double(0), false), (.int64(1), true), (.int64(0), false),
                      (.true, true), (.false, false)])
    func booleanTypes(_ argument: OSCArgument, _ value: Bool) throws {
        #expect(try ControlCommand.decode(OSCMessage("/system/silent", [argument])) == change(.setSilentSwitch(value)))
        #expect(try ControlCommand.decode(OSCMessage("/route/hdmi/available", [argument])) == change(.setRouteAvailable(route: "hdmi", value)))
        #expect(try ControlCommand.decode(OSCMessage("/app/nav/deactivate", [argument])) == change(.deactivate(app: "nav", notifyOthers: value)))
        #expect(try ControlCommand.decode(OSCMessage("/system/interruption/end", [.string("phone"), argument]))
                == change(.outsideInterruptionEnded(source: "phone", shouldResume: value)))
    }

    /// Strings: s and S (symbol) alike.
    @Test(arguments: [OSCArgument.string("headphones"), .symbol("headphones")])
    func stringTypes(_ argument: OSCArgument) throws {
        #expect(try ControlCommand.decode(OSCMessage("/route/select", [argument])) == change(.selectRoute("headphones")))
        let register = OSCMessage("/app/register", [argument, .symbol("playback"), .symbol("mixWithOthers"), .symbol("default")])
        #expect(try ControlCommand.decode(register)
                == change(.register(AppConfiguration(name: "headphones", category: .playback, options: [.mixWithOthers]))))
    }

    /// Every word of each vocabulary is understood where the vocabulary is used.
    @Test func vocabularies() throws {
        for category in Category.allCases {
            #expect(try ControlCommand.decode(OSCMessage("/app/a/category", [.string(category.rawValue)]))
                    == change(.setCategory(app: "a", category: category, options: [], mode: .default)))
        }
        for option in CategoryOption.allCases {
            #expect(try ControlCommand.decode(OSCMessage("/app/a/category", [.string("playback"), .string(option.rawValue)]))
                    == change(.setCategory(app: "a", category: .playback, options: [option], mode: .default)))
        }
        for mode in Mode.allCases {
            #expect(try ControlCommand.decode(OSCMessage("/app/a/category", [.string("playback"), .string(""), .string(mode.rawValue)]))
                    == change(.setCategory(app: "a", category: .playback, options: [], mode: mode)))
        }
        #expect(try ControlCommand.decode(OSCMessage("/app/a/remote", [.string(RemoteCommand.allCases.map(\.rawValue).joined(separator: ","))]))
                == change(.setRemoteCommands(app: "a", Set(RemoteCommand.allCases))))
        for command in RemoteCommand.allCases {
            #expect(try ControlCommand.decode(OSCMessage("/remote/\(command.rawValue)")) == change(.remoteCommand(command, value: nil)))
        }
        for activation in Activation.allCases {
            #expect(try ControlCommand.decode(OSCMessage("/app/a/activation", [.string(activation.rawValue)]))
                    == change(.setActivation(app: "a", activation, nil)))
        }
    }

    /// App names in a path: every character JACK port names take, up to 48 bytes.
    @Test(arguments: ["a", "Music-2_b.c", String(repeating: "x", count: 48)])
    func appNames(_ name: String) throws {
        #expect(try ControlCommand.decode(OSCMessage("/app/\(name)/activate")) == change(.activate(app: name)))
    }

    /// Who may send a command: the app it acts on; and whether it changes state.
    @Test func ownerAndKind() throws {
        #expect(try Vocabulary.decode(OSCMessage("/app/register", [.string("x"), .string("ambient")])).app == "x")
        #expect(try Vocabulary.decode(OSCMessage("/app/x/notify", [.string("")])).app == "x")
        #expect(try Vocabulary.decode(OSCMessage("/app/x/volume", [.float(1)])).app == "x")
        #expect(try Vocabulary.decode(OSCMessage("/app/x/volume")).app == nil, "a query is open to everyone")
        #expect(try Vocabulary.decode(OSCMessage("/system/volume", [.float(1)])).app == nil)
        #expect(try Vocabulary.decode(OSCMessage("/remote/play")).app == nil)
        for path in ["/app/x/volume", "/system/volume", "/duck/level"] {
            #expect(try !ControlCommand.decode(OSCMessage(path)).isChange, "\(path) without arguments is a query")
            #expect(try ControlCommand.decode(OSCMessage(path, [.float(0)])).isChange)
        }
        #expect(try ControlCommand.decode(OSCMessage("/app/x/notify", [.string("")])).isChange)
        for path in ["/state", "/subscribe", "/unsubscribe", "/meters"] {
            #expect(try !ControlCommand.decode(OSCMessage(path)).isChange)
        }
    }
}
