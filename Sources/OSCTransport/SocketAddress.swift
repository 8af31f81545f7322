#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address and port, as the sockets layer sees a peer.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// The numeric host ("127.0.0.1", "::1").
    public let host: String
    public let port: UInt16
    /// The address bytes (4 for IPv4, 16 for IPv6; IPv4-mapped IPv6 addresses are IPv4).
    public let bytes: [UInt8]

    public var isIPv6: Bool { bytes.count == 16 }
    /// A loopback address (127.0.0.0/8, ::1): the peer is a program on this machine.
    public var isLoopback: Bool {
        bytes.count == 4 ? bytes[0] == 127 : bytes == [UInt8](repeating: 0, count: 15) + [1]
    }
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Reads a `sockaddr` of family AF_INET or AF_INET6.
    public init?(_ storage: UnsafePointer<sockaddr>) {
        switch Int32(storage.pointee.sa_family) {
        case AF_INET:
            let v4 = UnsafeRawPointer(storage).load(as: sockaddr_in.self)
            var address = v4.sin_addr
            bytes = withUnsafeBytes(of: &address) { Array($0) }
            port = UInt16(bigEndian: v4.sin_port)
        case AF_INET6:
            let v6 = UnsafeRawPointer(storage).load(as: sockaddr_in6.self)
            var address = v6.sin6_addr
            let raw = withUnsafeBytes(of: &address) { Array($0) }
            port = UInt16(bigEndian: v6.sin6_port)
            // ::ffff:a.b.c.d is an IPv4 peer on a dual-stack socket.
            if raw[0..<10].allSatisfy({ $0 == 0 }) && raw[10] == 0xff && raw[11] == 0xff {
                bytes = Array(raw[12...])
            } else {
                bytes = raw
            }
        default:
            return nil
        }
        host = SocketAddress.numericHost(bytes)
    }

    /// Resolves `host` (a numeric address or a name) and `port`. Blocking name lookups happen only
    /// when a name is given.
    public init?(host: String, port: UInt16) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else { return nil }
        defer { freeaddrinfo(result) }
        guard let address = first.pointee.ai_addr, let parsed = SocketAddress(address) else { return nil }
        self = parsed
    }

    static func numericHost(_ bytes: [UInt8]) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        _ = bytes.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &text, socklen_t(text.count)) }
        return String(cString: text)
    }

    /// Calls `body` with this address as a `sockaddr` for the given socket family.
    func withSockaddr<T>(family: Int32, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        if family == AF_INET6 {
            var v6 = sockaddr_in6()
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            let mapped: [UInt8] = bytes.count == 4 ? [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] + bytes : bytes
            withUnsafeMutableBytes(of: &v6.sin6_addr) { $0.copyBytes(from: mapped) }
            return withUnsafePointer(to: &v6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        }
        var v4 = sockaddr_in()
        v4.sin_family = sa_family_t(AF_INET)
        v4.sin_port = port.bigEndian
        withUnsafeMutableBytes(of: &v4.sin_addr) { $0.copyBytes(from: bytes.prefix(4)) }
        return withUnsafePointer(to: &v4) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    }

    var family: Int32 { isIPv6 ? AF_INET6 : AF_INET }

    /// What connection caps count as one host: the whole address (an IPv4-mapped IPv6 one as
    /// its IPv4 address). Not an IPv6 /64: every host on a venue's network shares its /64 (and
    /// every link-local address fe80::/64), so one host over its share would lock out the rest.
    public var countedHost: [UInt8] { bytes }

    /// `countedHost` as text: "192.0.2.7", "2001:db8:1:2::5".
    public var countedHostName: String { host }
}

/// An OSC URL: `osc.udp://host:port/` or `osc.tcp://host:port/` (liblo's spelling).
public struct OSCURL: Hashable, Sendable, CustomStringConvertible {
    public enum Transport: String, Sendable { case udp, tcp }
    public var transport: Transport
    public var host: String
    public var port: UInt16

    public init(transport: Transport, host: String, port: UInt16) {
        self.transport = transport
        self.host = host
        self.port = port
    }

    /// Parses `osc.udp://host:port[/]`, `osc.tcp://…`, or `host:port` (UDP). Nil when malformed.
    public init?(_ text: String) {
        var rest = Substring(text)
        if rest.hasPrefix("osc.udp://") {
            transport = .udp
            rest = rest.dropFirst(10)
        } else if rest.hasPrefix("osc.tcp://") {
            transport = .tcp
            rest = rest.dropFirst(10)
        } else if rest.contains("://") {
            return nil
        } else {
            transport = .udp
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let hostPart: Substring
        let portPart: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.hasPrefix(":") else { return nil }
            portPart = after.dropFirst()
        } else {
            guard let colon = rest.lastIndex(of: ":") else { return nil }
            hostPart = rest[..<colon]
            portPart = rest[rest.index(after: colon)...]
        }
        guard !hostPart.isEmpty, hostPart.count <= 255, !hostPart.contains("/"),
              let port = UInt16(portPart), port > 0 else { return nil }
        host = String(hostPart)
        self.port = port
    }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return "osc.\(transport.rawValue)://\(h):\(port)/"
    }
}
