import Foundation
import OSCControl
import SessionStore
import Synchronization
import Testing

/// The page's key as the router holds it: which key holds, how it changes, and how wrong keys
/// are told in the log.
@Suite("the page's key, held")
struct PageAccessTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-access-\(getpid())-\(UUID().uuidString)")

    @Test("rotate keeps the new key in the file before it holds, tells the observers the new link, and the old key holds no more")
    func rotate() throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = PageKeyFile(path: folder.appendingPathComponent("s.page-key").path)
        let (page, made, problem) = PageAccess.open(address: "http://127.0.0.1:9952/ui/", file: file)
        #expect(made && problem == nil)
        let old = try #require(try file.load())
        #expect(page.holds(old) && page.link == "http://127.0.0.1:9952/ui/#key=\(old)")
        let told = Mutex<[String]>([])
        page.onChange { link in told.withLock { $0.append(link) } }
        try page.rotate()
        let new = try #require(try file.load())
        #expect(new != old && page.holds(new) && !page.holds(old))
        #expect(told.withLock { $0 } == ["http://127.0.0.1:9952/ui/#key=\(new)"])
        #expect(page.generation(holding: old) == nil && page.generation(holding: new) == 1, "streams admitted before the change are told apart")
        #expect(PageAccess.open(address: "x", file: file).access.holds(new), "a restart finds the new key")
    }

    @Test("a key that cannot be kept is not changed: the old one still holds")
    func rotateUnkept() throws {
        let page = PageAccess(address: "http://127.0.0.1:9952/ui/", file: PageKeyFile(path: "/proc/duckrouter-none/s.page-key"), key: "k")
        #expect(throws: PageKeyFile.Failure.self) { try page.rotate() }
        #expect(page.holds("k"))
    }

    @Test("a folder that cannot be written gives a key for this run only, and says why")
    func openUnwritable() {
        let (page, made, problem) = PageAccess.open(address: "a", file: PageKeyFile(path: "/proc/duckrouter-none/s.page-key"))
        #expect(made && problem?.contains("/proc/duckrouter-none/s.page-key") == true)
        #expect(!page.holds("") && page.link.count > "a#key=".count + 40)
    }

    @Test("wrong keys are reported at most once a second, with how many came")
    func wrongKeys() {
        let page = PageAccess(address: "a", file: PageKeyFile(path: "/nonexistent"), key: "k")
        var reports: [Int] = []
        for k in 0..<300 {
            if let count = page.noteWrongKey(now: 100 + Double(k) / 100) { reports.append(count) }
        }
        #expect(reports == [1, 100, 100], "\(reports)")
    }
}
