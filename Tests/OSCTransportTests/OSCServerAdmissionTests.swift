import Foundation
@testable import OSCTransport
import Testing

/// Who may hold a TCP connection to the OSC server, and for how long (OSCServer+Admission.swift):
/// real sockets on loopback, clients bound to a chosen source address before they connect.
@Suite("OSCServer admission and packet deadline")
struct OSCServerAdmissionTests {
    func server(_ change: (inout OSCServer.Configuration) -> Void = { _ in }) throws -> OSCServer {
        var configuration = OSCServer.Configuration()
        configuration.port = 0
        configuration.bind = "0.0.0.0"
        change(&configuration)
        return try OSCServer(configuration: configuration)
    }

    /// The server's TCP figures, read on its thread.
    func status(_ server: OSCServer) -> OSCServer.TCPStatus? {
        let box = Box<OSCServer.TCPStatus>()
        let done = DispatchSemaphore(value: 0)
        server.execute { box.value = server.tcpStatus; done.signal() }
        return done.wait(timeout: .now() + 5) == .success ? box.value : nil
    }

    func waitUntil(timeout: Double = 5, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { throw CancellationError() }
            usleep(1000)
        }
    }

    @Test("a silent connection, one that sends only empty frames, one that stops half-way through a packet and one that drips a packet slower than the deadline are closed at it; one that has sent a packet is kept however quiet, in either framing")
    func packetDeadline() throws {
        let server = try server { $0.packetTimeout = 0.3 }
        defer { server.stop() }
        let seen = Box<[[UInt8]]>([])
        server.start { bytes, _ in seen.withLock { $0.append(bytes) } }
        let message = [UInt8]("/ok\0,\0\0\0".utf8)

        let silent = try TestPeer(port: server.port)
        let stalled = try TestPeer(port: server.port)
        stalled.send([0, 0, 0, 64] + [UInt8](repeating: 0x2f, count: 8))
        let spoke = try TestPeer(port: server.port)
        spoke.send([0, 0, 0, UInt8(message.count)] + message)
        let slip = try TestPeer(port: server.port)
        slip.send([0xC0] + message + [0xC0])
        let empty = try TestPeer(port: server.port)
        empty.send([0, 0, 0, 0, 0, 0, 0, 0])   // empty frames are no packets
        let dripping = try TestPeer(port: server.port)
        let started = Date()
        // 64 bytes announced, 4 every 0.1 s (1.6 s in all): each piece comes well within the
        // deadline, the packet does not. Kept without the deadline (the packet completes), and
        // without one per packet (each piece would restart it).
        dripping.send([0, 0, 0, 64])
        var dripClosedAt: Double?
        for _ in 0..<16 where dripClosedAt == nil {
            Thread.sleep(forTimeInterval: 0.1)
            dripping.send([UInt8](repeating: 0x2f, count: 4))
            if dripping.isClosed(within: 0) { dripClosedAt = Date().timeIntervalSince(started) }
        }
        #expect(silent.isClosed(within: 2) && stalled.isClosed(within: 2) && empty.isClosed(within: 2),
                "a silent connection, a stalled one and one that sent only empty frames are closed")
        // The deadline (0.3 s), a tick, the 0.1 s between looks, and slack for a loaded machine.
        let dripBound = 0.3 + 0.01 + 0.1 + 0.5
        #expect((dripClosedAt ?? .infinity) < dripBound,
                "a packet dripped slower than the deadline: closed \(dripClosedAt.map { "\($0) s" } ?? "never") after it began (the deadline is 0.3 s)")

        Thread.sleep(forTimeInterval: 0.5)
        #expect(!spoke.isClosed(within: 0) && !slip.isClosed(within: 0), "connections that have spoken are kept")
        #expect(seen.withLock { $0.count } == 2)
        let figures = status(server)
        #expect(figures?.closedAtDeadline == 4 && figures?.connections == 2, "\(String(describing: figures))")
    }

    @Test("the allow list decides at accept: a refused peer is closed at once with the answer given, and never takes a slot; connections per address and in all are capped")
    func admission() throws {
        let server = try server {
            $0.maximumConnections = 3
            $0.maximumConnectionsPerAddress = 2
        }
        defer { server.stop() }
        server.admits = { $0.host != "127.0.0.2" }
        server.answerAtAccept = { address, rejection in Array("\(address.host) \(rejection)".utf8) }
        server.start { _, _ in }

        let refused = (0..<5).map { _ in try? TestPeer(port: server.port, source: "127.0.0.2") }
        for peer in refused {
            #expect(peer?.isClosed(within: 2) == true, "a refused peer is closed at once")
        }
        let answer = refused.first??.received ?? []
        #expect(answer.count > 4 && String(decoding: answer.dropFirst(4), as: UTF8.self) == "127.0.0.2 notAllowed", "\(answer)")

        let first = try TestPeer(port: server.port, source: "127.0.0.1")
        let second = try TestPeer(port: server.port, source: "127.0.0.1")
        let third = try TestPeer(port: server.port, source: "127.0.0.1")
        #expect(third.isClosed(within: 2), "over its address's share")
        #expect(String(decoding: third.received.dropFirst(4), as: UTF8.self) == "127.0.0.1 tooManyFromAddress(limit: 2)")
        let other = try TestPeer(port: server.port, source: "127.0.0.3")
        let fourth = try TestPeer(port: server.port, source: "127.0.0.4")
        #expect(fourth.isClosed(within: 2), "over the limit in all")
        #expect(String(decoding: fourth.received.dropFirst(4), as: UTF8.self) == "127.0.0.4 tooMany(limit: 3)")
        #expect(!first.isClosed(within: 0.1) && !second.isClosed(within: 0) && !other.isClosed(within: 0))
        let figures = status(server)
        #expect(figures?.refused == 5 && figures?.turnedAway == 2 && figures?.connections == 3, "\(String(describing: figures))")

        // A slot freed is a slot for the next peer.
        first.close()
        try waitUntil { status(server)?.connections == 2 }
        let again = try TestPeer(port: server.port, source: "127.0.0.4")
        #expect(!again.isClosed(within: 0.3), "admitted once a slot is free")
    }

    @Test("a refused flood from many addresses does not silence what an allowed peer over its cap is told: refusals and allowed peers' closings have budgets of their own")
    func allowedPeersBudgetApart() throws {
        let server = try server { $0.maximumConnectionsPerAddress = 1 }
        defer { server.stop() }
        server.admits = { $0.host == "127.0.0.1" }
        server.answerAtAccept = { address, rejection in Array("\(address.host) \(rejection)".utf8) }
        server.start { _, _ in }

        // 5 each (the most answered per address) from 6 refused addresses: more than the 20 answered in all.
        var answered = 0
        for k in 2..<8 {
            for _ in 0..<5 {
                let peer = try TestPeer(port: server.port, source: "127.0.0.\(k + 10)")
                #expect(peer.isClosed(within: 2), "a refused peer is closed at once")
                if !peer.received.isEmpty { answered += 1 }
            }
        }
        #expect(answered == 20, "\(answered) of 30 refused peers answered (at most 20 in an interval)")

        let first = try TestPeer(port: server.port, source: "127.0.0.1")
        let over = try TestPeer(port: server.port, source: "127.0.0.1")
        #expect(over.isClosed(within: 2), "over its address's share")
        #expect(String(decoding: over.received.dropFirst(4), as: UTF8.self) == "127.0.0.1 tooManyFromAddress(limit: 1)",
                "the allowed peer turned away is told why: \(over.received)")
        #expect(!first.isClosed(within: 0))
    }

    @Test("slots beyond the total are kept for admin addresses: with every other slot taken an admin is admitted, up to the reserve")
    func adminReserve() throws {
        let server = try server {
            $0.maximumConnections = 2
            $0.adminReserve = 1
        }
        defer { server.stop() }
        server.isAdmin = { $0.host == "127.0.0.4" }
        server.answerAtAccept = { address, rejection in Array("\(address.host) \(rejection)".utf8) }
        server.start { _, _ in }

        let held = [try TestPeer(port: server.port, source: "127.0.0.1"), try TestPeer(port: server.port, source: "127.0.0.3")]
        try waitUntil { status(server)?.connections == 2 }
        let other = try TestPeer(port: server.port, source: "127.0.0.5")
        #expect(other.isClosed(within: 2), "the total is taken")
        let admin = try TestPeer(port: server.port, source: "127.0.0.4")
        #expect(!admin.isClosed(within: 0.3), "an admin takes the reserve")
        let secondAdmin = try TestPeer(port: server.port, source: "127.0.0.4")
        #expect(secondAdmin.isClosed(within: 2), "the reserve is taken too")
        #expect(String(decoding: secondAdmin.received.dropFirst(4), as: UTF8.self) == "127.0.0.4 tooMany(limit: 2)")
        #expect(status(server)?.connections == 3 && held.allSatisfy { !$0.isClosed(within: 0) })
    }

    @Test("connections are counted per address, IPv6 ones too (hosts of one /64 apart); an IPv4-mapped IPv6 address counts as its IPv4 one")
    func countedPerHost() throws {
        let a = try #require(SocketAddress(host: "2001:db8:1:2::5", port: 1))
        let b = try #require(SocketAddress(host: "2001:db8:1:2:ffff:1:2:3", port: 2))
        let a2 = try #require(SocketAddress(host: "2001:db8:1:2::5", port: 9))
        #expect(a.countedHost == a2.countedHost && a.countedHost != b.countedHost, "two hosts of one /64 are two")
        #expect(a.countedHostName == "2001:db8:1:2::5")
        let mapped = try #require(SocketAddress(host: "::ffff:192.0.2.7", port: 1))
        let plain = try #require(SocketAddress(host: "192.0.2.7", port: 1))
        #expect(mapped.countedHost == plain.countedHost && mapped.countedHost == [192, 0, 2, 7] && mapped.countedHostName == "192.0.2.7")
        #expect(SocketAddress(host: "192.0.2.8", port: 1)?.countedHost != plain.countedHost)
    }

    @Test("the descriptor reserve: the peer limit shrinks with a low soft limit, and a descriptor among the last ones is in the reserve")
    func descriptorReserve() {
        #expect(DescriptorBudget.peerLimit(configured: 64, soft: 8192) == 64)
        #expect(DescriptorBudget.peerLimit(configured: 64, soft: 300) == 64)
        #expect(DescriptorBudget.peerLimit(configured: 64, soft: 80) == 60)
        #expect(DescriptorBudget.peerLimit(configured: 64, soft: 0) == 0)
        #expect(!DescriptorBudget.isInReserve(7935, soft: 8192) && DescriptorBudget.isInReserve(7936, soft: 8192))
        #expect(DescriptorBudget.isInReserve(60, soft: 80) && !DescriptorBudget.isInReserve(59, soft: 80))
        let open = DescriptorBudget.openCount()
        #expect(open != nil && open! >= 3, "stdin, stdout and stderr at least: \(String(describing: open))")
    }
}

