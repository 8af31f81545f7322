import Foundation
@testable import HTTPControl
import OSCTransport
import Policy
import Testing

/// The OSCQuery namespace as built from one reading: its shape, where values come from, and
/// the JSON it encodes to.
@Suite("OSCQuery namespace")
struct NamespaceTests {
    /// Answers as the control plane would for two apps and two routes; records what was asked.
    final class Answers {
        var asked: [String] = []
        var replies: [String: [OSCArgument]] = [
            "/app/music/volume": [.float(0.8)],
            "/app/music/gain": [.float(-5.8)],
            "/app/music/category": [.string("playback"), .string(""), .string("default")],
            "/app/music/activation": [.string("osc"), .float(-40), .float(10), .float(500), .float(6)],
            "/app/music/remote": [.string("pause,play")],
            "/app/music/notify": [.string("")],
            "/system/volume": [.float(0.5), .string("speaker")],
            "/system/gain": [.float(-18.06), .string("speaker")],
            "/system/silent": [.int32(0)],
            "/route/select": [.string("speaker")],
            "/route/speaker/available": [.int32(1)],
            "/route/headphones/available": [.int32(0)],
            "/duck/level": [.float(-14)],
            "/duck/attack": [.float(100)],
            "/duck/release": [.float(500)],
            "/duck/floor": [.float(-40)],
        ]
        func answer(_ path: String) -> [OSCArgument]? {
            asked.append(path)
            return replies[path]
        }
    }

    func build(_ answers: Answers = Answers()) -> OSCQueryNode {
        Namespace(apps: [.init(name: "music", state: "ducked", why: "ducked by nav", peaks: [-6.02, -.infinity]), .init(name: "nav", state: "active")],
                  routes: [.init(name: "speaker", volume: 0.5), .init(name: "headphones", volume: 0.7)],
                  nowPlaying: "music", outsideInterruptions: ["phone", "alarm"],
                  answer: answers.answer).build()
    }

