import Foundation
import Glibc
@testable import SessionStore
import Testing

/// An NSM client's project file made ready: made from its template, given ports of its own.
@Suite("NSM project files")
struct NSMProjectTests {
    /// A session folder with a template in it; removed by the caller.
    static func folder(template: String) throws -> (folder: URL, search: SessionTemplate.Search) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-nsmproject-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("template.json.in")
        try Data(template.utf8).write(to: file)
        return (folder, SessionTemplate.Search(explicit: file.path, environment: [:], installed: "/nowhere"))
    }

    /// A port the kernel picks for UDP now (then released): a base far from anything of a user's.
    static func ephemeral() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try #require(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } } == 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return UInt16(bigEndian: address.sin_port)
    }

    static let rig = "{\n  \"routes\": [ { \"name\": \"speaker\", \"ports\": [\"system:playback_1\"] } ]\n}\n"

    @Test("two new clients of one session from one template: each file is the template with ports of its own, none shared, the rest of the text as written")
    func twoClients() throws {
        let base = try Self.ephemeral()
        let (folder, search) = try Self.folder(template: Self.rig)
        defer { try? FileManager.default.removeItem(at: folder) }
        var chosen: [UInt16] = []
        for id in ["duckrouter.nAAAA", "duckrouter.nBBBB"] {
            let path = folder.appendingPathComponent(id).path
            let project = try NSMProject.prepare(path: path, search: search, oscPort: nil, httpPort: nil, bind: nil, defaults: (base, base + 1))
            #expect(project.sessionPath == path + ".json" && project.statePath == path + ".state.json")
            let text = try Data(contentsOf: URL(fileURLWithPath: project.sessionPath))
            let named = try #require(SessionPorts.named(in: text))
            chosen += [try #require(named.osc), try #require(named.http)]
            #expect(String(decoding: text, as: UTF8.self).hasSuffix("\n  \"routes\": [ { \"name\": \"speaker\", \"ports\": [\"system:playback_1\"] } ]\n}\n"))
            #expect(project.notes.count == 2, "\(project.notes)")
        }
        #expect(Set(chosen).count == 4, "\(chosen)")
        // Opened again: nothing chosen, nothing written.
        let again = try NSMProject.prepare(path: folder.appendingPathComponent("duckrouter.nAAAA").path, search: search, oscPort: nil,
                                           httpPort: nil, bind: nil, defaults: (base, base + 1))
        #expect(again.notes.isEmpty)
    }

    @Test("a template that names its ports: the first client gets those ports, the next the ones after them")
    func templatePortsFirst() throws {
        let base = try Self.ephemeral()
        var http = try Self.ephemeral()
        while http == base { http = try Self.ephemeral() }
        let (folder, search) = try Self.folder(template: "{ \"osc\": { \"port\": \(base) }, \"http\": { \"port\": \(http) } }\n")
        defer { try? FileManager.default.removeItem(at: folder) }
        var named: [SessionPorts.Named] = []
        for id in ["duckrouter.nONE", "duckrouter.nTWO"] {
            let path = folder.appendingPathComponent(id).path
            _ = try NSMProject.prepare(path: path, search: search, oscPort: nil, httpPort: nil, bind: nil)
            named.append(try #require(SessionPorts.named(in: Data(contentsOf: URL(fileURLWithPath: path + ".json")))))
        }
        // Ports the kernel just found free: the template's come first, then others, none twice.
        #expect(named[0].osc == base && named[0].http == http, "\(named)")
        #expect(Set([named[0].osc, named[0].http, named[1].osc, named[1].http].compactMap { $0 }).count == 4, "\(named)")
    }

    @Test("a file that names its OSC port and no HTTP port (an older client's) gets an HTTP port other than its own OSC one, and keeps that")
    func ownPortsAvoided() throws {
        let base = try Self.ephemeral()
        let (folder, search) = try Self.folder(template: "{}")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("duckrouter.nOLD").path
        try Data("{ \"osc\": { \"port\": \(base) } }\n".utf8).write(to: URL(fileURLWithPath: path + ".json"))
        // The HTTP search starts at the file's own OSC port: it must pass over it.
        _ = try NSMProject.prepare(path: path, search: search, oscPort: nil, httpPort: nil, bind: nil, defaults: (base, base))
        let named = try #require(SessionPorts.named(in: Data(contentsOf: URL(fileURLWithPath: path + ".json"))))
        #expect(named.osc == base && named.http != nil && named.http != base, "\(named)")
    }

    @Test("a file whose port is not a port, or that is not JSON, is left as it is for the loader to report")
    func malformedLeftAlone() throws {
        let (folder, search) = try Self.folder(template: "{}")
        defer { try? FileManager.default.removeItem(at: folder) }
        for (name, text) in [("nSTR", "{ \"osc\": { \"port\": \"9951\" } }\n"), ("nBAD", "{ \"routes\": [ }\n")] {
            let path = folder.appendingPathComponent("duckrouter.\(name)").path
            try Data(text.utf8).write(to: URL(fileURLWithPath: path + ".json"))
            _ = try NSMProject.prepare(path: path, search: search, oscPort: nil, httpPort: nil, bind: nil)
            #expect(try String(contentsOfFile: path + ".json", encoding: .utf8) == text)
        }
    }

    @Test("a template that is nowhere or not a session: ERR_CREATE_FAILED naming it, no file made")
    func badTemplates() throws {
        let (folder, _) = try Self.folder(template: "{}")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("duckrouter.nNEW").path
        let nowhere = SessionTemplate.Search(explicit: nil, environment: [:], installed: "/nowhere")
        #expect { try NSMProject.prepare(path: path, search: nowhere, oscPort: nil, httpPort: nil, bind: nil) } throws: { error in
            (error as? NSMProject.Failure)?.code == .createFailed && "\(error)".contains("/nowhere/default.json")
        }
        let broken = folder.appendingPathComponent("broken.json.in")
        try Data("{ \"routes\": 5 }".utf8).write(to: broken)
        let search = SessionTemplate.Search(explicit: broken.path, environment: [:], installed: "/nowhere")
        #expect { try NSMProject.prepare(path: path, search: search, oscPort: nil, httpPort: nil, bind: nil) } throws: { error in
            (error as? NSMProject.Failure)?.code == .createFailed && "\(error)".contains(broken.path)
        }
        #expect(!FileManager.default.fileExists(atPath: path + ".json"))
    }

    @Test("a session folder another process keeps locked: the start waits its time, then says so")
    func lockedFolder() throws {
        let (folder, search) = try Self.folder(template: "{}")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Another open file description of the folder holds the lock (as another process would).
        let holder = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(holder >= 0 && flock(holder, LOCK_EX) == 0)
        defer { close(holder) }
        #expect { try NSMProject.prepare(path: folder.appendingPathComponent("duckrouter.nLCK").path, search: search,
                                         oscPort: 1, httpPort: 0, bind: nil, lockTimeout: 0.2) } throws: { error in
            (error as? NSMProject.Failure)?.code == .general && "\(error)".contains("stayed locked")
        }
    }
}
