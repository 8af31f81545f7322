import Foundation
@testable import HTTPControl
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// The HTTP listener's last resort at the descriptor limit (docs/HTTP.md, "Limits"): the daemon
/// never gets there (DescriptorBudget), so the pause is tried on a listener of the test's own,
/// with the failed accept handed to it as NIO hands it over.
@Suite("Accepts paused when the process is out of descriptors")
struct AcceptPauseTests {
    @Test("an accept that failed for want of descriptors stops accepting for the pause; the peer that waited in the backlog is accepted after it")
    func pausesThenAccepts() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let accepted = Mutex<Date?>(nil)
        let listener = try ServerBootstrap(group: group)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptPause(pause: .milliseconds(500), logger: Logger(label: "test")),
                                                                   position: .first)
                }
            }
            .childChannelInitializer { channel in
                accepted.withLock { $0 = $0 ?? Date() }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        defer { try? listener.close().wait() }
        let port = try #require(listener.localAddress?.port)

        // Accept fails as the kernel fails it at the limit; then a peer comes.
        let failed = Date()
        try listener.eventLoop.submit { listener.pipeline.fireErrorCaught(IOError(errnoCode: EMFILE, reason: "accept")) }.wait()
        let peer = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(peer) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(peer, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0, "the peer waits in the listen backlog")

        let deadline = Date().addingTimeInterval(10)
        while accepted.withLock({ $0 }) == nil, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let at = try #require(accepted.withLock { $0 }, "the peer was never accepted after the pause")
        let delay = at.timeIntervalSince(failed)
        #expect(delay >= 0.45, "accepted \(delay) s after the failed accept: the listener did not pause")
    }
}
