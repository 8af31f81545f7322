/// A range of network addresses in a session's `osc.allow` / `osc.admin`: `10.0.0.5`,
/// `10.0.0.0/24`, `::1`, `fe80::/10`, and (for `osc.admin`) one port: `127.0.0.1:9000`, `[::1]:9000`.
public struct NetworkRange: Equatable, Sendable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6).
    public var bytes: [UInt8]
    public var prefixLength: Int
    public var port: UInt16?
    public let description: String

    /// Parses the text, or returns why it is not an address range.
    public static func parse(_ text: String) -> Result<NetworkRange, NetworkRangeError> {
        var rest = Substring(text)
        var port: UInt16?
        var hostText: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return .failure(.init(text)) }
            hostText = rest[rest.index(after: rest.startIndex)..<close]
            rest = rest[rest.index(after: close)...]
            if rest.hasPrefix(":") {
                guard let p = UInt16(rest.dropFirst()), p > 0 else { return .failure(.init(text)) }
                port = p
                rest = ""
            }
            guard rest.isEmpty else { return .failure(.init(text)) }
        } else if rest.filter({ $0 == ":" }).count == 1 {
            let colon = rest.firstIndex(of: ":")!
            guard let p = UInt16(rest[rest.index(after: colon)...]), p > 0 else { return .failure(.init(text)) }
            port = p
            hostText = rest[..<colon]
        } else {
            hostText = rest
        }
        var prefix: Int?
        if let slash = hostText.firstIndex(of: "/") {
            guard port == nil, let p = Int(hostText[hostText.index(after: slash)...]) else { return .failure(.init(text)) }
            prefix = p
            hostText = hostText[..<slash]
        }
        guard let bytes = parseIPv4(hostText) ?? parseIPv6(hostText) else { return .failure(.init(text)) }
        let bits = bytes.count * 8
        if let prefix, !(0...bits).contains(prefix) { return .failure(.init(text)) }
        return .success(NetworkRange(bytes: bytes, prefixLength: prefix ?? bits, port: port, description: text))
    }

    /// Whether the address (4 or 16 bytes) and port fall in this range.
    public func contains(_ address: [UInt8], port: UInt16) -> Bool {
        if let own = self.port, own != port { return false }
        guard address.count == bytes.count else { return false }
        var left = prefixLength
        for (a, b) in zip(address, bytes) where left > 0 {
            let mask: UInt8 = left >= 8 ? 0xff : ~(0xff >> UInt8(left))
            if a & mask != b & mask { return false }
            left -= 8
        }
        return true
    }

    static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.contains(":"), text.allSatisfy({ $0.isHexDigit || $0 == ":" }) else { return nil }
        let halves = text.components(separatedByDoubleColon: ())
        guard halves.count <= 2 else { return nil }
        func groups(_ s: Substring) -> [UInt16]? {
            if s.isEmpty { return [] }
            var out: [UInt16] = []
            for g in s.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(g.count), let v = UInt16(g, radix: 16) else { return nil }
                out.append(v)
            }
            return out
        }
        guard let head = groups(halves[0]) else { return nil }
        var all = head
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count <= 7 else { return nil }
            all = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
        }
        guard all.count == 8 else { return nil }
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }
}

extension NetworkRange {
    /// Whether every address of the range is a loopback one (127.0.0.0/8, ::1).
    public var isLoopback: Bool {
        switch bytes.count {
        case 4: return prefixLength >= 8 && bytes[0] == 127
        case 16: return prefixLength == 128 && bytes == [UInt8](repeating: 0, count: 15) + [1]
        default: return false
        }
    }
}

public struct NetworkRangeError: Error, Equatable, Sendable, CustomStringConvertible {
    public let text: String
    init(_ text: String) { self.text = text }
    public var description: String {
        "expected an address or range such as 127.0.0.1, 10.0.0.0/24, ::1 or 127.0.0.1:9000, got '\(text)'"
    }
}

private extension Substring {
    /// Splits at the first "::" (IPv6 zero compression).
    func components(separatedByDoubleColon _: Void) -> [Substring] {
        guard let range = firstRange(of: "::") else { return [self] }
        let rest = self[range.upperBound...]
        if rest.firstRange(of: "::") != nil { return [self, "", ""] }
        return [self[..<range.lowerBound], rest]
    }
}
