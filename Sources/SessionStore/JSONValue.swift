import Foundation

/// A parsed JSON document that keeps booleans, numbers and strings apart, so the validator can say
/// "expected a number, got true" instead of guessing.
indirect enum JSONValue: Decodable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null; return }
        if let value = try? container.decode(Bool.self) { self = .bool(value); return }
        if let value = try? container.decode(Double.self) { self = .number(value); return }
        if let value = try? container.decode(String.self) { self = .string(value); return }
        if let value = try? container.decode([JSONValue].self) { self = .array(value); return }
        self = .object(try container.decode([String: JSONValue].self))
    }

    /// How the value is named in error messages.
    var kind: String {
        switch self {
        case .null: "null"
        case let .bool(b): b ? "true" : "false"
        case let .number(n): n == n.rounded() && abs(n) < 1e15 ? String(Int(n)) : String(n)
        case let .string(s): "'\(s.count > 60 ? String(s.prefix(60)) + "…" : s)'"
        case .array: "a list"
        case .object: "an object"
        }
    }
}
