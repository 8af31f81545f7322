import OSCTransport
import Policy

/// App sessions: `/app/register` and `/app/<app>/…` (docs/OSC.md, "Paths").
extension Vocabulary {
    typealias P = PathRow.Parameter

    static let categories = P.Values.words(Category.allCases.map(\.rawValue))
    static let modes = P.Values.words(Mode.allCases.map(\.rawValue))
    static let appStates = P.Values.words(AppAudioState.allCases.map(\.rawValue))

    static let appRows: [PathRow] = [
        PathRow("/app/register", .writeOnly, scope: .appInFirstArgument,
                [P("app", .string), P("category", .string, categories)],
                arguments: "s app, s category, [s options], [s mode], [i channels]", reply: "s app",
                "create or reconfigure an app: s app, s category, [s options], [s mode], [i channels]; the sender owns it",
                example: [.string("music"), .string("playback")], decode: register),
        PathRow("/app/<app>/volume", .readWrite, [P("volume", .float, .numbers(Limits.volume))],
                arguments: "f 0..1", reply: "f volume",
                "relative volume: slider position, cubic taper (0.5 is about -18 dB)",
                example: [.float(0.5)], decode: appVolume, answer: { q in [.float(Decibels.sliderPosition(linear: try q.app().volume))] }),
        PathRow("/app/<app>/gain", .readWrite, [P("gain", .float, .numbers(Limits.appGain), unit: "gain.db")],
                arguments: "f dB", reply: "f dB",
                "relative volume in dB; -144 or less is silence",
                example: [.float(-6)], decode: appGain, answer: { q in [.float(max(Decibels.level(try q.app().volume), Decibels.floor))] }),
        PathRow("/app/<app>/category", .readWrite,
                [P("category", .string, categories), P("options", .string), P("mode", .string, modes)],
                arguments: "s category, [s options], [s mode]", reply: "s category, s options, s mode",
                "category, options (comma-separated) and mode",
                example: [.string("playback")], decode: category, answer: { q in
                    let configuration = try q.app().configuration
                    return ControlCommand.categoryArguments(configuration.category, configuration.options, configuration.mode)
                }),
        PathRow(readOnly: "/app/<app>/state", [P("state", .string, appStates)],
                "what the app is doing now (read only; /duckrouter/app notifies changes)",
                show: { [.string($0.app?.state ?? AppAudioState.inactive.rawValue)] }),
        PathRow(readOnly: "/app/<app>/meter", [P("peak", .float, .numbers(Limits.meter), unit: "gain.db")],
                "the app's input peak per channel, dBFS; LISTEN gets it at 20 Hz (read only)",
                perChannel: true, show: { meter($0.app?.peaks ?? []) }),
        PathRow(readOnly: "/app/<app>/why", [P("why", .string)],
                "what holds the app back now: \"ducked by nav\", \"interrupted by phone (outside)\", \"silenced by the silent switch\", \"muted\"; \"\" when nothing does (read only)",
                show: { [.string($0.app?.why ?? "")] }),
        PathRow("/app/<app>/activate", .none, arguments: "—", reply: "—",
                "setActive(true): may interrupt or duck others, or be refused (-6)",
                example: [], decode: { _, name in .change(.activate(app: name), channels: nil) }),
        PathRow("/app/<app>/deactivate", .none, arguments: "[i notifyOthers]", reply: "—",
                "setActive(false); an optional i notifyOthers=1 lets interrupted apps resume",
                example: [], decode: deactivate),
        PathRow("/app/<app>/activation", .readWrite,
                [P("activation", .string, .words(Activation.allCases.map(\.rawValue))),
                 P("threshold", .float, .numbers(Limits.signalThreshold), unit: "gain.db"),
                 P("attack", .float, .numbers(Limits.signalAttack), unit: "time.millisecond"),
                 P("hold", .float, .numbers(Limits.rampMilliseconds), unit: "time.millisecond"),
                 P("hysteresis", .float, .numbers(Limits.signalHysteresis), unit: "gain.db")],
                arguments: "s `osc`/`signal`, [f threshold dBFS], [f attack ms], [f hold ms], [f hysteresis dB]",
                reply: "s activation, f threshold, f attack, f hold, f hysteresis",
                "what activates the app (osc or signal) and the signal detection: threshold dBFS, attack ms, hold ms, hysteresis dB",
                example: [.string("osc")], decode: activation, answer: { q in
                    let session = try q.app()
                    return [.string(session.configuration.activation.rawValue), .float(Float(session.signal.threshold)),
                            .float(Float(session.signal.attack)), .float(Float(session.signal.hold)), .float(Float(session.signal.hysteresis))]
                }),
        PathRow("/app/<app>/mute", .readWrite, [P("muted", .int, .numbers(0...1))],
                arguments: "i 0/1", reply: "i muted",
                "muted: silent whatever its volume (which it keeps), and ducking no one; kept across restarts",
                example: [.int32(1)], decode: { a, name in
                    a.isEmpty ? ask(name) : .change(.setAppSetting(app: name, .muted(try a.boolean("muted"))), channels: nil)
                }, answer: { q in [.int32(try q.app().settings.muted ? 1 : 0)] }),
        PathRow("/app/<app>/remote", .readWrite, [P("commands", .string)],
                arguments: "s commands", reply: "s commands",
                "remote commands the app handles, comma-separated",
                example: [.string("play,pause")], decode: remote, answer: { q in [.string(words(try q.app().configuration.remoteCommands))] }),
        PathRow("/app/<app>/notify", .readWrite, [P("url", .string)],
                arguments: "s url", reply: "s url",
                "where the app's notifications go: osc.udp://host:port/ or osc.tcp://host:port/ (\"\" for none)",
                example: [.string("")], decode: notify, answer: { q in
                    _ = try q.app()
                    return [.string(q.notify(q.query.name))]
                }),
        PathRow("/app/<app>/unregister", .none, arguments: "—", reply: "—",
                "removes the app and its ports",
                example: [], decode: { _, name in .change(.unregister(app: name), channels: nil) }),
        // Pairs, as many as the app has channels: more than OSCQuery's TYPE can say.
        PathRow("/app/<app>/channelmap", .readWrite, inNamespace: false,
                arguments: "pairs: i app channel, s `route:channel` …; or s `default`", reply: "the map, as pairs, or s `default`",
                "which app channel plays on which route channel (multiRoute apps)",
                example: [.string("default")], decode: channelMap, answer: { q in ControlCommand.channelMapArguments(try q.app().channelMap) }),
    ]

