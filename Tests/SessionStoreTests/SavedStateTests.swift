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
                             resume: "app", channels: 2, channelmap: [.init(channel: 1, target: "pa:2"), .init(channel: 2, target: "hdmi:1")]),
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
            "volume of app 'gone', which no longer exists",
        ], "\(notes)")
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
