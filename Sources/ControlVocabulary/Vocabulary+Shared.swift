import OSCTransport
import Policy

/// The shared controls: the system, routes, remote commands and ducking (docs/OSC.md, "Paths").
extension Vocabulary {
    static let systemRows: [PathRow] = [
        PathRow("/system/volume", .readWrite, [P("volume", .float, .numbers(Limits.volume))],
                arguments: "f 0..1", reply: "f volume, s route",
                "system volume of the current route: slider position, cubic taper",
                example: [.float(0.5)], decode: { a, _ in
                    a.isEmpty ? ask() : .systemVolume(.position(try a.number("volume 0..1")))
                }, answer: { q in
                    let route = try q.currentRoute()
                    return [.float(Decibels.sliderPosition(linear: route.volume)), .string(route.name)]
                }),
        PathRow("/system/gain", .readWrite, [P("gain", .float, .numbers(Limits.systemGain), unit: "gain.db")],
                arguments: "f dB", reply: "f dB, s route",
                "system volume of the current route in dB; -144 or less is silence",
                example: [.float(-6)], decode: { a, _ in
                    a.isEmpty ? ask() : .systemVolume(.decibels(try a.number("gain in dB", allowNegativeInfinity: true)))
                }, answer: { q in
                    let route = try q.currentRoute()
                    return [.float(max(Decibels.level(route.volume), Decibels.floor)), .string(route.name)]
                }),
        PathRow("/system/silent", .readWrite, [P("on", .int, .numbers(0...1))],
                arguments: "i 0/1", reply: "i on",
                "the silent switch: silences ambient and soloAmbient apps",
                example: [.int32(0)], decode: { a, _ in
                    a.isEmpty ? ask() : .change(.setSilentSwitch(try a.boolean("on")), channels: nil)
                }, answer: { q in [.int32(q.state.silentSwitch ? 1 : 0)] }),
        PathRow(readOnly: "/system/interruption/sources", [P("sources", .string)],
                "the outside interruptions under way, comma-separated (read only)",
                show: { [.string($0.outsideInterruptions.joined(separator: ","))] }),
        PathRow("/system/interruption/begin", .writeOnly, [P("source", .string)],
                arguments: "s source", reply: "—",
                "an outside interruption begins: s source",
                example: [.string("phone")], decode: { a, _ in
                    .change(.outsideInterruptionBegan(source: try a.nonEmptyString("source")), channels: nil)
                }),
        PathRow("/system/interruption/end", .writeOnly, [P("source", .string), P("shouldResume", .int, .numbers(0...1))],
                arguments: "s source, [i shouldResume]", reply: "—",
                "it ends: s source, i shouldResume",
                example: [.string("phone")], decode: { a, _ in
                    let source = try a.nonEmptyString("source")
                    return .change(.outsideInterruptionEnded(source: source, shouldResume: try a.optionalBoolean("shouldResume") ?? false), channels: nil)
                }),
    ]

    static let routeRows: [PathRow] = [
        PathRow("/route/select", .readWrite, [P("route", .string, .routeNames)],
                arguments: "s route", reply: "s route",
                "the current route; setting it is a person's choice (reason override)",
                example: [.string("speaker")], decode: { a, _ in
                    a.isEmpty ? ask() : .change(.selectRoute(try a.nonEmptyString("route")), channels: nil)
                }, answer: { q in [.string(q.state.currentRoute ?? "")] }),
        PathRow("/route/<route>/available", .readWrite, [P("available", .int, .numbers(0...1))],
                arguments: "i 0/1", reply: "i available now",
                "whether the route's device is there (settable for devices JACK cannot show)",
                example: [.int32(1)], decode: { a, route in
                    a.isEmpty ? ask(route) : .change(.setRouteAvailable(route: route, try a.boolean("available")), channels: nil)
                }, answer: { q in [.int32(q.state.availableRoutes.contains(try q.route()) ? 1 : 0)] }),
        PathRow(readOnly: "/route/<route>/volume", [P("volume", .float, .numbers(Limits.volume))],
                "the route's system volume, kept per route (read only; /system/volume sets the current route's)",
                show: { [.float(Float($0.route?.volume ?? 0))] }),
        PathRow(readOnly: "/route/<route>/meter", [P("peak", .float, .numbers(Limits.meter), unit: "gain.db")],
                "the route's output peak per channel, dBFS; LISTEN gets it at 20 Hz (read only)",
                perChannel: true, show: { meter($0.route?.peaks ?? []) }),
    ]

