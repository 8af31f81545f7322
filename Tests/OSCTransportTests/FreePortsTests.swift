import Glibc
@testable import OSCTransport
import Testing

/// Free ports found as the listeners bind: UDP and TCP for OSC, TCP for HTTP.
@Suite("Free ports")
struct FreePortsTests {
    /// A socket of `kind` bound to 127.0.0.1 on a port the kernel picks (listening, for TCP),
    /// and that port.
    static func held(_ kind: Int32) throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, kind, 0)
        try #require(fd >= 0)
        let address = try #require(SocketAddress(host: "127.0.0.1", port: 0))
        try #require(address.withSockaddr(family: AF_INET) { bind(fd, $0, $1) } == 0)
        if kind == Int32(SOCK_STREAM.rawValue) { try #require(listen(fd, 1) == 0) }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, UInt16(bigEndian: bound.sin_port))
    }

    @Test("a port held for UDP is not free for OSC (UDP and TCP); one with a TCP listener is free for neither")
    func held() throws {
        let udp = try Self.held(Int32(SOCK_DGRAM.rawValue))
        defer { close(udp.fd) }
        #expect(!FreePorts.isFree(udp.port, host: "127.0.0.1", udp: true))
        let tcp = try Self.held(Int32(SOCK_STREAM.rawValue))
        defer { close(tcp.fd) }
        #expect(!FreePorts.isFree(tcp.port, host: "127.0.0.1", udp: true))
        #expect(!FreePorts.isFree(tcp.port, host: "127.0.0.1", udp: false))
        #expect(!FreePorts.isFree(0, host: "127.0.0.1", udp: false), "0 is no port")
        #expect(!FreePorts.isFree(9951, host: "not an address", udp: false))
    }

    @Test("the first free port from a start: held ports and those to avoid are passed over; none within the count is nil")
    func first() throws {
        let tcp = try Self.held(Int32(SOCK_STREAM.rawValue))
        defer { close(tcp.fd) }
        guard tcp.port < 65000 else { return }
        let found = try #require(FreePorts.first(from: tcp.port, host: "127.0.0.1", udp: true, avoiding: [tcp.port + 1]))
        #expect(found != tcp.port && found != tcp.port + 1 && found > tcp.port)
        #expect(FreePorts.first(from: tcp.port, host: "127.0.0.1", udp: true, count: 1) == nil)
    }
}
