import OSCTransport
import Policy

/// What one OSC message asks for (docs/OSC.md, "Paths"), decoded and checked, before anyone acts
/// on it.
///
/// Decoding is pure: it knows the address space and the argument rules (numbers as i/f/d/h,
/// booleans as i/f/T/F, no NaN or infinity, no arguments to a settable path means a query), but
/// not which apps or routes exist; the router says that when the command runs.
public enum ControlCommand: Equatable, Sendable {
    /// A change to the audio sessions; `channels` for a registration.
    case change(PolicyEvent, channels: Int?)
    /// `/system/volume` and `/system/gain`: the volume of whichever route is current.
    case systemVolume(Volume)
    case setNotify(app: String, url: String)
    case query(Query)
    case subscribe(url: String?)
    case unsubscribe(url: String?)
    /// Peak meters to `url` (nil: the sender) at `rate` Hz (0 stops them).
    case meters(url: String?, rate: Double)
    /// `/meters/loudness [f Hz] [s url]`: every app's and route's loudness (EBU R 128), up to 10 Hz.
    case loudnessMeters(url: String?, rate: Double)
    case state
    /// `/ping [token]`: answered with the router's JACK client name, and the token when one was
    /// given (a far router watching this one, which tells its own answers by it; a control
    /// surface's connection light).
    case ping(token: Int?)
    /// `/rights`: what the sender may do (docs/HTTP.md, "Who may do what").
    case rights
    /// `/page`: the control page's address (without its key) and where its key is kept.
    case page
    /// `/page/key/rotate [s key]`: a new key for the page; the old one stops granting anything.
    /// `key` is the current one, for a sender that holds it but has no other right to ask.
    case rotatePageKey(key: String?)

    public enum Query: Equatable, Sendable {
        case appVolume(String), appGain(String), appRemote(String), appNotify(String), appCategory(String)
        case appChannelMap(String)
        case appActivation(String)
        case systemVolume, systemGain, silentSwitch
        case duckLevel, duckAttack, duckRelease, duckTarget, duckFloor
        /// The rule for a pair on a route (nil: every route).
        case duckRule(ducker: String, ducked: String, route: String?)
        case selectedRoute, routeAvailable(String)
    }

    /// The app whose session the command acts on (its owner, or an admin, may send it).
    public var app: String? {
        switch self {
        case let .change(event, _): event.app
        case let .setNotify(app, _): app
        default: nil
        }
    }

    /// Whether the command changes state (bundles apply these together).
    public var isChange: Bool {
        switch self {
        case .change, .systemVolume, .setNotify: true
        default: false
        }
    }

