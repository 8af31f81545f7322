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
        /// The apps its changes act on (`PolicyEvent.app`): it is withdrawn when one of them is
        /// removed or changes owner before it applies, so it never lands on an app that is no
        /// longer the one it was allowed on.
        var apps: Set<String>

        init(changes: [Router.Change], frame: UInt32, completion: @escaping @Sendable (Result<[PolicyEffect], RouterError>) -> Void,
             keyGeneration: Int? = nil) {
            self.changes = changes
            self.frame = frame
            self.completion = completion
            self.keyGeneration = keyGeneration
            apps = Set(changes.compactMap(\.event.app))
        }
    }

    /// The most changes that wait at once: each costs memory until its moment (60 s at most) and
    /// filing one walks the list.
    static let capacity = 1024

    private var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }
    var isFull: Bool { entries.count >= Self.capacity }

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

    /// The entries whose changes act on `app`, taken out.
    mutating func take(actingOn app: String) -> [Entry] {
        let taken = entries.filter { $0.apps.contains(app) }
        entries.removeAll { $0.apps.contains(app) }
        return taken
    }

    /// Every entry, taken out (their frame clock went away with the server).
    mutating func takeAll() -> [Entry] {
        defer { entries = [] }
        return entries
    }
}
