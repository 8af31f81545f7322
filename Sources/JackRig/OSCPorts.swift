import Foundation

/// Port numbers for OSC daemons under test, which bind UDP and TCP on the same number.
///
/// A port is taken by binding port 0 (the kernel picks one no socket uses), then checked free for
/// TCP too, on the dual-stack wildcard address, which conflicts with any use of that number on
/// any local address (the daemon binds 127.0.0.1, or `::` in some tests). The probe sockets are
/// closed before the daemon binds, so another program can still take the number in between:
/// `withFreePort` starts again on a fresh number when the daemon reports it could not bind.
public enum OSCPorts {
    /// Thrown (by the `start` closure given to `withFreePort`) when the daemon could not bind.
    public struct InUse: Error, CustomStringConvertible {
        public var port: UInt16
        public var detail: String
        public init(port: UInt16, detail: String) { self.port = port; self.detail = detail }
        public var description: String { "OSC port \(port) was taken: \(detail)" }
    }

    public struct Failure: Error, CustomStringConvertible { public let description: String }

    /// Numbers already handed out by this process: never handed out twice, so that two rigs of
    /// one run cannot be given the same number before either has bound it.
    /// Under an NSLock, not Synchronization's Mutex, which ThreadSanitizer cannot see on Linux.
    private static let handedOutLock = NSLock()
    private nonisolated(unsafe) static var handedOut: Set<UInt16> = []

    /// A port number free for UDP and TCP now.
    public static func free() throws -> UInt16 {
        for _ in 0..<100 {
            let port = try bindAny(SOCK_DGRAM)
            guard port != 0, isFree(port, SOCK_STREAM) else { continue }
            let fresh = handedOutLock.withLock { handedOut.insert(port).inserted }
            if fresh { return port }
        }
        throw Failure(description: "no port free for both UDP and TCP after 100 tries")
    }

    /// Runs `start` on a free port; when it throws `InUse`, again on another, up to `attempts` times.
    public static func withFreePort<T>(attempts: Int = 5, _ start: (UInt16) throws -> T) throws -> T {
        var lastInUse: InUse?
        for _ in 0..<attempts {
            do {
                return try start(try free())
            } catch let error as InUse {
                FileHandle.standardError.write(Data("OSCPorts: \(error); trying another port\n".utf8))
                lastInUse = error
            }
        }
        throw lastInUse!
    }

    /// Binds a socket of `type` to port 0 on the wildcard address and returns the port it got.
    private static func bindAny(_ type: __socket_type) throws -> UInt16 {
        let fd = socket(wildcardFamily, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard bind(fd, port: 0) else { throw Failure(description: "bind to port 0: \(String(cString: strerror(errno)))") }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw Failure(description: "getsockname: \(String(cString: strerror(errno)))") }
        return withUnsafeBytes(of: address) { raw in
            // sin_port and sin6_port sit at the same offset, in network byte order.
            UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
        }
    }

    /// True when a socket of `type` can bind `port` on the wildcard address.
    private static func isFree(_ port: UInt16, _ type: __socket_type) -> Bool {
        let fd = socket(wildcardFamily, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return bind(fd, port: port)
    }

    /// IPv6 with IPv4 mapped in (covers both), or IPv4 alone on a machine without IPv6.
    private static let wildcardFamily: Int32 = {
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        if fd >= 0 { close(fd); return AF_INET6 }
        return AF_INET
    }()

    private static func bind(_ fd: Int32, port: UInt16) -> Bool {
        if wildcardFamily == AF_INET6 {
            var off: Int32 = 0
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = in6addr_any
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            } == 0
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = in_addr(s_addr: INADDR_ANY)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
