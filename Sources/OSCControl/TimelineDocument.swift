import Foundation
import RouterCore

/// `/timeline`'s answer: the recent events after a number, oldest first, as JSON (docs/OSC.md,
/// "/timeline").
struct TimelineDocument: Encodable {
    struct Event: Encodable {
        var number: Int
        /// ISO 8601, UTC, with milliseconds.
        var at: String
        var kind: String
        var subject: String
        var text: String
        var changed: [String: String]
    }

    /// The newest event's number (0: none yet); ask with it next time for only what is new.
    var newest: Int
    /// How many events the router keeps.
    var capacity: Int
    var events: [Event]

    init(_ timeline: Timeline, after: Int) {
        let (events, newest) = timeline.events(after: after)
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        self.newest = newest
        capacity = timeline.capacity
        self.events = events.map { event in
            Event(number: event.number, at: format.string(from: event.time), kind: event.kind, subject: event.subject,
                  text: event.text, changed: event.changed)
        }
    }
}

extension ControlServer {
    func timelineJSON(after: Int) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(TimelineDocument(router.timeline, after: after)) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
