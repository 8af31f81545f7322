import Policy

/// Changes waiting for their moment (OSC bundles with a future timetag), soonest first, each with
/// the JACK frame it must be heard at.
///
/// Owns: the waiting changes and their completions. Must not touch: the policy or plans; the
/// router applies what `takeDue` hands it. Control queue only.
struct TimedChanges {
    struct Entry {
        var changes: [Router.Change]
        var frame: UInt32
        var completion: @Sendable (Result<[PolicyEffect], RouterError>) -> Void
        /// The generation of the control page's key that gave the right to make them (nil: the
        /// sender's own rights did): withdrawn when a newer key is made, whether or not the
        /// stream that presented the old one is still open.
        var keyGeneration: Int?
    }

    private var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }

    /// Files an entry by its frame (frame times wrap at 2^32: the signed distance orders them).
    mutating func insert(_ entry: Entry) {
        let position = entries.firstIndex { Int32(bitPattern: $0.frame &- entry.frame) > 0 } ?? entries.count
        entries.insert(entry, at: position)
    }

    /// The entries due within `lead` frames of `now`, in order, taken out.
    mutating func takeDue(now: UInt32, lead: Int32) -> [Entry] {
        var due: [Entry] = []
        while let first = entries.first, Int32(bitPattern: first.frame &- now) <= lead {
            due.append(entries.removeFirst())
        }
        return due
    }

    /// The entries whose changes a key older than `generation` allowed, taken out.
    mutating func take(allowedByKeysBefore generation: Int) -> [Entry] {
        let revoked = { (entry: Entry) in entry.keyGeneration.map { $0 < generation } == true }
        let taken = entries.filter(revoked)
        entries.removeAll(where: revoked)
        return taken
    }

    /// Every entry, taken out (their frame clock went away with the server).
    mutating func takeAll() -> [Entry] {
        defer { entries = [] }
        return entries
    }
}