/// A value shared with the server's thread, under a lock.
final class Box<Value>: @unchecked Sendable {
    // @unchecked: `value` is read and written under `lock`.
    private let lock = NSLock()
    private var stored: Value?
    init(_ value: Value? = nil) { stored = value }
    var value: Value? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    func withLock<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&stored!) } }
}

/// A TCP client of the server on 127.0.0.1, bound to `source` first.
final class TestPeer {
    let fd: Int32
    private(set) var received: [UInt8] = []
    private var closed = false

    init(port: UInt16, source: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        func address(_ host: String, _ port: UInt16) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            return address
        }
        var from = address(source, 0)
        var to = address("127.0.0.1", port)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        guard withUnsafePointer(to: &from, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }) == 0,
              withUnsafePointer(to: &to, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }) == 0 else {
            let text = String(cString: strerror(errno))
            Glibc.close(fd)
            throw OSCServerError("connect from \(source): \(text)")
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 && !closed { Glibc.close(fd) }
        closed = true
    }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Whether the server has closed the connection, reading what it sent meanwhile, waiting up
    /// to `seconds` for the end.
    func isClosed(within seconds: Double) -> Bool {
        if closed { return true }
        let deadline = Date().addingTimeInterval(seconds)
        var chunk = [UInt8](repeating: 0, count: 4096)
        repeat {
            var set = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            let wait = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            if poll(&set, 1, wait) > 0 {
                let n = recv(fd, &chunk, chunk.count, Int32(MSG_DONTWAIT))
                if n > 0 {
                    received += chunk[0..<n]
                    continue
                }
                if n == 0 || (errno != EAGAIN && errno != EINTR) {
                    Glibc.close(fd)
                    closed = true
                    return true
                }
            }
        } while Date() < deadline
        return false
    }
}
