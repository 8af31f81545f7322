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
        let id = server.openStream(from: address) { bytes, conflatable in
            seen.lock.withLock { seen.out.append((bytes, conflatable)) }
            return true
        }
        for k in 0..<50 { server.receive([UInt8(k), 1, 2], onStream: id) }
        server.closeStream(id)
        server.closeStream(id)
        #expect(closed.wait(timeout: .now() + 5) == .success)
        server.receive([7], onStream: id)   // after close: dropped
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
    }
}
