import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Plain IPv4 sockets bound to a chosen loopback source address, for the runs that play peers of
/// the router's listeners (duckhostile's hosts 127.0.0.1, .2 and .3; the chaos run's peers).
/// Every socket is closed by its owner; nothing here leaves loopback.
public enum Sockets {
    /// A UDP socket bound to `source` (at `port`, any with 0), or -1.
    public static func udp(from source: String, port: UInt16 = 0) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return -1 }
        guard bind(fd, to: source, port: port) else {
            close(fd)
            return -1
        }
        return fd
    }

    /// Sends `bytes` to 127.0.0.1:`port` from `fd` (a UDP socket); false when the kernel refused.
    @discardableResult
    public static func send(_ fd: Int32, _ bytes: [UInt8], toPort port: UInt16) -> Bool {
        var address = inet("127.0.0.1", port: port)
        return bytes.withUnsafeBytes { buffer in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        } == bytes.count
    }

    /// A TCP connection from `source` to 127.0.0.1:`port`, or -1. `wait`: block until it is made
    /// (or `timeout` passes), then leave the socket blocking with that timeout on reads and
    /// writes; otherwise the connect is only started and the socket stays non-blocking.
    public static func tcp(from source: String, toPort port: UInt16, wait: Bool, timeout: Double = 2) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return -1 }
        guard bind(fd, to: source, port: 0) else {
            close(fd)
            return -1
        }
        var address = inet("127.0.0.1", port: port)
        let started = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard started == 0 || errno == EINPROGRESS else {
            close(fd)
            return -1
        }
        guard wait else { return fd }
        var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1,
              getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 else {
            close(fd)
            return -1
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - floor(timeout)) * 1e6))
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Writes all of `bytes` (a blocking socket) or as much as goes now (a non-blocking one);
    /// false on an error.
    @discardableResult
    public static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) }
            offset += written
        }
        return true
    }

    /// Reads until `complete` says the bytes so far are whole, the peer closes, or the socket's
    /// timeout passes; what was read.
    public static func read(_ fd: Int32, until complete: ([UInt8]) -> Bool) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while !complete(received) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += buffer[..<count]
        }
        return received
    }

    /// Makes `fd` non-blocking: a write takes what goes now, a read what is there.
    public static func setNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// Whether the peer has closed `fd` (a read finds its end) without waiting; bytes waiting are
    /// read and dropped.
    public static func peerClosed(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 { continue }
            return count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)
        }
    }

    private static func bind(_ fd: Int32, to source: String, port: UInt16) -> Bool {
        var address = inet(source, port: port)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    private static func inet(_ host: String, port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        _ = inet_pton(AF_INET, host, &address.sin_addr)
        return address
    }

    /// Raises this process's soft limit on open descriptors to its hard limit: the run holds
    /// thousands of connections.
    public static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return -1 }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        _ = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        return Int(limit.rlim_cur)
    }
}

/// The bytes of one masked WebSocket frame from a client (RFC 6455 §5.2): FIN, `opcode`,
/// `payload` masked with `mask`.
public func webSocketFrame(opcode: UInt8, _ payload: [UInt8], mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]) -> [UInt8] {
    var frame: [UInt8] = [0x80 | opcode]
    if payload.count < 126 {
        frame.append(0x80 | UInt8(payload.count))
    } else if payload.count < 65_536 {
        frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    } else {
        frame.append(0x80 | 127)
        frame += (0..<8).reversed().map { UInt8(truncatingIfNeeded: payload.count >> ($0 * 8)) }
    }
    frame += mask
    frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    return frame
}

/// The request that opens a WebSocket on `port`'s root, as a program (no Origin) would send it.
public func webSocketUpgrade(port: UInt16) -> [UInt8] {
    Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8)
}

/// Whether `bytes` hold a whole HTTP response head.
public func headComplete(_ bytes: [UInt8]) -> Bool {
    bytes.count >= 4 && bytes.indices.dropFirst(3).contains { bytes[$0 - 3] == 13 && bytes[$0 - 2] == 10 && bytes[$0 - 1] == 13 && bytes[$0] == 10 }
}
