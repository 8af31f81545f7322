import Foundation
@testable import OSCTransport
import Testing

@Suite("OSCClient")
struct OSCClientTests {
    /// A client busy elsewhere (ducksoak waiting on /state over TCP, duckctl printing) must find
    /// every answer when it reads again: the kernel drops UDP datagrams that arrive while the
    /// socket's receive buffer is full, and the default buffer holds about 200 small ones.
    @Test("a UDP client holds 1,000 answers that arrived while it was not reading")
    func holdsABacklog() throws {
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: 9))
        let sender = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: client.localPort))
        // As many as the kernel lets a socket keep (net.core.rmem_max caps what is asked for;
        // 2 kB a datagram is more than a small one costs): 1,000 where rmem_max is 2 MB or more.
        let rmemMax = (try? String(contentsOfFile: "/proc/sys/net/core/rmem_max", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? Int(udpReceiveBuffer)
        let count = min(1000, 2 * min(Int(udpReceiveBuffer), rmemMax) / 2048)
        #expect(client.receiveBufferBytes >= 2 * min(Int(udpReceiveBuffer), rmemMax), "the buffer asked for, as far as rmem_max allows")
        for k in 0..<count {
            try sender.send(OSCMessage("/reply", [.string("/app/music/volume"), .int32(Int32(k))]))
        }
        var received: [Int32] = []
        while let packet = try client.receive(timeout: received.count < count ? 2 : 0) {
            for message in OSCClient.messages(in: packet) {
                if case let .int32(k)? = message.arguments.last { received.append(k) }
            }
            if received.count == count { break }
        }
        #expect(received == (0..<count).map { Int32($0) })
    }
}
