/// What the log says of connections that were not served (refused outside `osc.allow`, turned
/// away over a limit), at a bounded rate (docs/HTTP.md, "Limits"): per address and kind, the first
/// `firstLines` of an interval get a line each; the rest are counted, and `flush` (once per
/// interval) gives one summary line per address with the count. At most `maximumAddresses` are
/// tracked per kind; connections from further addresses are counted together in one summary.
/// Each kind has its table, so refused peers from many addresses never take the place of the
/// lines about allowed peers turned away.
///
/// A plain value: its owner (`ConnectionBook`) keeps it under its lock and logs the lines it
/// returns outside the lock.
struct RefusalLog {
    enum Kind: String, Sendable {
        case refused = "refused HTTP from a sender outside osc.allow"
        case turnedAway = "HTTP connection limit reached: answered 503"
    }

    struct Line: Equatable, Sendable {
        var kind: Kind
        /// The peer's address, or nil for the summary of the addresses not tracked.
        var address: String?
        /// The connections it stands for: 1 for a connection's own line, the count not logged
        /// one by one for a summary.
        var count: Int
        var summary: Bool
        /// Why it was turned away (the limit), for a connection's own line.
        var detail: String?
    }

    private struct Key: Hashable {
        var kind: Kind
        var address: String
    }

    let firstLines: Int
    let maximumAddresses: Int
    private var seen: [Key: (logged: Int, unlogged: Int)] = [:]
    private var untracked: [Kind: Int] = [:]
    /// Addresses in `seen`, per kind.
    private var tracked: [Kind: Int] = [:]

    init(firstLines: Int = 3, maximumAddresses: Int = 64) {
        self.firstLines = firstLines
        self.maximumAddresses = maximumAddresses
    }

    /// One more connection of `kind` from `address`: its line, or nil when it is only counted.
    mutating func note(_ kind: Kind, from address: String, detail: String? = nil) -> Line? {
        let key = Key(kind: kind, address: address)
        let known = seen[key]
        guard var entry = known ?? (tracked[kind, default: 0] < maximumAddresses ? (0, 0) : nil) else {
            untracked[kind, default: 0] += 1
            return nil
        }
        if known == nil { tracked[kind, default: 0] += 1 }
        defer { seen[key] = entry }
        guard entry.logged < firstLines else {
            entry.unlogged += 1
            return nil
        }
        entry.logged += 1
        return Line(kind: kind, address: address, count: 1, summary: false, detail: detail)
    }

    /// The interval is over: a summary for each address with connections not logged one by one,
    /// and a fresh start for every address.
    mutating func flush() -> [Line] {
        var lines = seen.filter { $0.value.unlogged > 0 }
            .map { Line(kind: $0.key.kind, address: $0.key.address, count: $0.value.unlogged, summary: true) }
            .sorted { ($0.kind.rawValue, $0.address ?? "") < ($1.kind.rawValue, $1.address ?? "") }
        lines += untracked.filter { $0.value > 0 }.map { Line(kind: $0.key, address: nil, count: $0.value, summary: true) }
        seen.removeAll(keepingCapacity: true)
        untracked.removeAll()
        tracked.removeAll()
        return lines
    }
}
