import Foundation
import Testing
@testable import SessionStore

/// `--create-from` and a new NSM client's session: made once from a template, never overwritten.
@Suite("session templates")
struct SessionTemplateTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-template-\(getpid())-\(UUID().uuidString)")

    func write(_ text: String, _ name: String) throws -> String {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    @Test("a missing file is made from the template, folders and all; no temporary file is left")
    func createsMissing() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let template = try write("{\"client\": \"a\"}\n", "template.json")
        let target = folder.appendingPathComponent("deep/er/session.json").path
        #expect(try SessionTemplate.createIfMissing(target, from: template))
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "{\"client\": \"a\"}\n")
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("deep/er").path)
        #expect(left == ["session.json"], "\(left)")
    }

    @Test("a file already there is left byte for byte as it is")
    func leavesExisting() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let template = try write("{\"client\": \"template\"}\n", "template.json")
        let target = try write("{\"client\": \"mine\"}\n", "session.json")
        #expect(try SessionTemplate.createIfMissing(target, from: template) == false)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "{\"client\": \"mine\"}\n")
    }

    @Test("an unreadable template: an error naming both files, nothing made; with a fallback, the fallback")
    func unreadableTemplate() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("session.json").path
        let missing = folder.appendingPathComponent("nope.json").path
        #expect {
            try SessionTemplate.createIfMissing(target, from: missing)
        } throws: { error in
            "\(error)".hasPrefix("cannot create \(target): the template \(missing) cannot be read")
        }
        #expect(!FileManager.default.fileExists(atPath: target))
        #expect(try SessionTemplate.createIfMissing(target, from: missing, fallback: Data("{}\n".utf8)))
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "{}\n")
    }

    @Test("a file that appears between the check and the write wins: AtomicFile with replacing: false never replaces")
    func atomicCreateNeverReplaces() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = try write("first\n", "race.json")
        #expect(try AtomicFile.write(Data("second\n".utf8), to: target, replacing: false) == .alreadyThere)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "first\n")
        #expect(try AtomicFile.write(Data("third\n".utf8), to: target, replacing: true) == .written)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "third\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["race.json"])
    }
}