    @Test("the tree has a container per app and per route, and the system, remote, ducking, scene and cue paths of docs/OSC.md")
    func shape() throws {
        let root = build()
        #expect(root.fullPath == "/" && Set(root.contents?.keys ?? [:].keys) == ["app", "system", "route", "remote", "duck", "scene", "cue"])
        #expect(Set(try #require(root.node(at: "/scene")?.contents).keys) == ["recall", "store", "delete"])
        #expect(Set(try #require(root.node(at: "/cue")?.contents).keys) == ["go", "back", "goto"])
        #expect(Set(try #require(root.node(at: "/app")?.contents).keys) == ["register", "music", "nav"])
        #expect(Set(try #require(root.node(at: "/app/music")?.contents).keys)
                == ["volume", "gain", "mute", "category", "state", "why", "meter", "activate", "deactivate", "activation", "remote", "notify", "unregister"])
        #expect(Set(try #require(root.node(at: "/route")?.contents).keys) == ["select", "speaker", "headphones"])
        #expect(Set(try #require(root.node(at: "/route/headphones")?.contents).keys) == ["available", "volume", "meter"])
        #expect(Set(try #require(root.node(at: "/system")?.contents).keys) == ["volume", "gain", "silent", "interruption"])
        #expect(Set(try #require(root.node(at: "/system/interruption")?.contents).keys) == ["sources", "begin", "end"])
        #expect(Set(try #require(root.node(at: "/remote")?.contents).keys) == Set(RemoteCommand.allCases.map(\.rawValue) + ["nowPlaying"]))
        #expect(Set(try #require(root.node(at: "/duck")?.contents).keys) == ["level", "attack", "release", "floor"])
        // Every node's FULL_PATH is where it is found.
        func check(_ node: OSCQueryNode) {
            #expect(root.node(at: node.fullPath) == node, "\(node.fullPath)")
            for child in node.contents?.values ?? [:].values { check(child) }
        }
        check(root)
        #expect(root.node(at: "/app/music/volume/x") == nil && root.node(at: "/nope") == nil)
        #expect(root.node(at: "/app/music/") == root.node(at: "/app/music"))
    }

    @Test("values come from the OSC answers, cut to the node's type; read-only state and route volumes from the reading")
    func values() throws {
        let answers = Answers()
        let root = build(answers)
        #expect(root.node(at: "/app/music/volume")?.value == [.float(0.8)])
        #expect(root.node(at: "/app/music/category")?.value == [.string("playback"), .string(""), .string("default")])
        #expect(root.node(at: "/system/volume")?.value == [.float(0.5)], "the route argument of the reply is not part of the value")
        #expect(root.node(at: "/system/silent")?.value == [.int(0)])
        #expect(root.node(at: "/route/headphones/available")?.value == [.int(0)])
        #expect(root.node(at: "/app/music/state")?.value == [.string("ducked")] && root.node(at: "/app/music/state")?.access == .readOnly)
        #expect(root.node(at: "/app/music/why")?.value == [.string("ducked by nav")] && root.node(at: "/app/music/why")?.access == .readOnly)
        #expect(root.node(at: "/app/nav/why")?.value == [.string("")])
        #expect(root.node(at: "/remote/nowPlaying")?.value == [.string("music")])
        let meter = try #require(root.node(at: "/app/music/meter"))
        #expect(meter.type == "ff" && meter.access == .readOnly && meter.value == [.float(-6.02), .float(-144)], "silence as -144 dB, not -inf")
        #expect(root.node(at: "/system/interruption/sources")?.value == [.string("phone,alarm")])
        #expect(root.node(at: "/route/headphones/volume")?.value == [.float(0.7)])
        // nav has no answers here: its settable nodes carry no VALUE rather than a made-up one.
        #expect(root.node(at: "/app/nav/volume")?.value == nil && root.node(at: "/app/nav/volume")?.access == .readWrite)
        // Commands are never asked for a value (asking would run them over OSC).
        #expect(!answers.asked.contains { $0.hasSuffix("/activate") || $0.hasSuffix("/deactivate") || $0.hasSuffix("/unregister") || $0.hasPrefix("/remote/") || $0.hasPrefix("/system/interruption") })
        #expect(root.node(at: "/app/music/activate")?.access == OSCQueryNode.Access.none && root.node(at: "/app/music/activate")?.type == nil)
    }

    @Test("a reply whose types do not match the node's gives no VALUE")
    func mismatchedReply() {
        #expect(Namespace.values([.float(1)], matching: "f") == [.float(1)])
        #expect(Namespace.values([.int32(1)], matching: "f") == nil)
        #expect(Namespace.values([], matching: "s") == nil)
        #expect(Namespace.values([.string("a"), .float(2), .int32(3)], matching: "sf") == [.string("a"), .float(2)])
    }

    @Test("JSON attributes: containers have CONTENTS and ACCESS 0, floats keep their short decimal form, RANGE and UNIT as the proposal writes them")
    func json() throws {
        let root = build()
        let volume = try #require(root.node(at: "/app/music/volume")).jsonObject()
        #expect(volume["FULL_PATH"] as? String == "/app/music/volume" && volume["TYPE"] as? String == "f" && volume["ACCESS"] as? Int == 3)
        let text = String(decoding: try JSONSerialization.data(withJSONObject: volume, options: [.sortedKeys]), as: UTF8.self)
        #expect(text.contains("\"VALUE\":[0.8]"), "\(text)")
        #expect((volume["RANGE"] as? [[String: Any]])?.first as? NSDictionary == ["MIN": 0, "MAX": 1])
        let music = try #require(root.node(at: "/app/music")).jsonObject()
        #expect(music["ACCESS"] as? Int == 0 && music["TYPE"] == nil && music["VALUE"] == nil && (music["CONTENTS"] as? [String: Any])?.count == 13)
        let category = try #require(root.node(at: "/app/music/category")).jsonObject()
        let ranges = try #require(category["RANGE"] as? [Any])
        #expect(ranges.count == 3 && ((ranges[0] as? [String: Any])?["VALS"] as? [String]) == Category.allCases.map(\.rawValue))
        #expect(ranges[1] is NSNull, "a value with no range has a JSON null placeholder, not {}: \(ranges[1])")
        let activation = try #require(root.node(at: "/app/music/activation")).jsonObject()
        let units = try #require(activation["UNIT"] as? [Any])
        #expect(units.count == 5 && units[0] is NSNull && units[1] as? String == "gain.db", "a value with no unit is null, not \"\": \(units)")
        #expect(try #require(root.node(at: "/duck/attack")).jsonObject()["UNIT"] as? [String] == ["time.millisecond"])
        let activate = try #require(root.node(at: "/app/music/activate")).jsonObject()
        #expect(activate["ACCESS"] as? Int == 0 && activate["VALUE"] == nil)
        #expect(try #require(root.node(at: "/app")).jsonValue(of: .value) == nil)
        #expect(try #require(root.node(at: "/")).jsonObject()["ACCESS"] as? Int == 0, "the root too")
        // The whole tree encodes.
        #expect(try JSONSerialization.data(withJSONObject: root.jsonObject()).count > 1000)
    }

    @Test("?VALUE of a readable node with no value now is {}; of a command or a container, no content (204)")
    func valueQueries() throws {
        let root = build()
        let nav = try #require(root.node(at: "/app/nav/volume"))
        #expect(nav.access == .readWrite && nav.value == nil)
        #expect(try #require(nav.attributeAnswer(.value)) as NSDictionary == [:], "no value yet: an empty object (OSCQueryProposal)")
        #expect(try #require(root.node(at: "/app/music/volume")?.attributeAnswer(.value)) as NSDictionary == ["VALUE": [0.8]])
        #expect(root.node(at: "/app/music/activate")?.attributeAnswer(.value) == nil)
        #expect(root.node(at: "/app")?.attributeAnswer(.value) == nil)
        #expect(root.node(at: "/app/music/activate")?.attributeAnswer(.type) == nil)
        #expect(root.node(at: "/app/register")?.attributeAnswer(.value) == nil, "write-only: no content")
    }

    @Test("placeholders where a method has no value to show: a JSON null per type tag for a write-only method and a readable one with no value now; a meter with no channels yet is a plain node (no empty TYPE)")
    func placeholders() throws {
        let root = build()
        let register = try #require(root.node(at: "/app/register")).jsonObject()
        let registerTags = try #require(register["TYPE"] as? String)
        #expect(register["ACCESS"] as? Int == 2)
        #expect((register["VALUE"] as? [Any])?.count == registerTags.count && (register["VALUE"] as? [Any])?.allSatisfy { $0 is NSNull } == true)
        let nav = try #require(root.node(at: "/app/nav/volume")).jsonObject()
        #expect(nav["ACCESS"] as? Int == 3 && (nav["VALUE"] as? [Any]).map { $0.count == 1 && $0[0] is NSNull } == true)
        // nav has shown no peaks: its meter has no channels to show.
        let meter = try #require(root.node(at: "/app/nav/meter")).jsonObject()
        #expect(meter["TYPE"] == nil && meter["VALUE"] == nil && meter["RANGE"] == nil && meter["UNIT"] == nil && meter["ACCESS"] as? Int == 0)
        let musicMeter = try #require(root.node(at: "/app/music/meter")).jsonObject()
        #expect(musicMeter["TYPE"] as? String == "ff" && musicMeter["ACCESS"] as? Int == 1)
    }

    @Test("an app named register and a route named select keep their nodes beside /app/register and /route/select")
    func namesThatAreAlsoMethods() throws {
        let answers = Answers()
        answers.replies["/app/register/volume"] = [.float(0.25)]
        answers.replies["/route/select/available"] = [.int32(1)]
        let root = Namespace(apps: [.init(name: "register", state: "inactive"), .init(name: "music", state: "active")],
                             routes: [.init(name: "select", volume: 0.5), .init(name: "speaker", volume: 0.5)],
                             answer: answers.answer).build()
        let register = try #require(root.node(at: "/app/register"))
        #expect(register.type == "ss" && register.access == .writeOnly, "still the register method")
        #expect(root.node(at: "/app/register/volume")?.value == [.float(0.25)], "and the app's container")
        #expect(Set(try #require(root.node(at: "/app")?.contents).keys) == ["register", "music"])
        let select = try #require(root.node(at: "/route/select"))
        #expect(select.type == "s" && select.access == .readWrite && select.value == [.string("speaker")])
        #expect(root.node(at: "/route/select/available")?.value == [.int(1)] && root.node(at: "/route/select/volume") != nil)
        let json = register.jsonObject()
        #expect(json["TYPE"] as? String == "ss" && (json["CONTENTS"] as? [String: Any])?["volume"] != nil)
    }
}
