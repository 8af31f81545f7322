import Foundation
import Testing
@testable import SessionStore

/// The control page's key file (docs/HTTP.md, "Who may do what"): where it is, what a key is,
/// how it is kept and compared.
@Suite("the page's key file")
struct PageKeyFileTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-pagekey-\(getpid())-\(UUID().uuidString)")

    func mode(_ path: String) -> mode_t {
        var status = stat()
        return stat(path, &status) == 0 ? status.st_mode & 0o777 : 0
    }

    @Test("beside the state file: x.state.json gives x.page-key; another name gets .page-key added")
    func path() {
        #expect(PageKeyFile.path(besideState: "Sessions/car.state.json") == "Sessions/car.page-key")
        #expect(PageKeyFile.path(besideState: "/var/lib/run/state") == "/var/lib/run/state.page-key")
    }

    @Test("a new key is 256 random bits as 43 base64url characters, different each time")
    func newKeys() {
        let keys = (0..<1000).map { _ in PageKeyFile.newKey() }
        #expect(Set(keys).count == 1000)
        #expect(keys.allSatisfy { $0.utf8.count == 43 && PageKeyFile.isWellFormed($0) })
        // Every base64url character turns up (the bits are spread, not stuck).
        #expect(Set(keys.joined()).count == 64)
    }

    @Test("well-formed: 22 to 128 base64url characters, nothing else")
    func wellFormed() {
        #expect(PageKeyFile.isWellFormed(String(repeating: "a", count: 22)))
        #expect(!PageKeyFile.isWellFormed(String(repeating: "a", count: 21)))
        #expect(!PageKeyFile.isWellFormed(String(repeating: "a", count: 129)))
        #expect(!PageKeyFile.isWellFormed(String(repeating: "a", count: 30) + "+"))
        #expect(!PageKeyFile.isWellFormed(String(repeating: "a", count: 30) + " "))
        #expect(!PageKeyFile.isWellFormed(""))
    }

    @Test("matches only the same key: not a prefix, a longer one, one character changed, or empty")
    func matching() {
        let key = PageKeyFile.newKey()
        #expect(PageKeyFile.matches(key, key))
        #expect(!PageKeyFile.matches(String(key.dropLast()), key))
        #expect(!PageKeyFile.matches(key + "A", key))
        #expect(!PageKeyFile.matches("", key))
        var changed = Array(key.utf8)
        changed[42] ^= 1
        #expect(!PageKeyFile.matches(String(decoding: changed, as: UTF8.self), key))
    }

    @Test("made once and kept: mode 0600 from the start, the same key when loaded again; a file with no key in it is replaced; a loose mode is tightened")
    func loadOrMake() throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = PageKeyFile(path: folder.appendingPathComponent("s.page-key").path)
        #expect(try file.load() == nil)
        let (key, made) = try file.loadOrMake()
        #expect(made && mode(file.path) == 0o600)
        #expect(try String(contentsOfFile: file.path, encoding: .utf8) == key + "\n")
        let again = try file.loadOrMake()
        #expect(again.key == key && !again.made)

        chmod(file.path, 0o644)
        _ = try file.loadOrMake()
        #expect(mode(file.path) == 0o600, "tightened")

        try Data("not a key\n".utf8).write(to: URL(fileURLWithPath: file.path))
        chmod(file.path, 0o644)
        let replaced = try file.loadOrMake()
        #expect(replaced.made && replaced.key != key && mode(file.path) == 0o600, "written 0600 even over a 0644 file")
        #expect(try file.load() == replaced.key)
    }

    @Test("loadKeyFile checks the file it opened: a link to a good key file, a FIFO (without blocking), a loose mode, a relative path are refused; the router's own file is read")
    func loadKeyFileChecksWhatItOpens() throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let good = PageKeyFile(path: folder.appendingPathComponent("good.page-key").path)
        let (key, _) = try good.loadOrMake()
        #expect(try good.loadKeyFile() == key)

        func refusal(_ file: PageKeyFile) -> String {
            do {
                _ = try file.loadKeyFile()
                return "read"
            } catch {
                #expect(!error.description.contains(key), "\(error)")
                return error.description
            }
        }
        let link = PageKeyFile(path: folder.appendingPathComponent("link.page-key").path)
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: good.path)
        #expect(refusal(link).contains("not a regular file"))
        let fifo = PageKeyFile(path: folder.appendingPathComponent("fifo.page-key").path)
        #expect(mkfifo(fifo.path, 0o600) == 0)
        #expect(refusal(fifo).contains("not a regular file"), "refused at once, no writer awaited")
        let loose = PageKeyFile(path: folder.appendingPathComponent("loose.page-key").path)
        try good.save(key)
        try FileManager.default.copyItem(atPath: good.path, toPath: loose.path)
        chmod(loose.path, 0o640)
        #expect(refusal(loose).contains("mode 640, not 0600"))
        #expect(refusal(PageKeyFile(path: "good.page-key")).contains("not an absolute path"))
        #expect(refusal(PageKeyFile(path: folder.appendingPathComponent("missing.page-key").path)).contains("No such file"))
    }

    @Test("a key that cannot be written says where and why, and never what")
    func unwritable() throws {
        let file = PageKeyFile(path: "/proc/duckrouter-no-such-folder/s.page-key")
        let key = PageKeyFile.newKey()
        #expect(throws: PageKeyFile.Failure.self) { try file.save(key) }
        do {
            try file.save(key)
        } catch {
            #expect(error.description.contains("/proc/duckrouter-no-such-folder") && !error.description.contains(key), "\(error)")
        }
    }
}
