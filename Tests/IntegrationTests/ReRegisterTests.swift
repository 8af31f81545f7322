import Foundation
import OSCTransport
import Testing

/// Issue 15, defect 10: `/app/register` of an app that exists already (a session app, say) says
/// only its category, options and mode, so it keeps its remote commands and its resume setting.
/// OSCRig's session declares music with `remote: [play, pause, nextTrack]` and game with
/// `resume: auto`.
@Suite("Registering an app again over OSC", .serialized)
struct ReRegisterTests {
    private static func app(_ name: String, in settings: [String: Any]) throws -> [String: Any] {
        let apps = try #require(settings["apps"] as? [[String: Any]])
        return try #require(apps.first { $0["name"] as? String == name }, "no app \(name) in /state")
    }

    @Test("a session app registered again with only its category keeps its remote commands and resume")
    func keepsRemoteAndResume() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let client = try OSCClient(OSCURL(transport: .tcp, host: "127.0.0.1", port: rig.port))
        let before = try rig.settings()
        #expect(try Self.app("music", in: before)["remote"] as? [String] == ["nextTrack", "pause", "play"])
        #expect(try Self.app("game", in: before)["resume"] as? String == "auto")

        #expect(try ask(client, OSCMessage("/app/register", [.string("music"), .string("playback")]))?.arguments
                == [.string("/app/register"), .string("music")])
        #expect(try ask(client, OSCMessage("/app/register", [.string("game"), .string("ambient"), .string(""), .string("default")]))?
                .arguments == [.string("/app/register"), .string("game")])

        #expect(try ask(client, OSCMessage("/app/music/remote"))?.arguments == [.string("/app/music/remote"), .string("nextTrack,pause,play")])
        let after = try rig.settings()
        #expect(try Self.app("music", in: after)["remote"] as? [String] == ["nextTrack", "pause", "play"])
        #expect(try Self.app("game", in: after)["resume"] as? String == "auto")
        #expect(try Self.app("music", in: after)["owner"] as? String != nil, "the registering connection owns it now")
        // Music still owns remote control and handles what it declared.
        #expect(try ask(client, OSCMessage("/remote/nextTrack"))?.arguments == [.string("/remote/nextTrack"), .string("music")])
    }

    @Test("a re-registration that changes the category keeps them too; the new category applies")
    func changedCategoryKeepsThem() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let client = try OSCClient(OSCURL(transport: .tcp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(client, OSCMessage("/app/register", [.string("music"), .string("playback"), .string("mixWithOthers")]))?.path
                == "/reply")
        #expect(try ask(client, OSCMessage("/app/register", [.string("game"), .string("soloAmbient")]))?.path == "/reply")
        let settings = try rig.settings()
        let music = try Self.app("music", in: settings)
        #expect(music["options"] as? [String] == ["mixWithOthers"])
        #expect(music["remote"] as? [String] == ["nextTrack", "pause", "play"])
        let game = try Self.app("game", in: settings)
        #expect(game["category"] as? String == "soloAmbient")
        #expect(game["resume"] as? String == "auto")
    }

    @Test("in one bundle: remote commands set before a re-registration stay, also for an app the bundle itself registered")
    func inOneBundle() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let client = try OSCClient(OSCURL(transport: .tcp, host: "127.0.0.1", port: rig.port))
        try client.send(packet: OSCCodec.encodeBundle([
            OSCMessage("/app/music/remote", [.string("play,seek")]),
            OSCMessage("/app/register", [.string("music"), .string("playback")]),
            OSCMessage("/app/register", [.string("synth"), .string("playback")]),
            OSCMessage("/app/synth/remote", [.string("pause")]),
            OSCMessage("/app/register", [.string("synth"), .string("playback"), .string(""), .string("moviePlayback")]),
        ]))
        var answers: [OSCMessage] = []
        while answers.count < 5, let answer = try client.receive(timeout: 2, until: { $0.path == "/reply" || $0.path == "/error" }) {
            answers.append(answer)
        }
        #expect(answers.map(\.path) == ["/reply", "/reply", "/reply", "/reply", "/reply"], "\(answers)")
        let settings = try rig.settings()
        #expect(try Self.app("music", in: settings)["remote"] as? [String] == ["play", "seek"])
        let synth = try Self.app("synth", in: settings)
        #expect(synth["remote"] as? [String] == ["pause"])
        #expect(synth["mode"] as? String == "moviePlayback")
        #expect(synth["resume"] as? String == "app", "a new app starts from the defaults")
    }

    @Test("/app/<app>/remote still sets the remote commands of a re-registered app")
    func remoteStillSets() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(client, OSCMessage("/app/register", [.string("music"), .string("playback")]))?.path == "/reply")
        #expect(try ask(client, OSCMessage("/app/music/remote", [.string("")]))?.arguments == [.string("/app/music/remote"), .string("")])
        #expect(try ask(client, OSCMessage("/app/register", [.string("music"), .string("playback")]))?.path == "/reply")
        #expect(try ask(client, OSCMessage("/app/music/remote"))?.arguments == [.string("/app/music/remote"), .string("")],
                "what it set over OSC is what it keeps")
    }
}
