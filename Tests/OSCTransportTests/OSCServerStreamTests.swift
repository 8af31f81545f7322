import Foundation
@testable import OSCTransport
import Synchronization
import Testing

/// Streams carried by another front end (a WebSocket): their packets reach the handler as a TCP
/// peer's, in order, replies leave through the outlet, and their end is reported as a TCP peer's.
@Suite("OSCServer streams")
struct OSCServerStreamTests {
    final class Seen: @unchecked Sendable {
        // @unchecked: under lock.
        let lock = NSLock()
        var packets: [(bytes: [UInt8], peer: OSCServer.Peer)] = []
        var closed: [OSCServer.Peer] = []
        var out: [(bytes: [UInt8], conflatable: Bool)] = []
    }

    @Test("a stream's packets are a TCP peer's, in order; a reply to that peer leaves through the outlet; its close is reported once")
    func stream() throws {
        var configuration = OSCServer.Configuration()
        configuration.port = 0
        let server = try OSCServer(configuration: configuration)
        defer { server.stop() }
        let seen = Seen()
        let closed = DispatchSemaphore(value: 0)
        server.start(onClose: { peer in
            seen.lock.withLock { seen.closed.append(peer) }
            closed.signal()
        }, handler: { bytes, peer in
            seen.lock.withLock { seen.packets.append((bytes, peer)) }
            server.send(bytes.reversed(), to: peer)
            server.send([9], to: server.destination(peer), conflatable: true)
        })
        let address = try #require(SocketAddress(host: "127.0.0.1", port: 4321))
        let stream = server.openStream(from: address) { bytes, conflatable in
            seen.lock.withLock { seen.out.append((bytes, conflatable)) }
            return true
        }
        let id = stream.id
        for k in 0..<50 { server.receive([UInt8(k), 1, 2], on: stream) }
        let handled = DispatchSemaphore(value: 0)
        server.execute { handled.signal() }
        #expect(handled.wait(timeout: .now() + 5) == .success)
        try waitUntil { stream.backlog == 0 }
        server.closeStream(stream)
        server.closeStream(stream)
        #expect(closed.wait(timeout: .now() + 5) == .success)
        server.receive([7], on: stream)   // after close: dropped
        let done = DispatchSemaphore(value: 0)
        server.execute { done.signal() }
        #expect(done.wait(timeout: .now() + 5) == .success)
        seen.lock.withLock {
            #expect(seen.packets.map(\.bytes.first) == (0..<50).map { UInt8($0) })
            #expect(seen.packets.allSatisfy { $0.peer.transport == .tcp && $0.peer.connection == id && $0.peer.address.port == 4321 })
            #expect(seen.out.count == 100)
            #expect(seen.out.first?.bytes == [2, 1, 0] && seen.out.first?.conflatable == false)
            #expect(seen.out[1].bytes == [9] && seen.out[1].conflatable == true)
            #expect(seen.closed.map(\.connection) == [id])
        }
        #expect(!server.isConnected(OSCServer.Peer(transport: .tcp, address: address, connection: id)))
        #expect(stream.backlog == 0)
    }

    /// A server on a port of its own, started, handling nothing.
    private func startedServer() throws -> OSCServer {
        var configuration = OSCServer.Configuration()
        configuration.port = 0
        let server = try OSCServer(configuration: configuration)
        server.start { _, _ in }
        return server
    }

    /// A stream whose outlet records "packet <first byte>" and whose turn end records "turn end".
    private func recordingStream(on server: OSCServer, _ events: Events) -> OSCServer.StreamHandle {
        server.openStream(from: SocketAddress(host: "127.0.0.1", port: 4321)!, outlet: { bytes, _ in
            events.withLock { $0.append("packet \(bytes[0])") }
            return true
        }, turnEnd: { events.withLock { $0.append("turn end") } })
    }

    /// What streams' outlets and turn ends did, in order.
    final class Events: Sendable {
        private let list = Mutex<[String]>([])
        func withLock<T>(_ body: (inout [String]) -> T) -> T { list.withLock { body(&$0) } }
    }

    @Test("a stream's turn end runs once after each turn of the loop in which its outlet was given packets, after them; never for a stream not sent to")
    func turnEnd() throws {
        let server = try startedServer()
        defer { server.stop() }
        let events = Events()
        let address = try #require(SocketAddress(host: "127.0.0.1", port: 4321))
        let sent = recordingStream(on: server, events)
        _ = server.openStream(from: address, outlet: { _, _ in true }, turnEnd: { events.withLock { $0.append("other's turn end") } })
        for round in 0..<2 {
            let done = DispatchSemaphore(value: 0)
            // Two packets in one task: one turn.
            server.execute {
                let peer = server.streamPeer(sent.id)!
                server.send([UInt8(2 * round)], to: peer)
                server.send([UInt8(2 * round + 1)], to: peer)
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 5) == .success)
            try waitUntil { events.withLock { $0.count } == 3 * (round + 1) }
        }
        // A turn that sends nothing (a task of its own) ends no stream's turn.
        let idle = DispatchSemaphore(value: 0)
        server.execute { idle.signal() }
        #expect(idle.wait(timeout: .now() + 5) == .success)
        let settled = DispatchSemaphore(value: 0)
        server.execute { settled.signal() }
        #expect(settled.wait(timeout: .now() + 5) == .success)
        #expect(events.withLock { $0 } == ["packet 0", "packet 1", "turn end", "packet 2", "packet 3", "turn end"])
    }

    @Test("a stream sent to and closed in the same turn has its turn end when it closes")
    func turnEndAtClose() throws {
        let server = try startedServer()
        defer { server.stop() }
        let events = Events()
        let stream = recordingStream(on: server, events)
        let done = DispatchSemaphore(value: 0)
        server.execute {
            server.send([1], to: server.streamPeer(stream.id)!)
            server.endStream(stream)
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        try waitUntil { events.withLock { $0.count } == 2 }
        #expect(events.withLock { $0 } == ["packet 1", "turn end"])
    }

    @Test("a stream that hands in thousands of packets at once shares the thread: a UDP packet sent meanwhile is handled before they are all done")
    func fairness() throws {
        var configuration = OSCServer.Configuration()
        configuration.port = 0
        let server = try OSCServer(configuration: configuration)
        defer { server.stop() }
        let order = Seen()
        server.start { bytes, peer in
            usleep(200)   // each stream packet costs 0.2 ms: 2000 of them 0.4 s
            order.lock.withLock { order.packets.append((bytes, peer)) }
        }
        let address = try #require(SocketAddress(host: "127.0.0.1", port: 4321))
        let stream = server.openStream(from: address) { _, _ in true }
        // 1 KiB packets: 8 a turn (the byte budget), so 2000 take 250 turns.
        for _ in 0..<2000 { server.receive([UInt8](repeating: 1, count: 1024), on: stream) }
        #expect(stream.backlog > 0)
        let udp = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: server.port))
        try udp.send(OSCMessage("/ping"))
        try waitUntil(timeout: 10) { stream.backlog == 0 }
        order.lock.withLock {
            let position = order.packets.firstIndex { $0.peer.transport == .udp }
            #expect(position != nil && position! < 1900, "the UDP packet was handled at position \(String(describing: position)) of 2001")
        }
    }

    /// Waits for `condition` (polling), failing after `timeout` seconds.
    func waitUntil(timeout: Double = 5, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { throw CancellationError() }
            usleep(1000)
        }
    }
}