    static let remoteRows: [PathRow] =
        [PathRow(readOnly: "/remote/nowPlaying", [P("app", .string)], "the app remote commands go to now; \"\" when none (read only)",
                 show: { [.string($0.nowPlaying ?? "")] })]
        + RemoteCommand.allCases.map { command in
            // The value's range is the policy's (`RemoteCommand.valueRule`); the words are these.
            func value(_ name: String, _ range: ClosedRange<Double>) -> P {
                P(name, .float, range.upperBound == .greatestFiniteMagnitude ? .atLeast(range.lowerBound) : .numbers(range))
            }
            let (parameters, description, example): ([P], String, [OSCArgument]) = switch (command, command.valueRule) {
            case (_, .none): ([], command.rawValue, [])
            case let (.seek, .required(range, _)): ([value("seconds", range)], "seek to a position: f seconds", [.float(10)])
            case let (.changePlaybackRate, .required(range, _)): ([value("rate", range)], "change the playback rate: f rate", [.float(1)])
            case let (_, .required(range, _)): ([value("value", range)], "\(command.rawValue): f value", [.float(Float(range.lowerBound))])
            case let (_, .optional(range, _)): ([value("interval", range)], "\(command.rawValue): an optional f interval in seconds", [])
            }
            return PathRow("/remote/\(command.rawValue)", parameters.isEmpty ?  .none : .writeOnly, parameters,
                           arguments: "[f value]", reply: "s app", description, example: example, decode: { a, _ in
                               .change(.remoteCommand(command, value: try a.optionalNumber("value")), channels: nil)
                           })
        }

    static let duckRows: [PathRow] = [
        PathRow("/duck/level", .readWrite, [P("level", .float, .numbers(Limits.duckLevel), unit: "gain.db")],
                arguments: "f dB", reply: "f dB",
                "how far ducking lowers the others, dB", example: [.float(-20)], decode: { a, _ in
                    a.isEmpty ? ask() : .change(.setDucking(.level(try a.number("level in dB"))), channels: nil)
                }, answer: { q in [.float(Float(q.state.ducking.level))] }),
        PathRow("/duck/attack", .readWrite, [P("attack", .float, .numbers(Limits.rampMilliseconds), unit: "time.millisecond")],
                arguments: "f ms", reply: "f ms",
                "how long the duck takes to go down, ms", example: [.float(200)], decode: { a, _ in
                    a.isEmpty ? ask() : .change(.setDucking(.attack(try a.number("attack in ms"))), channels: nil)
                }, answer: { q in [.float(Float(q.state.ducking.attack))] }),
        PathRow("/duck/release", .readWrite, [P("release", .float, .numbers(Limits.rampMilliseconds), unit: "time.millisecond")],
                arguments: "f ms", reply: "f ms",
                "how long it takes to come back, ms", example: [.float(500)], decode: { a, _ in
                    a.isEmpty ? ask() : .change(.setDucking(.release(try a.number("release in ms"))), channels: nil)
                }, answer: { q in [.float(Float(q.state.ducking.release))] }),
        // A number or the word `off`: OSCQuery's TYPE has one type per argument.
        PathRow("/duck/target", .readWrite, inNamespace: false,
                arguments: "f LU, or s `off`", reply: "f LU or s `off`",
                "the loudness difference every duck aims at, LU, or off", example: [.string("off")], decode: { a, _ in
                    a.isEmpty ? ask() : .change(.setDucking(.target(try a.numberOrOff("target in LU"))), channels: nil)
                }, answer: { q in [q.state.ducking.target.map { .float(Float($0)) } ?? .string("off")] }),
        PathRow("/duck/floor", .readWrite, [P("floor", .float, .numbers(Limits.duckLevel), unit: "gain.db")],
                arguments: "f dB", reply: "f dB",
                "the deepest a loudness-targeted duck goes, dB", example: [.float(-40)], decode: { a, _ in
                    a.isEmpty ? ask() : .change(.setDucking(.floor(try a.number("floor in dB"))), channels: nil)
                }, answer: { q in [.float(Float(q.state.ducking.floor))] }),
        // Settings as key and value pairs, as many as given.
        PathRow("/duck/rule", .readWrite, inNamespace: false,
                arguments: "s ducker, s ducked, s route (`\"\"`: every route), then pairs s key, f value: `level` (dB), `target` (LU), `floor` (dB), `attack`, `release` (ms); or s `remove`",
                reply: "the rule, in the same form",
                "the ducking rule for a pair of apps on a route",
                example: [.string("nav"), .string("music"), .string(""), .string("level"), .float(-12)], decode: { a, _ in try duckRule(&a) }, answer: { q in
                    guard q.query.arguments.count == 3 else {
                        throw PolicyError(.badArgument, "/duck/rule asks with a ducker, a ducked app and a route")
                    }
                    let (ducker, ducked, route) = (q.query.arguments[0], q.query.arguments[1], q.query.arguments[2].isEmpty ? nil : q.query.arguments[2])
                    if let route, q.state.systemVolume(route) == nil { throw PolicyError(.unknownRoute, "no route named '\(route)'") }
                    guard let rule = q.state.ducking.storedRule(ducker: ducker, ducked: ducked, route: route) else {
                        throw PolicyError.noDuckingRule(ducker: ducker, ducked: ducked, route: route)
                    }
                    return ControlCommand.ruleArguments(rule)
                }),
    ]

    /// `/duck/rule s ducker, s ducked, s route ("": every route)`, then `s key, f value` pairs
    /// (`level`, `target`, `floor`, `attack`, `release`), or `s remove`; the three alone ask.
    static func duckRule(_ a: inout Arguments) throws(PolicyError) -> ControlCommand {
        let ducker = try a.nonEmptyString("ducker")
        let ducked = try a.nonEmptyString("ducked")
        let routeName = try a.string("route (\"\": every route)")
        let route = routeName.isEmpty ? nil : routeName
        if a.isAtEnd { return ask("", [ducker, ducked, routeName]) }
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
}
