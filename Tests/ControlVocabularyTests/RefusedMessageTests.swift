import ControlVocabulary
import OSCTransport
import Policy
import Testing

/// One message the decoder must refuse: the `/error` code and the message a person reads.
struct Refusal: Sendable, CustomTestStringConvertible {
    var name: String
    var message: OSCMessage
    var code: PolicyError.Code
    var text: String
    var testDescription: String { name }

    init(_ name: String, _ path: String, _ arguments: [OSCArgument] = [], _ code: PolicyError.Code, _ text: String) {
        self.name = name
        self.message = OSCMessage(path, arguments)
        self.code = code
        self.text = text
    }
}

private let categories = "ambient, soloAmbient, playback, record, playAndRecord, multiRoute"
private let aNumber = "a number (i, f, d or h)"
private let aBoolean = "a boolean (T or F, or 0 or 1 as i, f, d or h)"
private let aString = "a string (s or S)"
private let long = String(repeating: "y", count: 100)

private func unknownPath(_ name: String, _ path: String, _ arguments: [OSCArgument] = []) -> Refusal {
    Refusal(name, path, arguments, .unknownPath, "no such path: '\(path)' (docs/OSC.md lists them)")
}

private func pattern(_ name: String, _ path: String) -> Refusal {
    Refusal(name, path, [], .unknownPath, "address patterns and spaces are not accepted: '\(path)'")
}

private func badName(_ name: String, _ app: String) -> Refusal {
    Refusal(name, "/app/\(app)/activate", [], .unknownApp,
            "no app named that: expected a name of 1 to 48 letters, digits, '-', '_' or '.', got '\(app)'")
}