    /// Decodes a message, or throws the `/error` to answer it with.
    public static func decode(_ message: OSCMessage) throws(PolicyError) -> ControlCommand {
        var a = Arguments(message)
        let parts = message.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        if message.path.contains(where: { "*?[]{}#, ".contains($0) }) {
            throw PolicyError(.unknownPath, "address patterns and spaces are not accepted: \(Arguments.quote(message.path))")
        }
        let command: ControlCommand
        switch parts.first {
        case "app": command = try app(parts, &a)
        case "system": command = try system(parts, &a)
        case "route": command = try route(parts, &a)
        case "remote":
            guard parts.count == 2, let remote = RemoteCommand(rawValue: parts[1]) else { throw unknown(message.path) }
            command = .change(.remoteCommand(remote, value: try a.optionalNumber("value")), channels: nil)
        case "duck":
            guard parts.count == 2 else { throw unknown(message.path) }
            switch parts[1] {
            case "level":
                command = a.isEmpty ? .query(.duckLevel) : .change(.setDucking(.level(try a.number("level in dB"))), channels: nil)
            case "attack":
                command = a.isEmpty ? .query(.duckAttack) : .change(.setDucking(.attack(try a.number("attack in ms"))), channels: nil)
            case "release":
                command = a.isEmpty ? .query(.duckRelease) : .change(.setDucking(.release(try a.number("release in ms"))), channels: nil)
            case "target":
                command = a.isEmpty ? .query(.duckTarget) : .change(.setDucking(.target(try a.numberOrOff("target in LU"))), channels: nil)
            case "floor":
                command = a.isEmpty ? .query(.duckFloor) : .change(.setDucking(.floor(try a.number("floor in dB"))), channels: nil)
            case "rule":
                command = try duckRule(&a)
            default: throw unknown(message.path)
            }
        case "subscribe" where parts.count == 1: command = .subscribe(url: try a.optionalURL())
        case "unsubscribe" where parts.count == 1: command = .unsubscribe(url: try a.optionalURL())
        case "meters" where parts.count == 1:
            let rate = try a.optionalNumber("rate in Hz") ?? 20
            guard rate >= 0 else { throw a.refusal("rate in Hz", "expected 0 (stop) or more (above 20 means 20), got \(rate)") }
            command = .meters(url: try a.optionalURL(), rate: min(rate, 20))
        case "meters" where parts.count == 2 && parts[1] == "loudness":
            let rate = try a.optionalNumber("rate in Hz") ?? 10
            guard rate >= 0 else { throw a.refusal("rate in Hz", "expected 0 (stop) or more (above 10 means 10), got \(rate)") }
            command = .loudnessMeters(url: try a.optionalURL(), rate: min(rate, 10))
        case "state" where parts.count == 1: command = .state
        case "ping" where parts.count == 1: command = .ping(token: try a.optionalInteger("token"))
        case "rights" where parts.count == 1: command = .rights
        case "page" where parts.count == 1: command = .page
        case "page" where parts.count == 3 && parts[1] == "key" && parts[2] == "rotate":
            command = .rotatePageKey(key: try a.optionalString("key"))
        default: throw unknown(message.path)
        }
        try a.finish()
        return command
    }

    static func unknown(_ path: String) -> PolicyError {
        PolicyError(.unknownPath, "no such path: \(Arguments.quote(path)) (docs/OSC.md lists them)")
    }

    private static func app(_ parts: [String], _ a: inout Arguments) throws(PolicyError) -> ControlCommand {
        if parts.count == 2 && parts[1] == "register" {
            let name = try a.string("app")
            let (category, options, mode) = try categoryArguments(&a)
            let channels = try a.optionalInteger("channels")
            if let channels, !(1...32).contains(channels) {
                throw a.refusal("channels", "expected 1 to 32, got \(channels)")
            }
            return .change(.register(AppConfiguration(name: name, category: category, options: options, mode: mode)), channels: channels)
        }
        guard parts.count == 3 else { throw unknown(a.path) }
        let name = parts[1]
        if let problem = AppConfiguration.nameProblem(name) { throw PolicyError(.unknownApp, "no app named that: \(problem)") }
        switch parts[2] {
        case "category":
            if a.isEmpty { return .query(.appCategory(name)) }
            let (category, options, mode) = try categoryArguments(&a)
            return .change(.setCategory(app: name, category: category, options: options, mode: mode), channels: nil)
        case "activate":
            return .change(.activate(app: name), channels: nil)
        case "deactivate":
            return .change(.deactivate(app: name, notifyOthers: try a.optionalBoolean("notifyOthers") ?? false), channels: nil)
        case "volume":
            if a.isEmpty { return .query(.appVolume(name)) }
            return .change(.setAppVolume(app: name, .position(try a.number("volume 0..1"))), channels: nil)
        case "gain":
            if a.isEmpty { return .query(.appGain(name)) }
            return .change(.setAppVolume(app: name, .decibels(try a.number("gain in dB", allowNegativeInfinity: true))), channels: nil)
        case "remote":
            if a.isEmpty { return .query(.appRemote(name)) }
            return .change(.setRemoteCommands(app: name, try list(a.string("commands"), RemoteCommand.self, "remote command")), channels: nil)
        case "notify":
            if a.isEmpty { return .query(.appNotify(name)) }
            let url = try a.string("url")
            guard url.isEmpty || OSCURL(url) != nil else {
                throw PolicyError(.badArgument, "url: expected osc.udp://host:port/ or osc.tcp://host:port/, got \(Arguments.quote(url))")
            }
            return .setNotify(app: name, url: url)
        case "unregister":
            return .change(.unregister(app: name), channels: nil)
        case "activation":
            if a.isEmpty { return .query(.appActivation(name)) }
            let word = try a.string("activation")
            guard let activation = Activation(rawValue: word) else {
                throw PolicyError(.badArgument, "activation: expected osc or signal, got \(Arguments.quote(word))")
            }
            var signal: SignalDetection?
            if !a.isAtEnd {
                var detection = SignalDetection()
                detection.threshold = try a.number("threshold in dBFS")
                if !a.isAtEnd { detection.attack = try a.number("attack in ms") }
                if !a.isAtEnd { detection.hold = try a.number("hold in ms") }
                if !a.isAtEnd { detection.hysteresis = try a.number("hysteresis in dB") }
                signal = detection
            }
            return .change(.setActivation(app: name, activation, signal), channels: nil)
        case "channelmap":
            if a.isEmpty { return .query(.appChannelMap(name)) }
            if a.all == [.string("default")] {
                _ = try a.string("default")
                return .change(.setChannelMap(app: name, nil), channels: nil)
            }
            var links: [ChannelLink] = []
            while !a.isAtEnd {
                let channel = try a.number("app channel")
                guard channel == channel.rounded(), channel >= 1, channel <= 1024 else {
                    throw a.refusal("app channel", "expected a whole number from 1 to 1024, got \(channel)")
                }
                let target = try a.string("route:channel")
                let parts = target.split(separator: ":", omittingEmptySubsequences: false)
                guard parts.count == 2, !parts[0].isEmpty, let routeChannel = Int(parts[1]), routeChannel >= 1 else {
                    throw a.refusal("route:channel", "expected a route and a channel from 1, such as 'headphones:1', got \(Arguments.quote(target))")
                }
                links.append(ChannelLink(appChannel: Int(channel), route: String(parts[0]), routeChannel: routeChannel))
            }
            return .change(.setChannelMap(app: name, links), channels: nil)
        default:
            throw unknown(a.path)
        }
    }

