import ControlVocabulary
import Foundation

/// One node of the OSCQuery namespace (Vidvox OSCQueryProposal): a container (CONTENTS) or a
/// method (TYPE, ACCESS, VALUE, RANGE, UNIT), or both, as JSON attributes, in a form the common
/// client libraries parse (python-oscquery, Chataigne's, libossia's: docs/HTTP.md, "Clients").
///
/// A plain value: built per request from one reading of the control plane, then encoded.
public struct OSCQueryNode: Sendable, Equatable {
    /// What a client may do with the node's value (the proposal's ACCESS bit mask): the
    /// vocabulary's own (`PathRow.Access`), `.none` for a container or a trigger.
    public typealias Access = PathRow.Access

    /// One value of VALUE, in the type its TYPE tag says.
    public enum Value: Sendable, Equatable {
        case float(Float)
        case int(Int32)
        case string(String)
    }

    /// One RANGE entry per type tag: bounds, or the list of values it may take.
    public struct Range: Sendable, Equatable {
        public var minimum: Double?
        public var maximum: Double?
        public var values: [String]?

        public init(minimum: Double? = nil, maximum: Double? = nil, values: [String]? = nil) {
            self.minimum = minimum
            self.maximum = maximum
            self.values = values
        }

        /// An entry with no bounds (a free string, a second value of a pair).
        public static let unbounded = Range()
    }

    /// The attributes a node may have, as the proposal names them: the words `?NAME` accepts.
    public enum Attribute: String, CaseIterable, Sendable {
        case fullPath = "FULL_PATH"
        case contents = "CONTENTS"
        case type = "TYPE"
        case access = "ACCESS"
        case value = "VALUE"
        case range = "RANGE"
        case description = "DESCRIPTION"
        case unit = "UNIT"
    }

    public var fullPath: String
    public var description: String
    /// OSC type tags of the arguments it takes and answers with (nil: none).
    public var type: String?
    public var access: Access
    public var value: [Value]?
    public var range: [Range]?
    /// One unit per type tag (nil entries: that value has none, encoded as JSON null).
    public var unit: [String?]?
    /// Children by name (nil: a method, no CONTENTS).
    public var contents: [String: OSCQueryNode]?

    public init(fullPath: String, description: String, type: String? = nil, access: Access = .none,
                value: [Value]? = nil, range: [Range]? = nil, unit: [String?]? = nil,
                contents: [String: OSCQueryNode]? = nil) {
        self.fullPath = fullPath
        self.description = description
        self.type = type
        self.access = access
        self.value = value
        self.range = range
        self.unit = unit
        self.contents = contents
    }

    /// A container of `children`. Two children of one name become one node: OSC has both
    /// `/app/register` (a method) and `/app/register/volume` when an app is named `register`
    /// (likewise a route named `select`), and OSCQuery lets a node be a method with CONTENTS.
    public static func container(_ fullPath: String, _ description: String, _ children: [OSCQueryNode]) -> OSCQueryNode {
        OSCQueryNode(fullPath: fullPath, description: description,
                     contents: Dictionary(children.map { ($0.name, $0) }, uniquingKeysWith: { $0.merged(with: $1) }))
    }

    /// This node with `other`'s children added, and `other`'s method attributes where this has none.
    func merged(with other: OSCQueryNode) -> OSCQueryNode {
        var node = self
        if node.type == nil && node.access == .none {
            (node.type, node.access, node.value, node.range, node.unit) = (other.type, other.access, other.value, other.range, other.unit)
        }
        if let children = other.contents {
            node.contents = (node.contents ?? [:]).merging(children) { $0.merged(with: $1) }
        }
        return node
    }

    /// The last component of the path ("" for the root).
    public var name: String { fullPath.split(separator: "/").last.map(String.init) ?? "" }

    /// The node at `path` ("/" or "" is this node, when it is the root), or nil.
    public func node(at path: String) -> OSCQueryNode? {
        var node = self
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let child = node.contents?[String(component)] else { return nil }
            node = child
        }
        return node
    }

    /// The node's attributes as JSON values (Foundation objects), children included.
    public func jsonObject() -> [String: Any] {
        var object: [String: Any] = [:]
        for attribute in Attribute.allCases {
            if let value = jsonValue(of: attribute) { object[attribute.rawValue] = value }
        }
        return object
    }

    /// The answer to `?<attribute>`: `{"<attribute>": …}`; `{}` for the VALUE of a readable node
    /// that has none now (OSCQueryProposal); nil when the node has no such attribute (HTTP 204),
    /// as a write-only node's VALUE (whose placeholder is only in the tree).
    public func attributeAnswer(_ attribute: Attribute) -> [String: Any]? {
        if attribute == .value {
            guard access == .readOnly || access == .readWrite else { return nil }
            guard let value else { return [:] }
            return [attribute.rawValue: value.map(Self.json)]
        }
        return jsonValue(of: attribute).map { [attribute.rawValue: $0] }
    }

    /// One attribute as a JSON value, or nil when the node does not have it.
    public func jsonValue(of attribute: Attribute) -> Any? {
        switch attribute {
        case .fullPath: return fullPath
        case .description: return description
        case .contents: return contents.map { $0.mapValues { $0.jsonObject() } }
        case .type: return type
        // A container, and a method with no arguments, say ACCESS 0 (the proposal's own examples
        // do; a client library such as python-oscquery refuses a node with no VALUE that says
        // anything else, or nothing).
        case .access: return access.rawValue
        // A method that takes or answers arguments has a VALUE: its value, or, where it has none
        // now or cannot be read (write-only), a JSON null per type tag, the proposal's
        // placeholder (clients that read it, python-oscquery's among them, need one).
        case .value:
            if let value { return value.map(Self.json) }
            guard let type, !type.isEmpty, access != .none else { return nil }
            return Array(repeating: NSNull(), count: type.count)
        // An entry a value does not have is JSON null (OSCQueryProposal: a placeholder).
        case .range:
            return range.map { entries in
                entries.map { entry -> Any in
                    var object: [String: Any] = [:]
                    if let minimum = entry.minimum { object["MIN"] = minimum }
                    if let maximum = entry.maximum { object["MAX"] = maximum }
                    if let values = entry.values { object["VALS"] = values }
                    return object.isEmpty ? NSNull() : object
                }
            }
        case .unit: return unit.map { $0.map { $0 ?? NSNull() as Any } }
        }
    }

    private static func json(_ value: Value) -> Any {
        switch value {
        // Through the float's shortest decimal form: 0.8 stays 0.8, not 0.800000011920929.
        // JSON has no infinity or NaN (the control plane answers silence as -144 dB, never -inf).
        case let .float(f): f.isFinite ? (Double("\(f)") ?? Double(f)) : NSNull()
        case let .int(i): Int(i)
        case let .string(s): s
        }
    }
}

/// JSON text for OSCQuery answers: keys sorted, so the same state gives the same bytes.
enum OSCQueryJSON {
    static func data(_ object: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    }
}