/// What docs/OSC.md says is refused, path by path: unknown paths (-7), bad app names in a path
/// (-3), and wrong types, missing or extra arguments, NaN and infinity and values out of range (-2).
let refusals: [Refusal] = [
    // Unknown paths: -7.
    unknownPath("an empty path", ""),
    unknownPath("the root", "/"),
    unknownPath("no leading slash", "state"),
    unknownPath("an unknown top level", "/mixer/volume", [.float(1)]),
    unknownPath("/app alone", "/app"),
    unknownPath("/page/key alone", "/page/key"),
    unknownPath("/page/key/rotate one level too deep", "/page/key/rotate/now"),
    Refusal("/rights with an argument", "/rights", [.int32(1)], .badArgument, "too many arguments: 1 given, 0 expected"),
    Refusal("/page with an argument", "/page", [.string("x")], .badArgument, "too many arguments: 1 given, 0 expected"),
    Refusal("/page/key/rotate with a number for the key", "/page/key/rotate", [.int32(1)], .badArgument,
            "argument 1, key: expected \(aString), got type 'i'"),
    Refusal("/page/key/rotate with two keys", "/page/key/rotate", [.string("a"), .string("b")], .badArgument,
            "too many arguments: 2 given, 1 expected"),
    unknownPath("/app/register with more after it", "/app/register/now", [.string("x"), .string("ambient")]),
    unknownPath("an app without a verb", "/app/music"),
    unknownPath("an unknown app verb", "/app/music/solo", [.int32(1)]),
    unknownPath("an app path one level too deep", "/app/music/volume/left", [.float(1)]),
    unknownPath("/system alone", "/system"),
    unknownPath("an unknown system path", "/system/mute"),
    unknownPath("/system/volume one level too deep", "/system/volume/left", [.float(1)]),
    unknownPath("/system/interruption without begin or end", "/system/interruption", [.string("phone")]),
    unknownPath("/route alone", "/route"),
    unknownPath("a route without a verb", "/route/speaker"),
    unknownPath("a route with an unknown verb", "/route/speaker/volume", [.float(1)]),
    unknownPath("a route with an empty name", "/route//available", [.int32(1)]),
    unknownPath("a route path one level too deep", "/route/speaker/available/now", [.int32(1)]),
    unknownPath("/remote alone", "/remote"),
    unknownPath("an unknown remote command", "/remote/fly"),
    unknownPath("a remote command one level too deep", "/remote/play/now"),
    unknownPath("/duck alone", "/duck", [.float(-20)]),
    unknownPath("an unknown ducking parameter", "/duck/depth", [.float(-20)]),
    unknownPath("/state with a trailing slash", "/state/"),
    unknownPath("/subscribe one level too deep", "/subscribe/all"),
    unknownPath("/unsubscribe one level too deep", "/unsubscribe/all"),
    unknownPath("/meters one level too deep", "/meters/apps"),
    unknownPath("paths are case-sensitive", "/System/Volume", [.float(1)]),
    unknownPath("no leading slash, with a path after the first word", "x/state"),
    unknownPath("a path that is no app's, with a name an app cannot have (the path is judged first)", "/app/a:b/fly"),
    unknownPath("a read-only OSCQuery node is no OSC path", "/app/music/state"),
    Refusal("a long unknown path is quoted short", "/\(long)", [], .unknownPath,
            "no such path: '/\(String(repeating: "y", count: 59))…' (101 bytes) (docs/OSC.md lists them)"),

    // Address patterns and spaces are not expanded: -7.
    pattern("*", "/app/*/activate"),
    pattern("?", "/app/musi?/activate"),
    pattern("[…]", "/app/[mn]usic/activate"),
    pattern("{…}", "/app/{music,nav}/activate"),
    pattern("a space", "/app/my music/activate"),
    pattern("#", "/app/#1/activate"),

    // Names JACK ports cannot carry, in an app path: -3.
    badName("an empty app name", ""),
    badName("a colon", "a:b"),
    badName("not ASCII", "müsic"),
    badName("49 bytes", String(repeating: "x", count: 49)),

    // Wrong types: -2.
    Refusal("a string for a number", "/app/music/volume", [.string("loud")], .badArgument,
            "argument 1, volume 0..1: expected \(aNumber), got type 's'"),
    Refusal("T for a number", "/app/music/gain", [.true], .badArgument, "argument 1, gain in dB: expected \(aNumber), got type 'T'"),
    Refusal("a blob for a number", "/system/volume", [.blob([1, 2])], .badArgument,
            "argument 1, volume 0..1: expected \(aNumber), got type 'b'"),
    Refusal("nil for a number", "/system/gain", [.nil], .badArgument, "argument 1, gain in dB: expected \(aNumber), got type 'N'"),
    Refusal("a time tag for a number", "/duck/attack", [.timetag(.immediately)], .badArgument,
            "argument 1, attack in ms: expected \(aNumber), got type 't'"),
    Refusal("a character for a number", "/duck/release", [.character(65)], .badArgument,
            "argument 1, release in ms: expected \(aNumber), got type 'c'"),
    Refusal("a string for a remote value", "/remote/seek", [.string("10")], .badArgument,
            "argument 1, value: expected \(aNumber), got type 's'"),
    Refusal("a string for a signal threshold", "/app/mic/activation", [.string("signal"), .string("-30")], .badArgument,
            "argument 2, threshold in dBFS: expected \(aNumber), got type 's'"),
    Refusal("a string for a channel count", "/app/register", [.string("x"), .string("ambient"), .string(""), .string(""), .string("2")],
            .badArgument, "argument 5, channels: expected \(aNumber), got type 's'"),
    Refusal("an address where the meter rate goes", "/meters", [.string("osc.udp://127.0.0.1:9000/")], .badArgument,
            "argument 1, rate in Hz: expected \(aNumber), got type 's'"),
    Refusal("NaN for a loudness target", "/duck/target", [.float(.nan)], .badArgument,
            "argument 1, target in LU: expected a finite number, got nan"),
    Refusal("a word other than off for a loudness target", "/duck/target", [.string("loud")], .badArgument,
            "argument 1, target in LU: expected a number or 'off', got 'loud'"),
    Refusal("infinity for a floor", "/duck/floor", [.float(-.infinity)], .badArgument,
            "argument 1, floor in dB: expected a finite number, got -inf"),
    Refusal("NaN in a rule", "/duck/rule", [.string("nav"), .string("music"), .string(""), .string("target"), .double(.nan)], .badArgument,
            "argument 5, target: expected a finite number, got nan"),
    Refusal("an unknown rule setting", "/duck/rule", [.string("nav"), .string("music"), .string(""), .string("depth"), .float(-6)], .badArgument,
            "argument 4, setting: expected level, target, floor, attack, release or remove, got 'depth'"),
    Refusal("a rule setting given twice", "/duck/rule", [.string("nav"), .string("music"), .string(""), .string("level"), .float(-6),
                                                          .string("level"), .float(-9)], .badArgument,
            "argument 6, level: given twice"),
    Refusal("a rule without its route", "/duck/rule", [.string("nav"), .string("music")], .badArgument,
            "missing argument 3, route (\"\": every route) (expected a string (s or S))"),
    Refusal("a rule value missing", "/duck/rule", [.string("nav"), .string("music"), .string(""), .string("level")], .badArgument,
            "missing argument 5, level (expected a number (i, f, d or h))"),
    Refusal("remove with more after it", "/duck/rule", [.string("nav"), .string("music"), .string(""), .string("remove"), .float(1)], .badArgument,
            "argument 4, remove: remove comes alone, after the route"),
    Refusal("a negative loudness meter rate", "/meters/loudness", [.float(-1)], .badArgument,
            "argument 1, rate in Hz: expected 0 (stop) or more (above 10 means 10), got -1.0"),
    Refusal("a string for a boolean", "/system/silent", [.string("on")], .badArgument,
            "argument 1, on: expected \(aBoolean), got type 's'"),
    Refusal("nil for a boolean", "/route/hdmi/available", [.nil], .badArgument,
            "argument 1, available: expected \(aBoolean), got type 'N'"),
    Refusal("a string for notifyOthers", "/app/nav/deactivate", [.string("yes")], .badArgument,
            "argument 1, notifyOthers: expected \(aBoolean), got type 's'"),
    Refusal("a string for shouldResume", "/system/interruption/end", [.string("phone"), .string("yes")], .badArgument,
            "argument 2, shouldResume: expected \(aBoolean), got type 's'"),
    Refusal("a number for an app name", "/app/register", [.int32(1), .string("playback")], .badArgument,
            "argument 1, app: expected \(aString), got type 'i'"),
    Refusal("a number for a category", "/app/music/category", [.int32(2)], .badArgument,
            "argument 1, category: expected \(aString), got type 'i'"),
    Refusal("a number for options", "/app/register", [.string("x"), .string("playback"), .int32(0)], .badArgument,
            "argument 3, options: expected \(aString), got type 'i'"),
    Refusal("a number for a mode", "/app/register", [.string("x"), .string("playback"), .string(""), .int32(0)], .badArgument,
            "argument 4, mode: expected \(aString), got type 'i'"),
    Refusal("T for remote commands", "/app/music/remote", [.true], .badArgument,
            "argument 1, commands: expected \(aString), got type 'T'"),
    Refusal("a number for a notify address", "/app/music/notify", [.int32(9000)], .badArgument,
            "argument 1, url: expected \(aString), got type 'i'"),
    Refusal("a number for an activation", "/app/mic/activation", [.int32(1)], .badArgument,
            "argument 1, activation: expected \(aString), got type 'i'"),
    Refusal("a string for a map's app channel", "/app/desk/channelmap", [.string("1"), .string("speaker:1")], .badArgument,
            "argument 1, app channel: expected \(aNumber), got type 's'"),
    Refusal("a number for a map's route channel", "/app/desk/channelmap", [.int32(1), .int32(1)], .badArgument,
            "argument 2, route:channel: expected \(aString), got type 'i'"),
    Refusal("a number for a route", "/route/select", [.int32(1)], .badArgument, "argument 1, route: expected \(aString), got type 'i'"),
    Refusal("a number for a source", "/system/interruption/begin", [.float(1)], .badArgument,
            "argument 1, source: expected \(aString), got type 'f'"),
    Refusal("a blob for an address", "/subscribe", [.blob([0])], .badArgument, "argument 1, url: expected \(aString), got type 'b'"),
    Refusal("a number for an address", "/unsubscribe", [.int32(0)], .badArgument, "argument 1, url: expected \(aString), got type 'i'"),
    Refusal("a number for a meter address", "/meters", [.float(10), .int32(9000)], .badArgument,
            "argument 2, url: expected \(aString), got type 'i'"),

    // Booleans other than 0 and 1: -2.
    Refusal("i 2 for a boolean", "/system/silent", [.int32(2)], .badArgument, "argument 1, on: expected 0 or 1, got 2"),
    Refusal("i -1 for a boolean", "/route/hdmi/available", [.int32(-1)], .badArgument, "argument 1, available: expected 0 or 1, got -1"),
    Refusal("f 0.5 for a boolean", "/system/silent", [.float(0.5)], .badArgument, "argument 1, on: expected 0 or 1, got 0.5"),
    Refusal("d NaN for a boolean", "/system/silent", [.double(.nan)], .badArgument, "argument 1, on: expected 0 or 1, got nan"),
    Refusal("h 7 for a boolean", "/app/nav/deactivate", [.int64(7)], .badArgument, "argument 1, notifyOthers: expected 0 or 1, got 7"),

    // Missing arguments: -2.
    Refusal("register without arguments", "/app/register", [], .badArgument, "missing argument 1, app (expected \(aString))"),
    Refusal("register without a category", "/app/register", [.string("x")], .badArgument,
            "missing argument 2, category (expected \(aString))"),
    Refusal("an interruption without a source", "/system/interruption/begin", [], .badArgument,
            "missing argument 1, source (expected \(aString))"),
    Refusal("an interruption's end without a source", "/system/interruption/end", [], .badArgument,
            "missing argument 1, source (expected \(aString))"),
    Refusal("a map's app channel without its route channel", "/app/desk/channelmap", [.int32(1), .string("speaker:1"), .int32(2)],
            .badArgument, "missing argument 4, route:channel (expected \(aString))"),

    // Extra arguments: -2.
    Refusal("activate with an argument", "/app/nav/activate", [.int32(1)], .badArgument, "too many arguments: 1 given, 0 expected"),
    Refusal("unregister with an argument", "/app/nav/unregister", [.true], .badArgument, "too many arguments: 1 given, 0 expected"),
    Refusal("deactivate with two", "/app/nav/deactivate", [.int32(1), .int32(1)], .badArgument, "too many arguments: 2 given, 1 expected"),
    Refusal("register with six", "/app/register",
            [.string("x"), .string("ambient"), .string(""), .string(""), .int32(2), .string("more")], .badArgument,
            "too many arguments: 6 given, 5 expected"),
    Refusal("category with four", "/app/music/category", [.string("playback"), .string(""), .string("default"), .string("x")],
            .badArgument, "too many arguments: 4 given, 3 expected"),
    Refusal("volume with two", "/app/music/volume", [.float(0.5), .float(0.5)], .badArgument, "too many arguments: 2 given, 1 expected"),
    Refusal("gain with two", "/app/music/gain", [.float(-6), .float(-6)], .badArgument, "too many arguments: 2 given, 1 expected"),
    Refusal("remote with two", "/app/music/remote", [.string("play"), .string("pause")], .badArgument,
            "too many arguments: 2 given, 1 expected"),
    Refusal("notify with two", "/app/music/notify", [.string(""), .string("")], .badArgument, "too many arguments: 2 given, 1 expected"),
    Refusal("activation with six", "/app/mic/activation",
            [.string("signal"), .float(-30), .float(10), .float(500), .float(6), .float(1)], .badArgument,
            "too many arguments: 6 given, 5 expected"),
    Refusal("a channel map 'default' with more", "/app/desk/channelmap", [.string("default"), .string("speaker:1")], .badArgument,
            "argument 1, app channel: expected \(aNumber), got type 's'"),
    Refusal("system volume with two", "/system/volume", [.float(0.5), .string("speaker")], .badArgument,
            "too many arguments: 2 given, 1 expected"),
    Refusal("system gain with two", "/system/gain", [.float(-6), .float(-6)], .badArgument, "too many arguments: 2 given, 1 expected"),
    Refusal("silent with two", "/system/silent", [.int32(1), .int32(1)], .badArgument, "too many arguments: 2 given, 1 expected"),
    Refusal("an interruption's beginning with two", "/system/interruption/begin", [.string("phone"), .int32(1)], .badArgument,
            "too many arguments: 2 given, 1 expected"),
    Refusal("an interruption's end with three", "/system/interruption/end", [.string("phone"), .int32(1), .int32(1)], .badArgument,
            "too many arguments: 3 given, 2 expected"),
    Refusal("route select with two", "/route/select", [.string("speaker"), .string("headphones")], .badArgument,
            "too many arguments: 2 given, 1 expected"),
    Refusal("route available with two", "/route/hdmi/available", [.int32(1), .int32(1)], .badArgument,
            "too many arguments: 2 given, 1 expected"),
    Refusal("a remote command with two values", "/remote/seek", [.float(1), .float(2)], .badArgument,
            "too many arguments: 2 given, 1 expected"),
    Refusal("duck level with two", "/duck/level", [.float(-20), .float(-20)], .badArgument, "too many arguments: 2 given, 1 expected"),
    Refusal("subscribe with two", "/subscribe", [.string("osc.udp://127.0.0.1:9000/"), .string("osc.udp://127.0.0.1:9001/")],
            .badArgument, "too many arguments: 2 given, 1 expected"),
    Refusal("unsubscribe with two", "/unsubscribe", [.string("osc.udp://127.0.0.1:9000/"), .int32(1)], .badArgument,
            "too many arguments: 2 given, 1 expected"),
    Refusal("meters with three", "/meters", [.float(10), .string("osc.udp://127.0.0.1:9000/"), .int32(1)], .badArgument,
            "too many arguments: 3 given, 2 expected"),
    Refusal("state with an argument", "/state", [.string("pretty")], .badArgument, "too many arguments: 1 given, 0 expected"),
    Refusal("timeline after a negative number", "/timeline", [.int32(-1)], .badArgument, "argument 1, after (an event's number): expected 0 or more, got -1"),
    Refusal("timeline after half an event", "/timeline", [.float(1.5)], .badArgument, "argument 1, after (an event's number): expected a whole number, got 1.5"),
    Refusal("timeline after a word", "/timeline", [.string("all")], .badArgument, "argument 1, after (an event's number): expected a number (i, f, d or h), got type 's'"),

    // NaN and infinity: -2 (only -inf dB, silence, on the gain paths is a number).
    Refusal("NaN volume", "/app/music/volume", [.float(.nan)], .badArgument, "argument 1, volume 0..1: expected a finite number, got nan"),
    Refusal("+inf volume", "/app/music/volume", [.float(.infinity)], .badArgument,
            "argument 1, volume 0..1: expected a finite number, got inf"),
    Refusal("-inf volume", "/app/music/volume", [.double(-.infinity)], .badArgument,
            "argument 1, volume 0..1: expected a finite number, got -inf"),
    Refusal("NaN gain", "/app/music/gain", [.double(.nan)], .badArgument, "argument 1, gain in dB: expected a finite number, got nan"),
    Refusal("+inf gain", "/app/music/gain", [.float(.infinity)], .badArgument, "argument 1, gain in dB: expected a finite number, got inf"),
    Refusal("NaN system volume", "/system/volume", [.double(.nan)], .badArgument,
            "argument 1, volume 0..1: expected a finite number, got nan"),
    Refusal("+inf system gain", "/system/gain", [.double(.infinity)], .badArgument,
            "argument 1, gain in dB: expected a finite number, got inf"),
    Refusal("-inf duck level", "/duck/level", [.float(-.infinity)], .badArgument,
            "argument 1, level in dB: expected a finite number, got -inf"),
    Refusal("NaN attack", "/duck/attack", [.float(.nan)], .badArgument, "argument 1, attack in ms: expected a finite number, got nan"),
    Refusal("+inf release", "/duck/release", [.float(.infinity)], .badArgument,
            "argument 1, release in ms: expected a finite number, got inf"),
    Refusal("NaN remote value", "/remote/seek", [.float(.nan)], .badArgument, "argument 1, value: expected a finite number, got nan"),
    Refusal("NaN signal threshold", "/app/mic/activation", [.string("signal"), .float(.nan)], .badArgument,
            "argument 2, threshold in dBFS: expected a finite number, got nan"),
    Refusal("+inf signal hold", "/app/mic/activation", [.string("signal"), .float(-30), .float(10), .float(.infinity)], .badArgument,
            "argument 4, hold in ms: expected a finite number, got inf"),
    Refusal("NaN channel count", "/app/register", [.string("x"), .string("ambient"), .string(""), .string(""), .float(.nan)],
            .badArgument, "argument 5, channels: expected a finite number, got nan"),
    Refusal("+inf meter rate", "/meters", [.float(.infinity)], .badArgument, "argument 1, rate in Hz: expected a finite number, got inf"),
    Refusal("NaN map channel", "/app/desk/channelmap", [.float(.nan), .string("speaker:1")], .badArgument,
            "argument 1, app channel: expected a finite number, got nan"),

    // Values out of range that the decoder knows: -2.
    Refusal("0 channels", "/app/register", [.string("x"), .string("ambient"), .string(""), .string(""), .int32(0)], .badArgument,
            "argument 5, channels: expected 1 to 32, got 0"),
    Refusal("33 channels", "/app/register", [.string("x"), .string("ambient"), .string(""), .string(""), .int32(33)], .badArgument,
            "argument 5, channels: expected 1 to 32, got 33"),
    Refusal("2.5 channels", "/app/register", [.string("x"), .string("ambient"), .string(""), .string(""), .float(2.5)], .badArgument,
            "argument 5, channels: expected a whole number, got 2.5"),
    Refusal("a negative meter rate", "/meters", [.float(-1)], .badArgument,
            "argument 1, rate in Hz: expected 0 (stop) or more (above 20 means 20), got -1.0"),
    Refusal("a negative level meter rate", "/meters/levels", [.float(-2)], .badArgument,
            "argument 1, rate in Hz: expected 0 (stop) or more (above 20 means 20), got -2.0"),
    Refusal("a number for a level meter address", "/meters/levels", [.float(10), .int32(9000)], .badArgument,
            "argument 2, url: expected \(aString), got type 'i'"),
    Refusal("map app channel 0", "/app/desk/channelmap", [.int32(0), .string("speaker:1")], .badArgument,
            "argument 1, app channel: expected a whole number from 1 to 1024, got 0.0"),
    Refusal("map app channel 1.5", "/app/desk/channelmap", [.float(1.5), .string("speaker:1")], .badArgument,
            "argument 1, app channel: expected a whole number from 1 to 1024, got 1.5"),
    Refusal("map app channel 1025", "/app/desk/channelmap", [.int32(1025), .string("speaker:1")], .badArgument,
            "argument 1, app channel: expected a whole number from 1 to 1024, got 1025.0"),
    Refusal("map route channel 0", "/app/desk/channelmap", [.int32(1), .string("speaker:0")], .badArgument,
            "argument 2, route:channel: expected a route and a channel from 1, such as 'headphones:1', got 'speaker:0'"),
    Refusal("map route without a channel", "/app/desk/channelmap", [.int32(1), .string("speaker")], .badArgument,
            "argument 2, route:channel: expected a route and a channel from 1, such as 'headphones:1', got 'speaker'"),
    Refusal("map channel without a route", "/app/desk/channelmap", [.int32(1), .string(":1")], .badArgument,
            "argument 2, route:channel: expected a route and a channel from 1, such as 'headphones:1', got ':1'"),
    Refusal("map route channel not a number", "/app/desk/channelmap", [.int32(1), .string("speaker:left")], .badArgument,
            "argument 2, route:channel: expected a route and a channel from 1, such as 'headphones:1', got 'speaker:left'"),
    Refusal("map target with two colons", "/app/desk/channelmap", [.int32(1), .string("a:b:1")], .badArgument,
            "argument 2, route:channel: expected a route and a channel from 1, such as 'headphones:1', got 'a:b:1'"),
    Refusal("an empty interruption source", "/system/interruption/begin", [.string("")], .badArgument,
            "argument 1, source: expected 1 to 256 bytes, got 0"),
    Refusal("a 257-byte interruption source", "/system/interruption/end", [.string(String(repeating: "s", count: 257))], .badArgument,
            "argument 1, source: expected 1 to 256 bytes, got 257"),
    Refusal("an empty route selection", "/route/select", [.string("")], .badArgument, "argument 1, route: expected 1 to 256 bytes, got 0"),

    // Words outside a vocabulary, and addresses that are not OSC URLs: -2.
    Refusal("an unknown category", "/app/register", [.string("x"), .string("loud")], .badArgument,
            "category: expected one of \(categories), got 'loud'"),
    Refusal("an unknown category, changed", "/app/music/category", [.string("Playback")], .badArgument,
            "category: expected one of \(categories), got 'Playback'"),
    Refusal("a long category is quoted short", "/app/music/category", [.string(long)], .badArgument,
            "category: expected one of \(categories), got '\(String(repeating: "y", count: 60))…' (100 bytes)"),
    Refusal("an unknown option", "/app/register", [.string("x"), .string("playback"), .string("duckOthers,duck")], .badArgument,
            "option: expected one of mixWithOthers, duckOthers, interruptSpokenAudioAndMixWithOthers, got 'duck'"),
    Refusal("an unknown mode", "/app/music/category", [.string("playback"), .string(""), .string("karaoke")], .badArgument,
            "mode: expected one of default, spokenAudio, voicePrompt, voiceChat, videoChat, moviePlayback, measurement, got 'karaoke'"),
    Refusal("an unknown remote command in a list", "/app/music/remote", [.string("play,rewind")], .badArgument,
            "remote command: expected one of play, pause, togglePlayPause, stop, nextTrack, previousTrack, skipForward, skipBackward, seek, changePlaybackRate, got 'rewind'"),
    Refusal("an unknown activation", "/app/mic/activation", [.string("voice")], .badArgument,
            "activation: expected osc or signal, got 'voice'"),
    Refusal("a notify address that is not an OSC URL", "/app/music/notify", [.string("http://127.0.0.1:9000/")], .badArgument,
            "url: expected osc.udp://host:port/ or osc.tcp://host:port/, got 'http://127.0.0.1:9000/'"),
    Refusal("a subscriber address without a port", "/subscribe", [.string("127.0.0.1")], .badArgument,
            "url: expected osc.udp://host:port/ or osc.tcp://host:port/, got '127.0.0.1'"),
    Refusal("an unsubscribe address that is not an OSC URL", "/unsubscribe", [.string("")], .badArgument,
            "url: expected osc.udp://host:port/ or osc.tcp://host:port/, got ''"),
    Refusal("a meter address that is not an OSC URL", "/meters", [.float(10), .string("osc.udp://127.0.0.1/")], .badArgument,
            "url: expected osc.udp://host:port/ or osc.tcp://host:port/, got 'osc.udp://127.0.0.1/'"),
]

@Suite("ControlCommand.decode: what it refuses, with which code and words")
struct RefusedMessageTests {
    @Test(arguments: refusals)
    func refuses(_ refusal: Refusal) {
        #expect(throws: PolicyError(refusal.code, refusal.text)) { try ControlCommand.decode(refusal.message) }
    }

    /// A 64 KiB string never comes back whole in an error (it would not fit a UDP reply).
    @Test func hugeStringsAreQuotedShort() {
        let huge = String(repeating: "z", count: 65_536)
        for message in [OSCMessage("/" + huge), OSCMessage("/app/music/category", [.string(huge)]),
                        OSCMessage("/app/music/notify", [.string(huge)]), OSCMessage("/app/music/remote", [.string(huge)])] {
            do throws(PolicyError) {
                _ = try ControlCommand.decode(message)
                Issue.record("\(message.path.prefix(20)) was accepted")
            } catch {
                #expect(error.message.utf8.count < 400, "\(error.message.prefix(80))…")
                #expect(error.message.contains("(65536 bytes)") || error.message.contains("(65537 bytes)"))
            }
        }
    }
}