    private static func categoryArguments(_ a: inout Arguments) throws(PolicyError) -> (Category, Set<CategoryOption>, Mode) {
        let categoryName = try a.string("category")
        guard let category = Category(rawValue: categoryName) else {
            throw PolicyError(.badArgument, "category: expected one of \(Category.allCases.map(\.rawValue).joined(separator: ", ")), got \(Arguments.quote(categoryName))")
        }
        let options = try list(a.optionalString("options") ?? "", CategoryOption.self, "option")
        let modeName = try a.optionalString("mode") ?? "default"
        guard let mode = Mode(rawValue: modeName.isEmpty ? "default" : modeName) else {
            throw PolicyError(.badArgument, "mode: expected one of \(Mode.allCases.map(\.rawValue).joined(separator: ", ")), got \(Arguments.quote(modeName))")
        }
        return (category, Set(options), mode)
    }

    /// A comma-separated list of words of a vocabulary ("" is the empty list).
    static func list<T: RawRepresentable & CaseIterable>(_ text: String, _: T.Type, _ what: String) throws(PolicyError) -> Set<T> where T.RawValue == String {
        var result = Set<T>()
        for word in text.split(separator: ",", omittingEmptySubsequences: true) {
            let trimmed = word.trimmed(of: " ")
            guard let value = T(rawValue: trimmed) else {
                throw PolicyError(.badArgument, "\(what): expected one of \(T.allCases.map(\.rawValue).joined(separator: ", ")), got \(Arguments.quote(trimmed))")
            }
            result.insert(value)
        }
        return result
    }

    private static func system(_ parts: [String], _ a: inout Arguments) throws(PolicyError) -> ControlCommand {
        switch parts.dropFirst().joined(separator: "/") {
        case "volume": return a.isEmpty ? .query(.systemVolume) : .systemVolume(.position(try a.number("volume 0..1")))
        case "gain": return a.isEmpty ? .query(.systemGain) : .systemVolume(.decibels(try a.number("gain in dB", allowNegativeInfinity: true)))
        case "silent": return a.isEmpty ? .query(.silentSwitch) : .change(.setSilentSwitch(try a.boolean("on")), channels: nil)
        case "interruption/begin":
            return .change(.outsideInterruptionBegan(source: try a.nonEmptyString("source")), channels: nil)
        case "interruption/end":
            let source = try a.nonEmptyString("source")
            return .change(.outsideInterruptionEnded(source: source, shouldResume: try a.optionalBoolean("shouldResume") ?? false), channels: nil)
        default: throw unknown(a.path)
        }
    }

