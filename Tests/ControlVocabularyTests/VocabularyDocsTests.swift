import ControlVocabulary
import Foundation
import Policy
import Testing

/// docs/OSC.md and the vocabulary say the same: the same paths, each with the same arguments and
/// reply, and the same error codes. Remove a row from either side and this fails.
@Suite("Vocabulary: docs/OSC.md agrees with the table")
struct VocabularyDocsTests {
    /// A row of one of docs/OSC.md's path tables: path, arguments, reply values.
    struct DocRow: Equatable, CustomStringConvertible {
        var path: String, arguments: String, reply: String
        var description: String { "\(path) | \(arguments) | \(reply)" }
    }

    static let osc = docs("OSC.md")

    /// A page of docs/, as text ("" when it cannot be read: the tests then find nothing in it).
    static func docs(_ name: String) -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/\(name)")
        return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    }

    /// The rows of the tables under "## Paths" whose header is `| path | arguments | reply values | notes |`.
    static func docRows() -> [DocRow] {
        guard let start = osc.range(of: "\n## Paths\n") else { return [] }
        let section = osc[start.upperBound...].prefix { _ in true }
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        var rows: [DocRow] = []
        var inTable = false
        for line in section[..<end].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("| path | arguments | reply values |") { inTable = true; continue }
            guard inTable, line.hasPrefix("|") else { inTable = false; continue }
            if line.hasPrefix("|---") { continue }
            let cells = cells(of: String(line))
            guard cells.count >= 3 else { continue }
            rows.append(DocRow(path: cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`")), arguments: cells[1], reply: cells[2]))
        }
        return rows
    }

    /// A Markdown table row's cells, split at `|` outside backticks (`\|` is a literal bar).
    static func cells(of line: String) -> [String] {
        var cells: [String] = []
        var cell = ""
        var code = false
        var escaped = false
        for character in line.dropFirst() {
            if escaped { cell.append(character); escaped = false; continue }
            switch character {
            case "\\": escaped = true; cell.append(character)
            case "`": code.toggle(); cell.append(character)
            case "|" where !code:
                cells.append(cell.trimmingCharacters(in: .whitespaces))
                cell = ""
            default: cell.append(character)
            }
        }
        return cells
    }

    /// The table's rows as the docs write them: one row stands for every remote command.
    static func tableRows() -> [DocRow] {
        var rows: [DocRow] = []
        for row in Vocabulary.rows where row.overOSC {
            let path = row.path.hasPrefix("/remote/") ? "/remote/<command>" : row.path
            let docRow = DocRow(path: path, arguments: row.arguments, reply: row.reply)
            if !rows.contains(docRow) { rows.append(docRow) }
        }
        return rows
    }

    @Test("the docs' path tables exist and are read")
    func docsAreRead() {
        #expect(Self.docRows().count >= 30, "\(Self.docRows().count) rows read from docs/OSC.md")
    }

    @Test("every path of the table is in docs/OSC.md with its arguments and reply, and every path there is in the table")
    func sameRows() {
        let docs = Self.docRows(), table = Self.tableRows()
        for row in table where !docs.contains(row) {
            Issue.record("in the table, not in docs/OSC.md as such: \(row); the docs say \(docs.filter { $0.path == row.path })")
        }
        for row in docs where !table.contains(row) {
            Issue.record("in docs/OSC.md, not in the table: \(row)")
        }
        #expect(Set(docs.map(\.path)).count == docs.count, "no path twice in the docs")
    }

    @Test("every remote command is listed in the docs")
    func remoteCommands() throws {
        let start = try #require(Self.osc.range(of: "Remote commands: "))
        let list = Self.osc[start.upperBound...].prefix { $0 != ";" }
        for command in RemoteCommand.allCases {
            #expect(list.contains("`\(command.rawValue)`"), "\(command.rawValue)")
        }
    }

    @Test("the error codes the docs list are the policy's, with none missing")
    func errorCodes() {
        let listed = Self.osc.split(separator: "\n").compactMap { line -> Int32? in
            let cells = Self.cells(of: String(line))
            return cells.count == 2 ? Int32(cells[0]) : nil
        }
        #expect(listed == PolicyError.Code.allCases.map(\.rawValue))
    }
}
