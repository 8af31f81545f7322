/// An OSC time tag: seconds since 1900-01-01 (NTP era 0) and a binary fraction of a second.
public struct OSCTimetag: Hashable, Sendable, CustomStringConvertible {
    public var seconds: UInt32
    public var fraction: UInt32

    public init(seconds: UInt32, fraction: UInt32) {
        self.seconds = seconds
        self.fraction = fraction
    }

    /// The special time tag that means "now".
    public static let immediately = OSCTimetag(seconds: 0, fraction: 1)

    /// Seconds between 1900-01-01 and 1970-01-01.
    static let unixEpochOffset: Double = 2_208_988_800

    /// A moment given in Unix seconds.
    public init(unixTime: Double) {
        let ntp = unixTime + OSCTimetag.unixEpochOffset
        let whole = ntp.rounded(.down)
        seconds = UInt32(truncatingIfNeeded: Int64(whole))
        fraction = UInt32(min((ntp - whole) * 4_294_967_296, 4_294_967_295))
    }

    public var isImmediate: Bool { self == .immediately }

    /// The moment in Unix seconds.
    public var unixTime: Double {
        Double(seconds) - OSCTimetag.unixEpochOffset + Double(fraction) / 4_294_967_296
    }

    public var description: String { isImmediate ? "immediately" : "\(unixTime)" }
}

/// One argument of an OSC message, by its type tag.
public enum OSCArgument: Equatable, Sendable {
    case int32(Int32)          // i
    case float(Float)          // f
    case string(String)        // s
    case blob([UInt8])         // b
    case int64(Int64)          // h
    case timetag(OSCTimetag)   // t
    case double(Double)        // d
    case symbol(String)        // S
    case character(UInt8)      // c
    case midi([UInt8])         // m
    case `true`                // T
    case `false`               // F
    case `nil`                 // N
    case infinitum             // I

    /// The OSC type tag.
    public var typeTag: Character {
        switch self {
        case .int32: "i"
        case .float: "f"
        case .string: "s"
        case .blob: "b"
        case .int64: "h"
        case .timetag: "t"
        case .double: "d"
        case .symbol: "S"
        case .character: "c"
        case .midi: "m"
        case .true: "T"
        case .false: "F"
        case .nil: "N"
        case .infinitum: "I"
        }
    }
}

/// An OSC message: an address pattern and its arguments.
public struct OSCMessage: Equatable, Sendable, CustomStringConvertible {
    public var path: String
    public var arguments: [OSCArgument]

    public init(_ path: String, _ arguments: [OSCArgument] = []) {
        self.path = path
        self.arguments = arguments
    }

    /// The type tags, without the leading comma.
    public var typeTags: String { String(arguments.map(\.typeTag)) }

    public var description: String {
        let values = arguments.map { argument -> String in
            switch argument {
            case let .int32(v): "\(v)"
            case let .float(v): "\(v)"
            case let .double(v): "\(v)"
            case let .int64(v): "\(v)"
            case let .string(v), let .symbol(v): v.count > 80 ? "\"\(v.prefix(77))...\"" : "\"\(v)\""
            case let .blob(v): "blob(\(v.count))"
            case let .timetag(t): "\(t)"
            case let .character(c): "'\(Character(Unicode.Scalar(c)))'"
            case let .midi(m): "midi\(m)"
            case .true: "T"
            case .false: "F"
            case .nil: "N"
            case .infinitum: "I"
            }
        }
        return ([path, "," + typeTags] + values).joined(separator: " ")
    }
}

/// What one datagram or stream frame carries: a message, or a bundle of them with a time tag.
public indirect enum OSCPacket: Equatable, Sendable {
    case message(OSCMessage)
    case bundle(OSCTimetag, [OSCPacket])
}

/// Why bytes could not be read as OSC.
public struct OSCDecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