    /// `/duck/rule s ducker, s ducked, s route ("": every route)`, then `s key, f value` pairs
    /// (`level`, `target`, `floor`, `attack`, `release`), or `s remove`; the three alone ask.
    private static func duckRule(_ a: inout Arguments) throws(PolicyError) -> ControlCommand {
        let ducker = try a.nonEmptyString("ducker")
        let ducked = try a.nonEmptyString("ducked")
        let routeName = try a.string("route (\"\": every route)")
        let route = routeName.isEmpty ? nil : routeName
        if a.isAtEnd { return .query(.duckRule(ducker: ducker, ducked: ducked, route: route)) }
        var rule = DuckingRule(ducker: ducker, ducked: ducked, route: route)
        var given: Set<String> = []
        while !a.isAtEnd {
            let key = try a.string("setting (level, target, floor, attack, release, or remove)")
            if key == "remove" {
                guard given.isEmpty, a.isAtEnd else { throw a.refusal("remove", "remove comes alone, after the route") }
                return .change(.removeDuckingRule(ducker: ducker, ducked: ducked, route: route), channels: nil)
            }
            guard ["level", "target", "floor", "attack", "release"].contains(key) else {
                throw a.refusal("setting", "expected level, target, floor, attack, release or remove, got \(Arguments.quote(key))")
            }
            guard given.insert(key).inserted else { throw a.refusal(key, "given twice") }
            let value = try a.number(key)
            switch key {
            case "level": rule.level = value
            case "target": rule.target = value
            case "floor": rule.floor = value
            case "attack": rule.attack = value
            default: rule.release = value
            }
        }
        return .change(.setDuckingRule(rule), channels: nil)
    }

    private static func route(_ parts: [String], _ a: inout Arguments) throws(PolicyError) -> ControlCommand {
        if parts.count == 2 && parts[1] == "select" {
            return a.isEmpty ? .query(.selectedRoute) : .change(.selectRoute(try a.nonEmptyString("route")), channels: nil)
        }
        guard parts.count == 3, parts[2] == "available", !parts[1].isEmpty else { throw unknown(a.path) }
        return a.isEmpty ? .query(.routeAvailable(parts[1])) : .change(.setRouteAvailable(route: parts[1], try a.boolean("available")), channels: nil)
    }
}

extension StringProtocol {
    func trimmed(of set: String) -> String {
        var s = Substring(self)
        while let first = s.first, set.contains(first) { s = s.dropFirst() }
        while let last = s.last, set.contains(last) { s = s.dropLast() }
        return String(s)
    }
}

/// Reads a message's arguments in order, with the contract's coercions and error messages.
struct Arguments {
    let path: String
    private let values: [OSCArgument]
    private var next = 0

    init(_ message: OSCMessage) {
        path = message.path
        values = message.arguments
    }

    var isEmpty: Bool { values.isEmpty }
    /// Whether every argument has been read.
    var isAtEnd: Bool { next >= values.count }
    /// The arguments, all of them (for paths with one special form, such as `channelmap default`;
    /// they must still be read).
    var all: [OSCArgument] { values }

    /// Quotes a value for an error message, cut short if long (a 64 KiB string stays out of replies).
    static func quote(_ text: String) -> String {
        text.utf8.count > 64 ? "'\(String(decoding: text.utf8.prefix(60), as: UTF8.self))…' (\(text.utf8.count) bytes)" : "'\(text)'"
    }

    private mutating func take(_ name: String, expected: String) throws(PolicyError) -> OSCArgument {
        guard next < values.count else {
            throw PolicyError(.badArgument, "missing argument \(next + 1), \(name) (expected \(expected))")
        }
        next += 1
        return values[next - 1]
    }

    private static let aNumber = "a number (i, f, d or h)"
    private static let aBoolean = "a boolean (T or F, or 0 or 1 as i, f, d or h)"
    private static let aString = "a string (s or S)"

