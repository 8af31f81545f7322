import Foundation
import Policy
import Testing
@testable import SessionStore

@Suite("State files")
struct SavedStateTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-state-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")

    func session() throws -> Session {
        try SessionLoader.parse(Data(#"""
            {"routes": [{"name": "speaker", "ports": ["system:playback_1", "system:playback_2"]},
                        {"name": "pa", "ports": ["pa:in_1", "pa:in_2"]}],
             "apps": [{"name": "music", "category": "playback", "connect": ["mpv:out_.*"]},
                      {"name": "dj", "category": "multiRoute", "options": ["mixWithOthers"]}]}
            """#.utf8), file: "test.json")
    }

    func saved() -> SavedState {
        SavedState(silent: true, selectedRoute: "pa", ducking: .init(level: -20, attack: 50, release: 800),
                   routeVolumes: ["speaker": 0.3, "hdmi": 0.9], appVolumes: ["music": 0.7, "synth": 0.4, "gone": 0.1],
                   apps: [
                       .init(name: "music", category: "playback", options: ["duckOthers"], mode: "default", remote: ["play"],
                             resume: "app", channels: 2, channelmap: nil),
                       .init(name: "synth", category: "ambient", options: [], mode: "default", remote: [], resume: "auto",
                             channels: 1, channelmap: nil),
                       .init(name: "dj", category: "multiRoute", options: ["mixWithOthers"], mode: "default", remote: [],
                             resume: "app", channels: 2, channelmap: [.init(channel: 1, target: "pa:2"), .init(channel: 2, target: "hdmi:1"),
                                                                 .init(channel: 1, target: "pa:2")]),
                   ])
    }

    @Test("a saved state lays over the session: settings, changed apps, new apps; what the session no longer has is left out and said")
    func applying() throws {
        let (merged, notes) = try session().applying(saved())
        #expect(merged.silentSwitch && merged.selectedRoute == "pa")
        #expect(merged.ducking.level == -20 && merged.ducking.attack == 50 && merged.ducking.release == 800)
        #expect(merged.volumes.routes == ["speaker": 0.3])
        #expect(merged.volumes.apps == ["music": 0.7, "synth": 0.4])
        let music = try #require(merged.apps.first { $0.name == "music" })
        #expect(music.options == [.duckOthers] && music.remote == [.play] && music.connect.count == 1, "its patchbay rule stays")
        let synth = try #require(merged.apps.first { $0.name == "synth" })
        #expect(synth.registeredAtRunTime && synth.channelCount == 1 && synth.resume == .auto)
        #expect(merged.apps.first { $0.name == "dj" }?.channelMap == [ChannelLink(appChannel: 1, route: "pa", routeChannel: 2)])
        #expect(notes == [
            "volume of route 'hdmi', which is no longer in the session",
            "app 'dj': channel map line 2 → hdmi:1 no longer fits the session",
            "app 'dj': channel map line 1 → pa:2 a second time",
            "volume of app 'gone', which no longer exists",
        ], "\(notes)")
    }

    @Test("a saved app the policy would refuse (a hand-edited file) is left out and said, so the router still starts from the session")
    func refusedConfiguration() throws {
        var state = saved()
        state.apps = [
            .init(name: "music", category: "ambient", options: ["duckOthers"], mode: "default", remote: [], resume: "app",
                  channels: 2, channelmap: nil),
            .init(name: "my synth", category: "ambient", options: [], mode: "default", remote: [], resume: "app", channels: 1, channelmap: nil),
        ]
        let (merged, notes) = try session().applying(state)
        let music = try #require(merged.apps.first { $0.name == "music" })
        #expect(music.category == .playback && music.options.isEmpty, "the session's own configuration stays")
        #expect(merged.apps.map(\.name) == ["music", "dj"])
        #expect(merged.apps.allSatisfy { (try? $0.configuration.validate()) != nil })
        #expect(notes.contains("app 'music': category ambient takes no options (got duckOthers); options are for playback, playAndRecord and multiRoute"), "\(notes)")
        #expect(notes.contains("app 'my synth': expected a name of 1 to 48 letters, digits, '-', '_' or '.', got 'my synth'"), "\(notes)")
    }

    @Test("saved atomically and read back; no temporary file is left")
    func roundTrip() throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = StateFile(path: folder.appendingPathComponent("rig.state.json").path)
        #expect(try file.load() == nil, "no state yet")
        try file.save(saved())
        #expect(try file.load() == saved())
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["rig.state.json"])
        #expect(StateFile.path(besideSession: "Sessions/car.json") == "Sessions/car.state.json")
    }

    @Test("an unreadable state file is refused with its path, and moved aside (kept) rather than overwritten", arguments: [
        "{\"version\": 1, \"silent\": tru", "{\"version\": 2, \"silent\": true, \"ducking\": {\"level\": 0, \"attack\": 0, \"release\": 0}}", "[]",
    ])
    func unreadable(text: String) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("rig.state.json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let file = StateFile(path: path)
        #expect {
            _ = try file.load()
        } throws: { error in
            "\(error)".hasPrefix(path + ": ")
        }
        #expect(file.moveAside() == path + ".broken")
        #expect(try String(contentsOfFile: path + ".broken", encoding: .utf8) == text)
        #expect(try file.load() == nil)
    }
}

/// Sessions/schema.json, the JSON Schema for editors and other tools, against the loader.
@Suite("Session schema")
struct SessionSchemaTests {
    static let sessions = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sessions").standardizedFileURL

    func schema() throws -> [String: Any] {
        let data = try Data(contentsOf: Self.sessions.appendingPathComponent("schema.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("the schema allows exactly the fields the loader allows, for every kind of object")
    func sameFields() throws {
        let schema = try schema()
        let defs = try #require(schema["$defs"] as? [String: Any])
        let top = try #require(schema["properties"] as? [String: [String: Any]])
        func keys(_ object: Any?) -> Set<String> { Set(((object as? [String: Any])?["properties"] as? [String: Any] ?? [:]).keys) }
        let ducking = top["ducking"]
        let rule = ((ducking?["properties"] as? [String: Any])?["rules"] as? [String: Any])?["items"]
        var found: [String: Set<String>] = [
            "session": Set(top.keys), "osc": keys(top["osc"]), "http": keys(top["http"]), "route": keys(defs["route"]), "input": keys(top["input"]),
            "ducking": keys(ducking), "duckingRule": keys(rule), "app": keys(defs["app"]), "volumes": keys(top["volumes"]),
            "signal": keys(((defs["app"] as? [String: Any])?["properties"] as? [String: Any])?["signal"]),
            "netjack2": keys(top["netjack2"]), "loudness": keys(top["loudness"]),
        ]
        // The show: scenes as a list or an object with the list; a scene's app, route and ducking;
        // a cue as an object (or a scene's name).
        let scene = (defs["scene"] as? [String: Any])?["properties"] as? [String: Any]
        found["scenes"] = keys((top["scenes"]?["oneOf"] as? [Any])?.dropFirst().first)
        found["scene"] = keys(defs["scene"])
        found["sceneApp"] = keys((scene?["apps"] as? [String: Any])?["additionalProperties"])
        found["sceneRoute"] = keys((scene?["routes"] as? [String: Any])?["additionalProperties"])
        found["sceneDucking"] = keys(scene?["ducking"])
        found["cue"] = keys(((top["cues"]?["items"] as? [String: Any])?["oneOf"] as? [Any])?.first)
        // A remote route's fields, one shape per engine.
        let engines = (((defs["route"] as? [String: Any])?["properties"] as? [String: Any])?["remote"] as? [String: Any])?["oneOf"] as? [Any]
        found["remote"] = keys(engines?.first)
        found["remote zita-njbridge"] = keys(engines?.dropFirst().first)
        #expect(found == SessionLoader.fields)
    }

    @Test("every session file in Sessions/ is valid under the schema (python3 jsonschema), and the loader takes it")
    func sessionsValid() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.sessions.path)
            .filter { $0.hasSuffix(".json") && $0 != "schema.json" && !$0.hasSuffix(".state.json") }.sorted()
        #expect(!files.isEmpty)
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
            bad = [f"{f}: {e.message}" for f in sys.argv[2:] for e in validator.iter_errors(json.load(open(f)))]
            print("\\n".join(bad)); sys.exit(1 if bad else 0)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, Self.sessions.appendingPathComponent("schema.json").path]
            + files.map { Self.sessions.appendingPathComponent($0).path }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        while process.isRunning { Thread.sleep(forTimeInterval: 0.01) }
        #expect(process.terminationStatus == 0, "\(text)")
        for file in files {
            #expect(throws: Never.self, "\(file)") { _ = try SessionLoader.load(path: Self.sessions.appendingPathComponent(file).path) }
        }
    }
}
