import Foundation

/// A JSON parser (RFC 8259) that remembers the line each value starts on, by its field path
/// (`apps[2].category`), so that a problem in a session file can name its line, and the bytes
/// each value takes, so that one value can be changed with the rest of the text left as written.
/// Foundation's decoders do not say where a value was.
struct JSONParser {
    /// A document and where its values are, by field path ("" is the document itself).
    struct Parsed {
        var value: JSONValue
        var lines: [String: Int]
        /// The bytes of each value, from its first to just after its last.
        var spans: [String: Range<Int>]
    }

    struct SyntaxError: Error, Equatable {
        var line: Int
        var column: Int
        var message: String
    }

    /// The deepest nesting accepted (a guard against stack exhaustion, far beyond any session).
    static let maximumDepth = 200

    private let bytes: [UInt8]
    private var position = 0
    private var line = 1
    private var lineStart = 0
    private var lines: [String: Int] = [:]
    private var spans: [String: Range<Int>] = [:]

    private init(_ data: Data) {
        bytes = [UInt8](data)
    }

    /// The document, and the line and bytes of every value by its field path.
    static func parse(_ data: Data) throws(SyntaxError) -> Parsed {
        var parser = JSONParser(data)
        // A UTF-8 byte order mark is tolerated, as editors on some systems write one.
        if parser.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.position = 3 }
        parser.skipWhitespace()
        let value = try parser.value(path: "", depth: 0)
        parser.skipWhitespace()
        guard parser.position == parser.bytes.count else { throw parser.error("unexpected text after the end of the document") }
        return Parsed(value: value, lines: parser.lines, spans: parser.spans)
    }

    private func error(_ message: String) -> SyntaxError {
        SyntaxError(line: line, column: position - lineStart + 1, message: message)
    }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipWhitespace() {
        while let byte = current {
            switch byte {
            case 0x20, 0x09, 0x0D: position += 1
            case 0x0A:
                position += 1
                line += 1
                lineStart = position
            default: return
            }
        }
    }

    private static func describe(_ byte: UInt8?) -> String {
        guard let byte else { return "the end of the file" }
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(UnicodeScalar(byte)))'" }
        return String(format: "byte 0x%02X", byte)
    }

    private mutating func value(path: String, depth: Int) throws(SyntaxError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw error("nested deeper than \(Self.maximumDepth) levels") }
        lines[path] = line
        let start = position
        let value = try bareValue(path: path, depth: depth)
        spans[path] = start..<position
        return value
    }

    private mutating func bareValue(path: String, depth: Int) throws(SyntaxError) -> JSONValue {
        switch current {
        case UInt8(ascii: "{"): return try object(path: path, depth: depth)
        case UInt8(ascii: "["): return try array(path: path, depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case let byte? where byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte):
            return .number(try number())
        case let other: throw error("expected a value, found \(Self.describe(other))")
        }
    }

    private mutating func literal(_ word: String) throws(SyntaxError) {
        let expected = Array(word.utf8)
        guard bytes.count - position >= expected.count, Array(bytes[position..<position + expected.count]) == expected else {
            throw error("expected a value, found \(Self.describe(current))")
        }
        position += expected.count
    }

    private mutating func object(path: String, depth: Int) throws(SyntaxError) -> JSONValue {
        position += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") { position += 1; return .object(members) }
        while true {
            guard current == UInt8(ascii: "\"") else { throw error("expected a field name in double quotes, found \(Self.describe(current))") }
            let key = try string()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':' after the field name \"\(key)\", found \(Self.describe(current))") }
            position += 1
            skipWhitespace()
            members[key] = try value(path: path.isEmpty ? key : "\(path).\(key)", depth: depth + 1)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                position += 1
                return .object(members)
            case let other:
                throw error("expected ',' or '}' after a field, found \(Self.describe(other))")
            }
        }
    }

    private mutating func array(path: String, depth: Int) throws(SyntaxError) -> JSONValue {
        position += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") { position += 1; return .array(items) }
        while true {
            items.append(try value(path: "\(path)[\(items.count)]", depth: depth + 1))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()
            case UInt8(ascii: "]"):
                position += 1
                return .array(items)
            case let other:
                throw error("expected ',' or ']' after a list item, found \(Self.describe(other))")
            }
        }
    }

    private mutating func string() throws(SyntaxError) -> String {
        position += 1
        var utf8: [UInt8] = []
        while true {
            guard let byte = current else { throw error("a string is not closed (missing '\"')") }
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                guard let text = String(bytes: utf8, encoding: .utf8) else { throw error("a string is not valid UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                position += 1
                try escape(into: &utf8)
            case 0x00..<0x20:
                throw error(byte == 0x0A ? "a string is not closed before the end of the line" : "a control character (\(Self.describe(byte))) inside a string must be escaped")
            default:
                utf8.append(byte)
                position += 1
            }
        }
    }

    private mutating func escape(into utf8: inout [UInt8]) throws(SyntaxError) {
        guard let byte = current else { throw error("a string is not closed (missing '\"')") }
        position += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(byte)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard current == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") else {
                    throw error("a \\u escape of a high surrogate must be followed by its low surrogate")
                }
                position += 2
                let low = try hex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw error("a \\u escape of a high surrogate must be followed by its low surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw error("a \\u escape of a lone low surrogate")
            }
            guard let unicode = UnicodeScalar(scalar) else { throw error("\\u escape is not a character") }
            utf8.append(contentsOf: Array(String(Character(unicode)).utf8))
        default:
            throw error("unknown escape '\\\(Character(UnicodeScalar(byte)))' in a string")
        }
    }

    private mutating func hex4() throws(SyntaxError) -> UInt32 {
        guard bytes.count - position >= 4 else { throw error("a \\u escape needs four hexadecimal digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("a \\u escape needs four hexadecimal digits")
            }
            value = value * 16 + digit
            position += 1
        }
        return value
    }

    private mutating func number() throws(SyntaxError) -> Double {
        let start = position
        func digits() -> Int {
            let from = position
            while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { position += 1 }
            return position - from
        }
        if current == UInt8(ascii: "-") { position += 1 }
        if current == UInt8(ascii: "0") {
            position += 1
            if let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { throw error("a number cannot start with 0") }
        } else if digits() == 0 {
            throw error("expected digits in a number, found \(Self.describe(current))")
        }
        if current == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { throw error("expected digits after the decimal point, found \(Self.describe(current))") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard digits() > 0 else { throw error("expected digits in the exponent, found \(Self.describe(current))") }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            position = start
            throw error("the number \(text) is too large")
        }
        return number
    }
}
