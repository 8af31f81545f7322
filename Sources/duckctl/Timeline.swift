import ArgumentParser
import Foundation
import OSCTransport

/// What happened lately, from the router's timeline (docs/OSC.md, "/timeline").
extension DuckCtl {
    struct TimelineCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "timeline",
            abstract: "Print what happened lately, oldest first, one event a line (/timeline).",
            discussion: "Each line is the event's local time, its number, its kind and its words; --changed adds what it changed. The router keeps its last 256 events.")
        @OptionGroup var connection: Connection
        @Option(help: "Only the events after this number.")
        var after: Int = 0
        @Flag(help: "Also print what each event changed, field by field.")
        var changed = false
        @Flag(help: "Print the router's answer as JSON.")
        var json = false
        func validate() throws {
            if after < 0 { throw ValidationError("--after: expected 0 or more, got \(after)") }
        }
        func run() throws {
            try duckctl.run {
                let values = try connection.call(OSCMessage("/timeline", [.int32(Int32(clamping: after))]))
                guard case let .string(answer)? = values.first else { return }
                if json { return print(answer) }
                for line in try Self.lines(answer, changed: changed) { print(line) }
            }
        }

        /// The answer in lines: "14:02:11  #12  interruption  music: interruption began".
        static func lines(_ answer: String, changed: Bool) throws -> [String] {
            guard let object = try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any],
                  let events = object["events"] as? [[String: Any]] else {
                throw Failure(message: "the router's /timeline answer is not what docs/OSC.md says: \(answer.prefix(200))", code: 1)
            }
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let clock = DateFormatter()
            clock.dateFormat = "HH:mm:ss"
            return events.flatMap { event -> [String] in
                let at = (event["at"] as? String).flatMap(iso.date(from:)).map(clock.string(from:)) ?? "?"
                let kind = (event["kind"] as? String ?? "").padding(toLength: 12, withPad: " ", startingAt: 0)
                let line = "\(at)  #\(event["number"] as? Int ?? 0)  \(kind) \(event["text"] as? String ?? "")"
                guard changed, let fields = event["changed"] as? [String: String] else { return [line] }
                return [line] + fields.keys.sorted().map { "    \($0): \(fields[$0]!)" }
            }
        }
    }
}