    /// A meter's values: each channel's peak, dBFS, no lower than the meter's floor.
    static func meter(_ peaks: [Double]) -> [OSCArgument] {
        peaks.map { .float(Float(max($0, Limits.meter.lowerBound))) }
    }

    static func register(_ a: inout Arguments, _: String) throws(PolicyError) -> ControlCommand {
        let name = try a.string("app")
        let (category, options, mode) = try categoryArguments(&a)
        let channels = try a.optionalInteger("channels")
        if let channels, !Limits.appChannels.contains(channels) {
            throw a.refusal("channels", "expected \(Limits.appChannels.lowerBound) to \(Limits.appChannels.upperBound), got \(channels)")
        }
        return .change(.register(AppConfiguration(name: name, category: category, options: options, mode: mode)), channels: channels)
    }

    static func appVolume(_ a: inout Arguments, _ name: String) throws(PolicyError) -> ControlCommand {
        if a.isEmpty { return ask(name) }
        return .change(.setAppVolume(app: name, .position(try a.number("volume 0..1"))), channels: nil)
    }

    static func appGain(_ a: inout Arguments, _ name: String) throws(PolicyError) -> ControlCommand {
        if a.isEmpty { return ask(name) }
        return .change(.setAppVolume(app: name, .decibels(try a.number("gain in dB", allowNegativeInfinity: true))), channels: nil)
    }

    static func category(_ a: inout Arguments, _ name: String) throws(PolicyError) -> ControlCommand {
        if a.isEmpty { return ask(name) }
        let (category, options, mode) = try categoryArguments(&a)
        return .change(.setCategory(app: name, category: category, options: options, mode: mode), channels: nil)
    }

    static func deactivate(_ a: inout Arguments, _ name: String) throws(PolicyError) -> ControlCommand {
        .change(.deactivate(app: name, notifyOthers: try a.optionalBoolean("notifyOthers") ?? false), channels: nil)
    }

    static func remote(_ a: inout Arguments, _ name: String) throws(PolicyError) -> ControlCommand {
        if a.isEmpty { return ask(name) }
        return .change(.setRemoteCommands(app: name, try list(a.string("commands"), RemoteCommand.self, "remote command")), channels: nil)
    }

    static func notify(_ a: inout Arguments, _ name: String) throws(PolicyError) -> ControlCommand {
        if a.isEmpty { return ask(name) }
        let url = try a.string("url")
        guard url.isEmpty || OSCURL(url) != nil else {
            throw PolicyError(.badArgument, "url: expected osc.udp://host:port/ or osc.tcp://host:port/, got \(Arguments.quote(url))")
        }
        return .setNotify(app: name, url: url)
    }

    static func activation(_ a: inout Arguments, _ name: String) throws(PolicyError) -> ControlCommand {
        if a.isEmpty { return ask(name) }
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
    }

    static func channelMap(_ a: inout Arguments, _ name: String) throws(PolicyError) -> ControlCommand {
        if a.isEmpty { return ask(name) }
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
    }

    static func categoryArguments(_ a: inout Arguments) throws(PolicyError) -> (Category, Set<CategoryOption>, Mode) {
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
}
