/// How many refusals are answered and logged one by one: the first few from each address in an
/// interval, then one summary line when the interval ends (docs/OSC.md, "Limits").
///
/// A flood of refused packets or connections, from one address or from many forged ones, then
/// costs at most `perAddress` answers from each address and `overall` answers in all per
/// interval, each with its log line, and one summary line. The table of addresses holds at most
/// `capacity` entries and is emptied at every interval; refusals from addresses beyond it are
/// counted, never answered.
public struct RefusalBudget: Sendable {
    /// What an interval left unanswered.
    public struct Summary: Equatable, Sendable, CustomStringConvertible {
        /// Refusals that got no answer and no log line of their own.
        public var unanswered: Int
        /// The addresses they came from (those beyond the table counted as one, unnamed).
        public var addresses: Int
        /// The addresses with the most of them, most first (at most three), and how many each.
        public var busiest: [Busiest]
        public var seconds: Double

        public struct Busiest: Equatable, Sendable {
            public var host: String
            public var count: Int
        }

        public var description: String {
            let named = busiest.map { "\($0.host) (\($0.count))" }.joined(separator: ", ")
            let from = addresses == 1 ? "1 address" : "\(addresses) addresses"
            return "\(unanswered) in the last \(Int(seconds.rounded())) s from \(from)" + (named.isEmpty ? "" : ": \(named)")
        }
    }

    public let perAddress: Int
    public let overall: Int
    public let interval: Double
    public let capacity: Int

    private struct Entry {
        var answered = 0
        var unanswered = 0
    }
    private var table: [String: Entry] = [:]
    private var start: Double?
    private var answered = 0
    private var unanswered = 0
    /// Unanswered refusals from addresses the table had no room for.
    private var untracked = 0

    public init(perAddress: Int = 5, overall: Int = 20, interval: Double = 10, capacity: Int = 256) {
        self.perAddress = perAddress
        self.overall = overall
        self.interval = interval
        self.capacity = capacity
    }

    /// Counts a refusal from `host` at `now` (seconds, on a clock that never goes back): whether to
    /// answer and log it, and the summary of an interval that ended before it, if one is due.
    public mutating func note(_ host: String, now: Double) -> (answer: Bool, ended: Summary?) {
        let ended = summary(now: now)
        if start == nil { start = now }
        if var entry = table[host] {
            if entry.answered < perAddress && answered < overall {
                entry.answered += 1
                answered += 1
                table[host] = entry
                return (true, ended)
            }
            entry.unanswered += 1
            unanswered += 1
            table[host] = entry
            return (false, ended)
        }
        guard table.count < capacity else {
            untracked += 1
            unanswered += 1
            return (false, ended)
        }
        let answer = answered < overall && perAddress > 0
        table[host] = answer ? Entry(answered: 1) : Entry(unanswered: 1)
        if answer { answered += 1 } else { unanswered += 1 }
        return (answer, ended)
    }

    /// When the interval with unanswered refusals in it ends (its summary is due then); nil when
    /// no refusal went unanswered.
    public var due: Double? {
        guard let start, unanswered > 0 else { return nil }
        return start + interval
    }

    /// The summary of the interval, once it has ended by `now` (nil before, or when every refusal
    /// in it was answered); a new interval begins with the next refusal.
    public mutating func summary(now: Double) -> Summary? {
        guard let begun = start, now >= begun + interval else { return nil }
        defer {
            start = nil
            table.removeAll(keepingCapacity: true)
            answered = 0
            unanswered = 0
            untracked = 0
        }
        guard unanswered > 0 else { return nil }
        let counted = table.filter { $0.value.unanswered > 0 }
        let busiest = counted.sorted { $0.value.unanswered > $1.value.unanswered || ($0.value.unanswered == $1.value.unanswered && $0.key < $1.key) }
            .prefix(3).map { Summary.Busiest(host: $0.key, count: $0.value.unanswered) }
        return Summary(unanswered: unanswered, addresses: counted.count + (untracked > 0 ? 1 : 0), busiest: busiest,
                       seconds: max(interval, now - begun))
    }

    /// Addresses in the table now (for tests: it never holds more than `capacity`).
    public var trackedAddresses: Int { table.count }
}
