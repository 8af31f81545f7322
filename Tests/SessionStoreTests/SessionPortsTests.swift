import Foundation
@testable import SessionStore
import Testing

/// Ports written into a session file's text for an NSM instance, and the template search of a
/// new NSM client.
@Suite("Session ports and NSM templates")
struct SessionPortsTests {
    static func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    @Test("ports added to a file that names none: new sections at the top, every other byte as written, and the file still a valid session")
    func addedAtTheTop() throws {
        let original = "{\n  \"client\": \"rig\",\n  \"routes\": [ { \"name\": \"speaker\", \"ports\": [\"system:playback_1\"] } ]\n}\n"
        let written = try SessionPorts.setting(osc: 9953, http: 9954, in: Data(original.utf8))
        #expect(Self.text(written) == "{\n  \"osc\": { \"port\": 9953 },\n  \"http\": { \"port\": 9954 },\n  \"client\": \"rig\",\n  \"routes\": [ { \"name\": \"speaker\", \"ports\": [\"system:playback_1\"] } ]\n}\n")
        #expect(SessionPorts.named(in: written) == .init(osc: 9953, http: 9954))
        let session = try SessionLoader.parse(written, file: "x.json")
        #expect(session.osc.port == 9953 && session.http.port == 9954)
    }

    @Test("a port that is there is replaced, one missing from a section is added to it; bind and the rest stay; an empty document and empty sections take them too")
    func replacedOrAdded() throws {
        let original = "{ \"osc\": { \"bind\": \"0.0.0.0\", \"port\": 9000 }, \"http\": { \"bind\": 1 } }"
        let written = Self.text(try SessionPorts.setting(osc: 9001, http: 9002, in: Data(original.utf8)))
        #expect(written == "{ \"osc\": { \"bind\": \"0.0.0.0\", \"port\": 9001 }, \"http\": { \"port\": 9002, \"bind\": 1 } }")
        #expect(SessionPorts.named(in: Data(written.utf8)) == .init(osc: 9001, http: 9002, bind: "0.0.0.0"))
        let onlyOSC = Self.text(try SessionPorts.setting(osc: 7000, http: nil, in: Data("{ \"osc\": {}, \"http\": { \"port\": 0 } }".utf8)))
        #expect(onlyOSC == "{ \"osc\": { \"port\": 7000 }, \"http\": { \"port\": 0 } }")
        let empty = try SessionPorts.setting(osc: 1, http: 2, in: Data("{}".utf8))
        #expect(SessionPorts.named(in: empty) == .init(osc: 1, http: 2))
        #expect(Self.text(empty) == "{\n  \"osc\": { \"port\": 1 },\n  \"http\": { \"port\": 2 }\n}")
    }

    @Test("what cannot take a port is an error, and what is not a session names none")
    func refusals() {
        #expect(throws: SessionPorts.Failure.self) { try SessionPorts.setting(osc: 1, http: nil, in: Data("[1]".utf8)) }
        #expect(throws: SessionPorts.Failure.self) { try SessionPorts.setting(osc: 1, http: nil, in: Data("{ \"osc\": 5 }".utf8)) }
        #expect(throws: SessionPorts.Failure.self) { try SessionPorts.setting(osc: 1, http: nil, in: Data("{ \"osc\": ".utf8)) }
        #expect(SessionPorts.named(in: Data("not json".utf8)) == nil)
        #expect(SessionPorts.named(in: Data("{ \"osc\": { \"port\": \"9951\" }, \"http\": { \"port\": 70000 } }".utf8)) == .init(malformed: true))
        #expect(SessionPorts.named(in: Data("{ \"http\": 9952 }".utf8)) == .init(malformed: true))
        #expect(SessionPorts.named(in: Data("{ \"osc\": { \"bind\": \"0.0.0.0\" } }".utf8)) == .init(bind: "0.0.0.0"))
    }

    /// A folder with `files` (name: contents) in it.
    static func folder(_ files: [String: String]) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-templates-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        for (name, contents) in files {
            let file = folder.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: file)
        }
        return folder
    }

    @Test("a new NSM client's template: the command line's, else DUCKROUTER_TEMPLATE as a path or a name (the user's templates before the installed sessions), else the default; nowhere is an error naming each place looked in")
    func templateSearch() throws {
        let folder = try Self.folder(["config/duckrouter/templates/default.json": "{}", "config/duckrouter/templates/stage.json": "{}",
                                      "share/default.json": "{}", "share/radio.json": "{}", "other.json": "{}"])
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = folder.appendingPathComponent("config").path
        let installed = folder.appendingPathComponent("share").path
        func find(_ environment: [String: String], explicit: String? = nil) throws -> String {
            try SessionTemplate.Search(explicit: explicit, environment: environment, installed: installed).find().path
        }
        #expect(try find(["DUCKROUTER_TEMPLATE": "stage", "XDG_CONFIG_HOME": config], explicit: folder.appendingPathComponent("other.json").path)
                == folder.appendingPathComponent("other.json").path)
        #expect(try find(["DUCKROUTER_TEMPLATE": "stage", "XDG_CONFIG_HOME": config]) == "\(config)/duckrouter/templates/stage.json")
        #expect(try find(["DUCKROUTER_TEMPLATE": "radio", "XDG_CONFIG_HOME": config]) == "\(installed)/radio.json")
        #expect(try find(["XDG_CONFIG_HOME": config]) == "\(config)/duckrouter/templates/default.json", "the user's default first")
        #expect(try find(["HOME": folder.path]) == "\(installed)/default.json", "then the installed one")
        #expect(try find(["DUCKROUTER_TEMPLATE": folder.appendingPathComponent("other.json").path]) == folder.appendingPathComponent("other.json").path)

        #expect { try find([:], explicit: folder.appendingPathComponent("none.json").path) } throws: { "\($0)".contains("none.json") }
        #expect { try find(["DUCKROUTER_TEMPLATE": "/nowhere/x.json"]) } throws: { "\($0)".contains("/nowhere/x.json") }
        #expect {
            try SessionTemplate.Search(explicit: nil, environment: ["HOME": "/home/someone", "DUCKROUTER_TEMPLATE": "gone"], installed: installed).find()
        } throws: { error in
            let text = "\(error)"
            return text.contains("'gone'") && text.contains("/home/someone/.config/duckrouter/templates/gone.json") && text.contains("\(installed)/gone.json")
        }
        #expect {
            try SessionTemplate.Search(explicit: nil, environment: [:], installed: "/nowhere").find()
        } throws: { "\($0)".hasPrefix("no template for a new duckrouter client: looked for /nowhere/default.json") }
    }
}
