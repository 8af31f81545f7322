import Foundation
import Policy
import SessionStore
import Testing

/// Sessions/schema.json and the loader agree on every number's range and every word list: each
/// bound the schema gives is accepted by the loader, a little beyond it refused, and each enum is
/// the policy's own vocabulary. (SessionSchemaTests checks the field names.)
@Suite("Session schema: ranges and words")
struct SessionSchemaRangeTests {
    /// A leaf of the schema with a range or a list of words, and where it is in a session.
    struct Leaf: CustomStringConvertible {
        var path: [String]
        var node: [String: Any]
        var description: String { path.joined(separator: ".") }
    }

    static func schema() throws -> [String: Any] {
        let data = try Data(contentsOf: SessionSchemaTests.sessions.appendingPathComponent("schema.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Every leaf with a minimum, a maximum or an enum; array items as item 0, a map's values as
    /// the key `*`. Remote routes' engines (oneOf) are SessionLoader+Remote's and left out.
    static func leaves() throws -> [Leaf] {
        let schema = try schema()
        let defs = schema["$defs"] as? [String: [String: Any]] ?? [:]
        func resolve(_ node: [String: Any]) -> [String: Any] {
            guard let ref = node["$ref"] as? String, let target = defs[String(ref.split(separator: "/").last ?? "")] else { return node }
            return resolve(target.merging(node.filter { $0.key != "$ref" }) { $1 })
        }
        var leaves: [Leaf] = []
        func walk(_ raw: [String: Any], _ path: [String]) {
            let node = resolve(raw)
            if node["minimum"] != nil || node["maximum"] != nil || node["enum"] != nil { leaves.append(Leaf(path: path, node: node)) }
            for (key, child) in node["properties"] as? [String: [String: Any]] ?? [:] where !(key == "remote" && path.first == "routes") { walk(child, path + [key]) }
            if let items = node["items"] as? [String: Any] { walk(items, path + ["0"]) }
            // Of several shapes, the first (scenes as a list, a cue as an object).
            if let shapes = node["oneOf"] as? [[String: Any]], let first = shapes.first { walk(first, path) }
            if let values = node["additionalProperties"] as? [String: Any] { walk(values, path + ["*"]) }
        }
        walk(schema, [])
        return leaves
    }

    /// A session every leaf can be set in: a route of the JACK graph, a remote one (`channels` is
    /// a remote route's: set on route 1), two apps, a ducking rule with a level and a target.
    static func base() -> [String: Any] {
        ["routes": [["name": "speaker", "ports": ["system:playback_1", "system:playback_2"]],
                    ["name": "stage", "remote": ["engine": "netjack2", "peer": "p"]]],
         "apps": [["name": "a", "category": "playback"], ["name": "b", "category": "playback"]],
         "ducking": ["rules": [["ducker": "a", "ducked": "b", "level": -10, "target": 10]]],
         "scenes": [["name": "s"]], "cues": [["scene": "s"]]]
    }

    /// `object` with `value` at `path` (objects made on the way; a number is an array's item,
    /// `*` a map's key for an app or route the base declares).
    static func setting(_ value: Any, at path: ArraySlice<String>, in object: Any?, parent: String = "") -> Any {
        guard let key = path.first else { return value }
        if let index = Int(key) {
            var array = object as? [Any] ?? []
            let item: Any? = index < array.count ? array[index] : nil
            let updated = setting(value, at: path.dropFirst(), in: item, parent: key)
            if index < array.count { array[index] = updated } else { array.append(updated) }
            return array
        }
        var dictionary = object as? [String: Any] ?? [:]
        let name = key == "*" ? (parent == "routes" ? "speaker" : "a") : key
        dictionary[name] = setting(value, at: path.dropFirst(), in: dictionary[name], parent: key)
        return dictionary
    }

    static func loads(_ value: Any, at leaf: Leaf) -> String? {
        let path = leaf.path == ["routes", "0", "channels"] ? ["routes", "1", "channels"] : leaf.path
        let session = setting(value, at: path[...], in: base())
        guard let data = try? JSONSerialization.data(withJSONObject: session) else { return "not JSON" }
        do {
            _ = try SessionLoader.parse(data, file: "schema-test.json")
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("the base session loads")
    func baseLoads() throws {
        let data = try JSONSerialization.data(withJSONObject: Self.base())
        #expect(throws: Never.self) { _ = try SessionLoader.parse(data, file: "base.json") }
    }

    @Test("each number's bounds in the schema are the loader's: both accepted, a little beyond each refused")
    func numberRanges() throws {
        let leaves = try Self.leaves().filter { $0.node["enum"] == nil }
        #expect(leaves.count >= 25, "\(leaves.count) ranges in the schema")
        for leaf in leaves {
            let integer = leaf.node["type"] as? String == "integer"
            let step = integer ? 1.0 : 0.01
            if let minimum = leaf.node["minimum"] as? Double {
                #expect(Self.loads(minimum, at: leaf) == nil, "\(leaf) = \(minimum), the schema's minimum, is refused")
                #expect(Self.loads(minimum - step, at: leaf) != nil, "\(leaf) = \(minimum - step), under the schema's minimum, is accepted")
            }
            if let maximum = leaf.node["maximum"] as? Double {
                #expect(Self.loads(maximum, at: leaf) == nil, "\(leaf) = \(maximum), the schema's maximum, is refused")
                #expect(Self.loads(maximum + step, at: leaf) != nil, "\(leaf) = \(maximum + step), over the schema's maximum, is accepted")
            }
        }
    }

    @Test("each list of words in the schema is the policy's vocabulary, and a word not in it is refused")
    func wordLists() throws {
        let vocabularies: [String: [String]] = [
            "apps.0.category": Category.allCases.map(\.rawValue),
            "apps.0.options.0": CategoryOption.allCases.map(\.rawValue),
            "apps.0.mode": Mode.allCases.map(\.rawValue),
            "apps.0.remote.0": RemoteCommand.allCases.map(\.rawValue),
            "apps.0.resume": ResumePolicy.allCases.map(\.rawValue),
            "apps.0.activation": Activation.allCases.map(\.rawValue),
            "scenes.0.curve": FadeCurve.allCases.map(\.rawValue),
        ]
        let leaves = try Self.leaves().filter { $0.node["enum"] != nil }
        #expect(Set(leaves.map(\.description)) == Set(vocabularies.keys), "every list in the schema is checked")
        for leaf in leaves {
            #expect(leaf.node["enum"] as? [String] == vocabularies[leaf.description], "\(leaf)")
            #expect(Self.loads("bogus", at: leaf) != nil, "\(leaf) = bogus is accepted")
        }
    }

    @Test("the schema's ranges of the controls OSC sets too are the policy's Limits")
    func limits() throws {
        let ranges = Dictionary(try Self.leaves().compactMap { leaf -> (String, ClosedRange<Double>)? in
            guard let minimum = leaf.node["minimum"] as? Double, let maximum = leaf.node["maximum"] as? Double else { return nil }
            return (leaf.description, minimum...maximum)
        }) { first, _ in first }
        #expect(ranges["ducking.level"] == Limits.duckLevel)
        #expect(ranges["ducking.floor"] == Limits.duckLevel)
        #expect(ranges["ducking.target"] == Limits.duckTarget)
        #expect(ranges["ducking.attack"] == Limits.rampMilliseconds)
        #expect(ranges["apps.0.signal.threshold"] == Limits.signalThreshold)
        #expect(ranges["apps.0.signal.attack"] == Limits.signalAttack)
        #expect(ranges["apps.0.signal.hold"] == Limits.rampMilliseconds)
        #expect(ranges["apps.0.signal.hysteresis"] == Limits.signalHysteresis)
        #expect(ranges["apps.0.channels"] == Double(Limits.appChannels.lowerBound)...Double(Limits.appChannels.upperBound))
        #expect(ranges["volumes.apps.*"] == Limits.volume)
        #expect(ranges["scenes.0.fade"] == Limits.fadeMilliseconds)
        #expect(ranges["cues.0.wait"] == Limits.cueWaitMilliseconds)
        #expect(ranges["scenes.0.apps.*.volume"] == Limits.volume && ranges["scenes.0.apps.*.gain"] == Limits.appGain)
        #expect(ranges["scenes.0.routes.*.gain"] == Limits.systemGain && ranges["scenes.0.ducking.target"] == Limits.duckTarget)
        let defs = try #require(try Self.schema()["$defs"] as? [String: [String: Any]])
        #expect(defs["name"]?["pattern"] as? String == "^[A-Za-z0-9._-]{1,\(Limits.nameBytes)}$", "a name's length is the policy's")
    }
}
