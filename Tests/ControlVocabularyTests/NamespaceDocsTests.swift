import ControlVocabulary
import Foundation
import Testing

/// docs/HTTP.md's namespace table and the vocabulary say the same: every path the namespace
/// lists, once, with its TYPE and ACCESS. Remove or add a row on either side and this fails.
@Suite("Vocabulary: docs/HTTP.md's namespace table agrees with the table")
struct NamespaceDocsTests {
    /// A path of the docs' table, with the TYPE and ACCESS cells of its line.
    typealias DocPath = (path: String, type: String, access: String)

    static let http = VocabularyDocsTests.docs("HTTP.md")

    /// The paths of the table under "## The namespace": a line may name several, each in
    /// backticks; one of a single segment (`/deactivate`) is beside the line's first path.
    static func docPaths() -> [DocPath] {
        guard let start = http.range(of: "\n## The namespace\n") else { return [] }
        var paths: [DocPath] = []
        var inTable = false
        for line in http[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("| path | TYPE | ACCESS |") { inTable = true; continue }
            guard inTable else { continue }
            guard line.hasPrefix("|") else { break }
            if line.hasPrefix("|---") { continue }
            let cells = VocabularyDocsTests.cells(of: String(line))
            guard cells.count >= 3 else { continue }
            let named = cells[0].split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
            guard let first = named.first else { continue }
            let parent = first[..<(first.lastIndex(of: "/") ?? first.endIndex)]
            for path in named {
                let full = path.dropFirst().contains("/") ? path : parent + path
                paths.append((path: full, type: cells[1], access: cells[2]))
            }
        }
        return paths
    }

    /// The rows the namespace lists, as the docs' table names them: one line stands for every
    /// remote command.
    static func namespaceRows() -> [PathRow] {
        Vocabulary.rows.filter(\.inNamespace)
    }

    static func covers(_ doc: DocPath, _ row: PathRow) -> Bool {
        doc.path == row.path || (doc.path == "/remote/<command>" && row.path.hasPrefix("/remote/") && row.overOSC)
    }

    @Test("every path the namespace lists is in docs/HTTP.md's table once, and every path there is one it lists")
    func samePaths() {
        let docs = Self.docPaths()
        #expect(docs.count >= 25, "\(docs.count) paths read from the table")
        for row in Self.namespaceRows() {
            let found = docs.filter { Self.covers($0, row) }
            #expect(found.count == 1, "\(row.path): \(found.count) lines of docs/HTTP.md's namespace table")
        }
        for doc in docs {
            #expect(Self.namespaceRows().contains { Self.covers(doc, $0) }, "docs/HTTP.md lists \(doc.path), which the namespace does not")
        }
    }

    @Test("each path's TYPE and ACCESS are the table's")
    func typesAndAccess() {
        for doc in Self.docPaths() {
            for row in Self.namespaceRows() where Self.covers(doc, row) {
                // `—` for none; `f` per channel for a meter; "— or `f`", "0 or 2" for a line of several.
                let types = doc.type.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
                    + (doc.type.contains("—") ? [""] : [])
                #expect(types.contains(row.typeTags), "\(row.path): TYPE \(row.typeTags), the docs \(doc.type)")
                let accesses = doc.access.split(separator: " ").compactMap { Int($0) }
                #expect(accesses.contains(row.access.rawValue), "\(row.path): ACCESS \(row.access.rawValue), the docs \(doc.access)")
            }
        }
    }
}
