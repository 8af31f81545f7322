import ArgumentParser
import ControlVocabulary
import OSCTransport
import Policy

/// Scenes and the cue list (docs/OSC.md, "Scenes and cues").
extension DuckCtl {
    struct SceneCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "scene",
            abstract: "Recall, store, delete, list or show scenes.",
            subcommands: [Recall.self, Store.self, Delete.self, List.self, Current.self, Show.self])

        struct Recall: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Recall a scene: its settings at once, its volumes over its fade (/scene/recall).")
            @OptionGroup var connection: Connection
            @Argument(help: "The scene.")
            var scene: String
            @Option(help: "The fade in milliseconds (default: the scene's).")
            var fade: Number?
            @Option(help: ArgumentHelp(words(FadeCurve.allCases) + " (default: the scene's)."))
            var curve: String?
            func validate() throws {
                if let curve, FadeCurve(rawValue: curve) == nil {
                    throw ValidationError("expected \(words(FadeCurve.allCases)), got '\(curve)'")
                }
                if curve != nil && fade == nil { throw ValidationError("--curve needs --fade (the OSC message gives them in that order)") }
            }
            func run() throws {
                var arguments: [OSCArgument] = [.string(scene)]
                if let fade { arguments.append(.float(fade.value)) }
                if let curve { arguments.append(.string(curve)) }
                try duckctl.run { show(try connection.call(OSCMessage("/scene/recall", arguments))) }
            }
        }

        struct Store: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Store the settings as they are as a scene (/scene/store; an osc.admin address only).",
                discussion: "Every app and route but the recall-safe ones, or only those named.")
            @OptionGroup var connection: Connection
            @Argument(help: "The scene.")
            var scene: String
            @Argument(help: "Only these apps and routes.")
            var only: [String] = []
            func run() throws {
                let arguments: [OSCArgument] = [.string(scene)] + (only.isEmpty ? [] : [.string(only.joined(separator: ","))])
                try duckctl.run { show(try connection.call(OSCMessage("/scene/store", arguments))) }
            }
        }

        struct Delete: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Delete a stored scene (/scene/delete; an osc.admin address only).")
            @OptionGroup var connection: Connection
            @Argument(help: "The scene.")
            var scene: String
            func run() throws { try duckctl.run { show(try connection.call(OSCMessage("/scene/delete", [.string(scene)]))) } }
        }

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the scenes, one a line (/scene/list).")
            @OptionGroup var connection: Connection
            func run() throws {
                try duckctl.run { for name in try connection.call(OSCMessage("/scene/list")) { print(text(name)) } }
            }
        }

        struct Current: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "The scene last recalled, and whether its fade runs (/scene/current).")
            @OptionGroup var connection: Connection
            func run() throws { try duckctl.run { show(try connection.call(OSCMessage("/scene/current"))) } }
        }

        struct Show: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "One scene: fade, curve, whether stored, and what it sets as JSON (/scene/<scene>).")
            @OptionGroup var connection: Connection
            @Argument(help: "The scene.")
            var scene: String
            func run() throws { try duckctl.run { show(try connection.call(OSCMessage("/scene/\(scene)"))) } }
        }
    }

    struct CueCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cue",
            abstract: "Run the cue list: go, back, goto, state.",
            subcommands: [Go.self, Back.self, Goto.self, CueState.self])

        struct Go: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Fire the cue at the playhead (/cue/go).")
            @OptionGroup var connection: Connection
            func run() throws { try duckctl.run { show(try connection.call(OSCMessage("/cue/go"))) } }
        }

        struct Back: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Move the playhead back one cue, recalling nothing (/cue/back).")
            @OptionGroup var connection: Connection
            func run() throws { try duckctl.run { show(try connection.call(OSCMessage("/cue/back"))) } }
        }

        struct Goto: ParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Move the playhead to a cue (its number from 1, or a scene's name), recalling nothing (/cue/goto).")
            @OptionGroup var connection: Connection
            @Argument(help: "The cue's number, or a scene.")
            var cue: String
            func run() throws {
                let argument: OSCArgument = Int32(cue).map { .int32($0) } ?? .string(cue)
                try duckctl.run { show(try connection.call(OSCMessage("/cue/goto", [argument]))) }
            }
        }

        struct CueState: ParsableCommand {
            static let configuration = CommandConfiguration(commandName: "state",
                                                            abstract: "The cue last fired, the one at the playhead, and how many there are (/cue/state): last 2 act1 · next 3 interval · 6 cues.")
            @OptionGroup var connection: Connection
            func run() throws {
                try duckctl.run {
                    let values = try connection.call(OSCMessage("/cue/state"))
                    guard values.count == 5, case let .int32(last) = values[0], case let .int32(next) = values[2], case let .int32(count) = values[4] else {
                        show(values)
                        return
                    }
                    func cue(_ number: Int32, _ scene: OSCArgument) -> String { number == 0 ? "none" : "\(number) \(text(scene))" }
                    print("last \(cue(last, values[1])) · next \(cue(next, values[3])) · \(count) cue\(count == 1 ? "" : "s")")
                }
            }
        }
    }
}
