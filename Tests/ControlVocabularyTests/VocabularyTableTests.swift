import ControlVocabulary
import OSCTransport
import Policy
import Testing

/// The table itself: every row decodes what it says it takes, each path has one row, a path
/// that is not in it is refused, and every path under `/app/` is an app's.
@Suite("Vocabulary: the table of paths")
struct VocabularyTableTests {
    /// A row's path with a name for its `<app>`, `<route>` or `<scene>`.
    static func concrete(_ row: PathRow) -> String {
        row.path(for: row.segments.contains(.route) ? "speaker" : row.segments.contains(.scene) ? "preshow" : "music")
    }

    @Test("each row's example decodes to a change or a trigger, by that row, and names its app for an app's row")
    func examplesDecode() throws {
        var decoded = 0
        for row in Vocabulary.rows where row.overOSC {
            guard let example = row.example else { continue }
            let message = OSCMessage(Self.concrete(row), example)
            let result = try Vocabulary.decode(message)
            if case .query = result.command { Issue.record("\(row.path): its example is a query, not a change") }
            // The row's owner and the command's own agree (decode takes either).
            #expect(result.app == result.command.appItChanges, "\(row.path): the row says \(String(describing: result.app)), the command \(String(describing: result.command.appItChanges))")
            switch row.scope {
            case .shared: #expect(result.command.appItChanges == nil && !result.adminOnly, "\(row.path) is shared but its command changes an app")
            case .admin: #expect(result.adminOnly && result.app == nil, "\(row.path)")
            case .appInPath: #expect(result.app == "music", "\(row.path)")
            case .appInFirstArgument: #expect(result.app == example.first.flatMap { if case let .string(s) = $0 { s } else { nil } }, "\(row.path)")
            }
            decoded += 1
        }
        #expect(decoded >= 40, "\(decoded) rows with an example")
    }

    @Test("every path an app's owner alone may change has an example, so that the ownership test sends it")
    func appRowsHaveExamples() {
        for row in Vocabulary.rows where row.overOSC && row.scope != .shared {
            #expect(row.example != nil, "\(row.path)")
        }
    }

    @Test("each path fits its own row and no other")
    func onePathOneRow() throws {
        for row in Vocabulary.rows {
            let found = try #require(Vocabulary.row(for: Self.concrete(row)), "\(row.path)")
            #expect(found.0.path == row.path, "\(Self.concrete(row)) fits \(found.0.path), not \(row.path)")
        }
        #expect(Set(Vocabulary.rows.map(\.path)).count == Vocabulary.rows.count, "no path twice")
    }

    @Test("a path not in the table is refused (-7): one level deeper or shallower than each row, or a word off")
    func notInTheTable() {
        var paths: [String] = []
        for row in Vocabulary.rows {
            let path = Self.concrete(row)
            paths.append(path + "/x")
            paths.append(path + "x")
            let shorter = String(path[..<path.lastIndex(of: "/")!])
            if Vocabulary.row(for: shorter) == nil { paths.append(shorter) }
        }
        for path in paths where Vocabulary.row(for: path) == nil {
            #expect(throws: PolicyError(.unknownPath, "no such path: '\(path)' (docs/OSC.md lists them)")) {
                try Vocabulary.decode(OSCMessage(path, [.float(1)]))
            }
        }
        #expect(paths.filter { Vocabulary.row(for: $0) == nil }.count >= 80)
    }

    @Test("read-only rows of the namespace have no OSC path: an OSC message to one is refused (-7); what OSC only reads is not in the namespace")
    func readOnlyRows() {
        let osc = Vocabulary.rows.filter { $0.access == .readOnly && !$0.inNamespace }
        #expect(osc.map(\.path).sorted() == ["/cue/state", "/scene/<scene>", "/scene/current", "/scene/list"])
        #expect(osc.allSatisfy { $0.overOSC && $0.example == nil && $0.answer != nil })
        let readOnly = Vocabulary.rows.filter { $0.access == .readOnly && $0.inNamespace }
        #expect(readOnly.map(\.path).sorted() == ["/app/<app>/meter", "/app/<app>/state", "/app/<app>/why", "/remote/nowPlaying",
                                                  "/route/<route>/meter", "/route/<route>/volume", "/system/interruption/sources"])
        for row in readOnly {
            #expect(!row.overOSC && row.example == nil, "\(row.path)")
            #expect(throws: PolicyError(.unknownPath, "no such path: '\(Self.concrete(row))' (docs/OSC.md lists them)")) {
                try Vocabulary.decode(OSCMessage(Self.concrete(row)))
            }
        }
    }

    @Test("ownership fails closed: every path under /app/ is an app's, whatever command it becomes")
    func appPathsAreOwned() {
        for row in Vocabulary.rows where row.path.hasPrefix("/app/") {
            #expect(row.scope != .shared, "\(row.path) is under /app/ but shared")
        }
        for row in Vocabulary.rows where !row.path.hasPrefix("/app/") {
            #expect(row.scope == .shared || row.scope == .admin, "\(row.path)")
        }
    }

    @Test("only what says what a recall does to every app is an admin's: storing and deleting scenes")
    func adminRows() {
        #expect(Vocabulary.rows.filter { $0.scope == .admin }.map(\.path) == ["/scene/store", "/scene/delete"])
    }

    @Test("OSCQuery's attributes: a value for every readable row, ranges from the policy's limits, rows it cannot type left out")
    func oscQueryAttributes() {
        for row in Vocabulary.rows where row.inNamespace {
            if row.access == .readWrite || row.access == .readOnly { #expect(!row.parameters.isEmpty, "\(row.path) has a value") }
        }
        let volume = Vocabulary.rows.first { $0.path == "/app/<app>/volume" }
        #expect(volume?.parameters.first?.values == .numbers(Limits.volume))
        #expect(Vocabulary.rows.filter { !$0.inNamespace }.map(\.path).contains("/duck/target"))
    }
}
