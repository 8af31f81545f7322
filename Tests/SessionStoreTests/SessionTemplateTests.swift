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

    @Test("an unreadable template: an error naming both files, nothing made")
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
    }

    @Test("AtomicFile with replacing: false never replaces a file already there (what a file made between the check and the write meets); replacing: true does")
    func atomicCreateNeverReplaces() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = try write("first\n", "race.json")
        #expect(try AtomicFile.write(Data("second\n".utf8), to: target, replacing: false) == .alreadyThere)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "first\n")
        #expect(try AtomicFile.write(Data("third\n".utf8), to: target, replacing: true) == .written)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "third\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["race.json"])
    }

    @Test("a link to nothing at the session's place: an error saying so, nothing made")
    func danglingLink() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let template = try write("{}\n", "template.json")
        let link = folder.appendingPathComponent("session.json").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: folder.appendingPathComponent("elsewhere.json").path)
        #expect {
            try SessionTemplate.createIfMissing(link, from: template)
        } throws: { error in
            "\(error)" == "cannot create \(link): it is a symbolic link to \(folder.path)/elsewhere.json, which does not exist"
        }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("elsewhere.json").path))
    }

    @Test("a replaced file keeps its mode, and a link stays a link to the file written")
    func replaceKeepsModeAndLink() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let real = try write("old\n", "real.json")
        chmod(real, 0o600)
        let link = folder.appendingPathComponent("state.json").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        #expect(try AtomicFile.write(Data("new\n".utf8), to: link, replacing: true) == .written)
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == real)
        #expect(try String(contentsOfFile: real, encoding: .utf8) == "new\n")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: real)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        // A new file: 0644 less the umask (022 here), not mkstemp's 0600.
        let fresh = folder.appendingPathComponent("fresh.json").path
        #expect(try AtomicFile.write(Data("x\n".utf8), to: fresh, replacing: false) == .written)
        let freshMode = try #require(try FileManager.default.attributesOfItem(atPath: fresh)[.posixPermissions] as? Int)
        #expect(freshMode == 0o644 & ~Int(umaskNow()))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["fresh.json", "real.json", "state.json"])
    }

    /// The umask, read the only way there is (set and put back); tests run one at a time here.
    func umaskNow() -> mode_t {
        let mask = umask(0o022)
        umask(mask)
        return mask
    }
}
