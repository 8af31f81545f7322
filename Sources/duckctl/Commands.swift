import ArgumentParser
import ControlVocabulary
import Foundation
import OSCTransport
import Policy

extension DuckCtl {
    struct State: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the router's whole state as JSON (/state).")
        @OptionGroup var connection: Connection
        @Flag(help: "Indent the JSON.")
        var pretty = false
        func run() throws {
            try duckctl.run {
                let values = try connection.call(OSCMessage("/state"))
                guard case let .string(json)? = values.first else { return }
                if pretty, let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)),
                   let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys]) {
                    print(String(decoding: data, as: UTF8.self))
                } else {
                    print(json)
                }
            }
        }
    }

    struct Register: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register an app (or reconfigure it): /app/register.",
            discussion: "The app belongs to the address that registers it; over UDP each duckctl run has its own address, so use --tcp in one session, or an osc.admin address, to control it afterwards.")
        @OptionGroup var connection: Connection
        @Argument(help: "The app's name (letters, digits, '-', '_', '.').")
        var app: String
        @Argument(help: ArgumentHelp(words(Category.allCases) + "."))
        var category: String
        @Option(help: ArgumentHelp("Comma-separated options: " + CategoryOption.allCases.map(\.rawValue).joined(separator: ", ") + "."))
        var options = ""
        @Option(help: ArgumentHelp(words(Mode.allCases) + "."))
        var mode = "default"
        @Option(help: ArgumentHelp("Input channels of a new app (\(Limits.appChannels.lowerBound) to \(Limits.appChannels.upperBound))."))
        var channels: Int32?
        func run() throws {
            try duckctl.run {
                var arguments: [OSCArgument] = [.string(app), .string(category), .string(options), .string(mode)]
                if let channels { arguments.append(.int32(channels)) }
                show(try connection.call(OSCMessage("/app/register", arguments)))
            }
        }
    }

    struct Activate: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Activate an app's session (it may interrupt or duck others, or be refused with -6).")
        @OptionGroup var connection: Connection
        @Argument(help: "The app.")
        var app: String
        func run() throws { try duckctl.run { show(try connection.call(OSCMessage("/app/\(app)/activate"))) } }
    }

    struct Deactivate: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Deactivate an app's session.")
        @OptionGroup var connection: Connection
        @Argument(help: "The app.")
        var app: String
        @Flag(help: "Let the apps it interrupted resume.")
        var notifyOthers = false
        func run() throws {
            try duckctl.run { show(try connection.call(OSCMessage("/app/\(app)/deactivate", [.int32(notifyOthers ? 1 : 0)]))) }
        }
    }

    struct Unregister: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an app and its ports.")
        @OptionGroup var connection: Connection
        @Argument(help: "The app.")
        var app: String
        func run() throws { try duckctl.run { show(try connection.call(OSCMessage("/app/\(app)/unregister"))) } }
    }

    struct Volume: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set or show a volume as a slider position 0 to 1: the system volume of the current route, or an app's with --app.")
        @OptionGroup var connection: Connection
        @Option(help: "The app whose volume to set (default: the system volume).")
        var app: String?
        @Argument(help: "0 to 1 (cubic taper); leave out to show the current value.")
        var value: Number?
        func run() throws {
            try duckctl.run {
                let path = app.map { "/app/\($0)/volume" } ?? "/system/volume"
                show(try connection.call(OSCMessage(path, value.map { [.float($0.value)] } ?? [])))
            }
        }
    }

    struct Gain: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Set or show a volume in dB: the system's (at most 0) or an app's with --app (at most +24).")
        @OptionGroup var connection: Connection
        @Option(help: "The app whose gain to set (default: the system gain).")
        var app: String?
        @Argument(help: "dB; leave out to show the current value.")
        var value: Number?
        func run() throws {
            try duckctl.run {
                let path = app.map { "/app/\($0)/gain" } ?? "/system/gain"
                show(try connection.call(OSCMessage(path, value.map { [.float($0.value)] } ?? [])))
            }
        }
    }

    struct Silent: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Turn the silent switch on or off, or show it.")
        @OptionGroup var connection: Connection
        @Argument(help: "on or off; leave out to show.")
        var state: String?
        func validate() throws {
            if let state, !["on", "off", "1", "0"].contains(state) { throw ValidationError("expected on or off, got '\(state)'") }
        }
        func run() throws {
            try duckctl.run {
                let arguments: [OSCArgument] = state.map { [.int32($0 == "on" || $0 == "1" ? 1 : 0)] } ?? []
                show(try connection.call(OSCMessage("/system/silent", arguments)))
            }
        }
    }

    struct RouteCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "route", abstract: "Show the current route, select one, or say whether one is available.",
            subcommands: [Show.self, Select.self, Available.self], defaultSubcommand: Show.self)

        struct Show: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Print the current route.")
            @OptionGroup var connection: Connection
            func run() throws { try duckctl.run { show(try connection.call(OSCMessage("/route/select"))) } }
        }

        struct Select: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Select the output route (reason override; it wins until it goes away).")
            @OptionGroup var connection: Connection
            @Argument(help: "The route.")
            var route: String
            func run() throws { try duckctl.run { show(try connection.call(OSCMessage("/route/select", [.string(route)]))) } }
        }

        struct Available: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Say whether a route's device is there (for routes JACK cannot see), or show it.")
            @OptionGroup var connection: Connection
            @Argument(help: "The route.")
            var route: String
            @Argument(help: "on or off; leave out to show.")
            var state: String?
            func validate() throws {
                if let state, !["on", "off", "1", "0"].contains(state) { throw ValidationError("expected on or off, got '\(state)'") }
            }
            func run() throws {
                try duckctl.run {
                    let arguments: [OSCArgument] = state.map { [.int32($0 == "on" || $0 == "1" ? 1 : 0)] } ?? []
                    show(try connection.call(OSCMessage("/route/\(route)/available", arguments)))
                }
            }
        }
    }

    struct Interrupt: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Begin or end an outside interruption (a phone call, an alarm).")
        @OptionGroup var connection: Connection
        @Argument(help: "begin or end.")
        var phase: String
        @Argument(help: "The interruption's source, e.g. phone.")
        var source: String
        @Flag(help: "On end: the interrupted apps may resume.")
        var resume = false
        func validate() throws {
            guard phase == "begin" || phase == "end" else { throw ValidationError("expected begin or end, got '\(phase)'") }
        }
        func run() throws {
            try duckctl.run {
                let arguments: [OSCArgument] = phase == "end" ? [.string(source), .int32(resume ? 1 : 0)] : [.string(source)]
                show(try connection.call(OSCMessage("/system/interruption/\(phase)", arguments)))
            }
        }
    }

    struct Remote: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send a remote command to the app that owns remote control; prints that app.")
        @OptionGroup var connection: Connection
        @Argument(help: ArgumentHelp(words(RemoteCommand.allCases) + "."))
        var command: String
        @Argument(help: "The value (seek position in s, playback rate, skip interval in s).")
        var value: Number?
        func run() throws {
            try duckctl.run { show(try connection.call(OSCMessage("/remote/\(command)", value.map { [.float($0.value)] } ?? []))) }
        }
    }

    struct Duck: ParsableCommand {
        /// The session-wide ducking settings that take one number, from the vocabulary.
        static let parameters = Vocabulary.rows.filter { $0.path.hasPrefix("/duck/") && $0.typeTags == "f" }
            .map { String($0.path.dropFirst("/duck/".count)) }
        static let configuration = CommandConfiguration(abstract: "Set or show a session-wide ducking setting: " + words(parameters) + ".")
        @OptionGroup var connection: Connection
        @Argument(help: ArgumentHelp(words(parameters) + "."))
        var parameter: String
        @Argument(help: "The value; leave out to show.")
        var value: Number?
        func validate() throws {
            guard Self.parameters.contains(parameter) else {
                throw ValidationError("expected \(words(Self.parameters)), got '\(parameter)'")
            }
        }
        func run() throws {
            try duckctl.run { show(try connection.call(OSCMessage("/duck/\(parameter)", value.map { [.float($0.value)] } ?? []))) }
        }
    }

    struct Send: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send any OSC message and print the reply.",
            discussion: "A path of the vocabulary (duckctl paths) types its arguments as the path takes them (/app/music/volume 1 sends f 1). Other arguments are typed by their look: 3 is i, 0.5 is f, T and F are booleans, anything else is s; prefix s: to force a string (s:1).")
        @OptionGroup var connection: Connection
        @Argument(help: "The OSC path, e.g. /app/music/volume.")
        var path: String
        @Argument(help: "The arguments.")
        var arguments: [String] = []
        func run() throws {
            try duckctl.run {
                let parameters = Vocabulary.row(for: NegativeNumbers.restore(path))?.0.parameters ?? []
                let typed: [OSCArgument] = arguments.map(NegativeNumbers.restore).enumerated().map { index, word in
                    if word.hasPrefix("s:") { return .string(String(word.dropFirst(2))) }
                    if index < parameters.count, let argument = typedAs(parameters[index].kind, word) { return argument }
                    if word == "T" { return .true }
                    if word == "F" { return .false }
                    if let i = Int32(word) { return .int32(i) }
                    if let f = Float(word), word.contains(".") || word.contains("e") || word.lowercased() == "nan" || word.lowercased().contains("inf") { return .float(f) }
                    return .string(word)
                }
                show(try connection.call(OSCMessage(path, typed)))
            }
        }
    }

    struct Watch: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Subscribe and print every notification as it arrives, until Ctrl-C.",
            discussion: "Each line is the OSC path and its arguments. The subscription is renewed every 10 s, so a router that restarted is followed.")
        @OptionGroup var connection: Connection
        @Option(help: "Also print peak meters at this rate in Hz (at most 20).")
        var meters: Double?
        @Option(help: "Stop after this many seconds (default: never).")
        var seconds: Double?
        func run() throws {
            try duckctl.run {
                let client = try connection.client()
                _ = try Connection.call(OSCMessage("/subscribe"), on: client, timeout: connection.timeout)
                if let meters { _ = try Connection.call(OSCMessage("/meters", [.float(Float(meters))]), on: client, timeout: connection.timeout) }
                let start = Date()
                var renewed = Date()
                while seconds.map({ Date().timeIntervalSince(start) < $0 }) ?? true {
                    if Date().timeIntervalSince(renewed) > 10 {
                        try? client.send(OSCMessage("/subscribe"))
                        renewed = Date()
                    }
                    let packet: OSCPacket?
                    do { packet = try client.receive(timeout: 0.5) } catch { throw Failure(message: "\(error)", code: 2) }
                    guard let packet else { continue }
                    for message in OSCClient.messages(in: packet) where message.path != "/reply" {
                        let line = ([message.path] + message.arguments.map(text)).joined(separator: " ") + "\n"
                        FileHandle.standardOutput.write(Data(line.utf8))
                    }
                }
            }
        }
    }
}