    private func wrongType(_ argument: OSCArgument, _ name: String, _ expected: String) -> PolicyError {
        refusal(name, "expected \(expected), got type '\(argument.typeTag)'")
    }

    /// The error for the argument just read: "argument 2, category: <problem>".
    func refusal(_ name: String, _ problem: String) -> PolicyError {
        PolicyError(.badArgument, "argument \(next), \(name): \(problem)")
    }

    mutating func number(_ name: String, allowNegativeInfinity: Bool = false) throws(PolicyError) -> Double {
        let argument = try take(name, expected: Self.aNumber)
        let value: Double
        switch argument {
        case let .int32(v): value = Double(v)
        case let .float(v): value = Double(v)
        case let .double(v): value = v
        case let .int64(v): value = Double(v)
        default: throw wrongType(argument, name, Self.aNumber)
        }
        guard value.isFinite || (allowNegativeInfinity && value == -.infinity) else {
            throw refusal(name, "expected a finite number, got \(value)")
        }
        return value
    }

    mutating func optionalNumber(_ name: String) throws(PolicyError) -> Double? {
        next < values.count ? try number(name) : nil
    }

    mutating func optionalInteger(_ name: String) throws(PolicyError) -> Int? {
        guard let value = try optionalNumber(name) else { return nil }
        guard value == value.rounded(), abs(value) < 1e9 else {
            throw refusal(name, "expected a whole number, got \(value)")
        }
        return Int(value)
    }

    mutating func boolean(_ name: String) throws(PolicyError) -> Bool {
        let argument = try take(name, expected: Self.aBoolean)
        switch argument {
        case .true: return true
        case .false: return false
        case let .int32(v) where v == 0 || v == 1: return v == 1
        case let .int64(v) where v == 0 || v == 1: return v == 1
        case let .float(v) where v == 0 || v == 1: return v == 1
        case let .double(v) where v == 0 || v == 1: return v == 1
        case let .int32(v): throw refusal(name, "expected 0 or 1, got \(v)")
        case let .int64(v): throw refusal(name, "expected 0 or 1, got \(v)")
        case let .float(v): throw refusal(name, "expected 0 or 1, got \(v)")
        case let .double(v): throw refusal(name, "expected 0 or 1, got \(v)")
        default: throw wrongType(argument, name, Self.aBoolean)
        }
    }

    mutating func optionalBoolean(_ name: String) throws(PolicyError) -> Bool? {
        next < values.count ? try boolean(name) : nil
    }

    mutating func string(_ name: String) throws(PolicyError) -> String {
        let argument = try take(name, expected: Self.aString)
        switch argument {
        case let .string(v), let .symbol(v): return v
        default: throw wrongType(argument, name, Self.aString)
        }
    }

    mutating func nonEmptyString(_ name: String) throws(PolicyError) -> String {
        let value = try string(name)
        guard !value.isEmpty, value.utf8.count <= 256 else {
            throw refusal(name, "expected 1 to 256 bytes, got \(value.utf8.count)")
        }
        return value
    }

    /// A number, or the string `off` (nil).
    mutating func numberOrOff(_ name: String) throws(PolicyError) -> Double? {
        if next < values.count, case let .string(word) = values[next] {
            next += 1
            guard word == "off" else { throw refusal(name, "expected a number or 'off', got \(Arguments.quote(word))") }
            return nil
        }
        return try number(name)
    }

    mutating func optionalString(_ name: String) throws(PolicyError) -> String? {
        next < values.count ? try string(name) : nil
    }

    mutating func optionalURL() throws(PolicyError) -> String? {
        guard let url = try optionalString("url") else { return nil }
        guard OSCURL(url) != nil else {
            throw PolicyError(.badArgument, "url: expected osc.udp://host:port/ or osc.tcp://host:port/, got \(Arguments.quote(url))")
        }
        return url
    }

    /// Refuses arguments nobody read.
    func finish() throws(PolicyError) {
        if next < values.count {
            throw PolicyError(.badArgument, "too many arguments: \(values.count) given, \(next) expected")
        }
    }
}
