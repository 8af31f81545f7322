import OSCTransport
import Policy

extension StringProtocol {
    func trimmed(of set: String) -> String {
        var s = Substring(self)
        while let first = s.first, set.contains(first) { s = s.dropFirst() }
        while let last = s.last, set.contains(last) { s = s.dropLast() }
        return String(s)
    }
}

/// Reads a message's arguments in order, with the contract's coercions and error messages: a
/// path's decoder (`PathRow`) reads what its row declares, and every refusal names the argument.
public struct Arguments {
    public let path: String
    private let values: [OSCArgument]
    private var next = 0

    public init(_ message: OSCMessage) {
        path = message.path
        values = message.arguments
    }

    public var isEmpty: Bool { values.isEmpty }
    /// Whether the next argument is a string (for a path that takes a number or a word there).
    public var nextIsString: Bool {
        guard next < values.count else { return false }
        if case .string = values[next] { return true }
        if case .symbol = values[next] { return true }
        return false
    }
    /// Whether every argument has been read.
    public var isAtEnd: Bool { next >= values.count }
    /// The arguments, all of them (for paths with one special form, such as `channelmap default`;
    /// they must still be read).
    public var all: [OSCArgument] { values }

    /// Quotes a value for an error message, cut short if long (a 64 KiB string stays out of replies).
    public static func quote(_ text: String) -> String {
        text.utf8.count > 64 ? "'\(String(decoding: text.utf8.prefix(60), as: UTF8.self))…' (\(text.utf8.count) bytes)" : "'\(text)'"
    }

    private mutating func take(_ name: String, expected: String) throws(PolicyError) -> OSCArgument {
        guard next < values.count else {
            throw PolicyError(.badArgument, "missing argument \(next + 1), \(name) (expected \(expected))")
        }
        next += 1
        return values[next - 1]
    }

    private static let aNumber = "a number (i, f, d or h)"
    private static let aBoolean = "a boolean (T or F, or 0 or 1 as i, f, d or h)"
    private static let aString = "a string (s or S)"

    private func wrongType(_ argument: OSCArgument, _ name: String, _ expected: String) -> PolicyError {
        refusal(name, "expected \(expected), got type '\(argument.typeTag)'")
    }

    /// The error for the argument just read: "argument 2, category: <problem>".
    public func refusal(_ name: String, _ problem: String) -> PolicyError {
        PolicyError(.badArgument, "argument \(next), \(name): \(problem)")
    }

    public mutating func number(_ name: String, allowNegativeInfinity: Bool = false) throws(PolicyError) -> Double {
        let argument = try take(name, expected: Self.aNumber)
        let value: Double
        switch argument {
        case let .int32(v): value = Double(v)
        case let .float(v): value = Double(v)
        case let .double(v): value = v
        case let .int64(v): value = Double(v)
        default: throw wrongType(argument, name, Self.aNumber)
        }
        guard value.isFinite || (allowNegativeInfinity && value == -.infinity) else {
            throw refusal(name, "expected a finite number, got \(value)")
        }
        return value
    }

    public mutating func optionalNumber(_ name: String) throws(PolicyError) -> Double? {
        next < values.count ? try number(name) : nil
    }

    public mutating func optionalInteger(_ name: String) throws(PolicyError) -> Int? {
        guard let value = try optionalNumber(name) else { return nil }
        guard value == value.rounded(), abs(value) < 1e9 else {
            throw refusal(name, "expected a whole number, got \(value)")
        }
        return Int(value)
    }

    public mutating func boolean(_ name: String) throws(PolicyError) -> Bool {
        let argument = try take(name, expected: Self.aBoolean)
        switch argument {
        case .true: return true
        case .false: return false
        case let .int32(v) where v == 0 || v == 1: return v == 1
        case let .int64(v) where v == 0 || v == 1: return v == 1
        case let .float(v) where v == 0 || v == 1: return v == 1
        case let .double(v) where v == 0 || v == 1: return v == 1
        case let .int32(v): throw refusal(name, "expected 0 or 1, got \(v)")
        case let .int64(v): throw refusal(name, "expected 0 or 1, got \(v)")
        case let .float(v): throw refusal(name, "expected 0 or 1, got \(v)")
        case let .double(v): throw refusal(name, "expected 0 or 1, got \(v)")
        default: throw wrongType(argument, name, Self.aBoolean)
        }
    }

    public mutating func optionalBoolean(_ name: String) throws(PolicyError) -> Bool? {
        next < values.count ? try boolean(name) : nil
    }

    public mutating func string(_ name: String) throws(PolicyError) -> String {
        let argument = try take(name, expected: Self.aString)
        switch argument {
        case let .string(v), let .symbol(v): return v
        default: throw wrongType(argument, name, Self.aString)
        }
    }

    public mutating func nonEmptyString(_ name: String) throws(PolicyError) -> String {
        let value = try string(name)
        guard !value.isEmpty, value.utf8.count <= Limits.textBytes else {
            throw refusal(name, "expected 1 to \(Limits.textBytes) bytes, got \(value.utf8.count)")
        }
        return value
    }

    /// A number, or the string `off` (nil).
    public mutating func numberOrOff(_ name: String) throws(PolicyError) -> Double? {
        if next < values.count, case let .string(word) = values[next] {
            next += 1
            guard word == "off" else { throw refusal(name, "expected a number or 'off', got \(Arguments.quote(word))") }
            return nil
        }
        return try number(name)
    }

    public mutating func optionalString(_ name: String) throws(PolicyError) -> String? {
        next < values.count ? try string(name) : nil
    }

    public mutating func optionalURL() throws(PolicyError) -> String? {
        guard let url = try optionalString("url") else { return nil }
        guard OSCURL(url) != nil else {
            throw PolicyError(.badArgument, "url: expected osc.udp://host:port/ or osc.tcp://host:port/, got \(Arguments.quote(url))")
        }
        return url
    }

    /// Refuses arguments nobody read.
    public func finish() throws(PolicyError) {
        if next < values.count {
            throw PolicyError(.badArgument, "too many arguments: \(values.count) given, \(next) expected")
        }
    }
}