/// Words as help lists them: "a, b or c".
func words<T: RawRepresentable>(_ cases: [T]) -> String where T.RawValue == String { words(cases.map(\.rawValue)) }

func words(_ list: [String]) -> String {
    list.count < 2 ? list.joined() : list.dropLast().joined(separator: ", ") + " or " + list.last!
}

/// `word` as the vocabulary's `kind` of argument, if it reads as one (a word that does not, such
/// as `off` for a number, goes by its look).
func typedAs(_ kind: PathRow.Parameter.Kind, _ word: String) -> OSCArgument? {
    switch kind {
    // A whole number goes as i, exactly (a float would round 123456789); the router takes i for f.
    case .float: Int32(word).map { .int32($0) } ?? Float(word).map { .float($0) }
    case .int: Int32(word).map { .int32($0) } ?? (word == "on" ? .int32(1) : word == "off" ? .int32(0) : nil)
    case .string: .string(word)
    }
}

extension DuckCtl {
    struct Paths: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every OSC path the router takes: its arguments, its reply and what it does (the router's own table).")
        @Flag(help: "Also the read-only nodes that only OSCQuery shows.")
        var all = false
        func run() throws {
            for row in Vocabulary.rows where row.overOSC || all {
                let shape = row.overOSC ? "\(row.arguments) → \(row.reply)" : "(OSCQuery, read only)"
                print("\(row.path)  \(shape)\n    \(row.description)")
            }
        }
    }
}
