import Dispatch
import Foundation
import JackRig
@testable import RouterCore
import Testing

/// `JackLink`'s clients under a real server: every close happens off the control queue, so a
/// server that does not answer never holds it. (jackd's close waits for the frozen server, which
/// is what the test needs to tell; PipeWire's libjack closes without waiting, so there it passes
/// either way.)
@Suite("JackLink: closing clients off the control queue", .serialized)
struct JackLinkTests {
    /// Counts the looks `stillWanted` takes (only on the control queue).
    final class Looks: @unchecked Sendable { var count = 0 }

    @Test("a client the connector opened that is no longer wanted by the time it is handed over is closed off the control queue: a frozen server does not hold the queue")
    func unwantedClientClosedOffQueue() throws {
        let server = try JackServer(period: 256)
        defer { server.stop() }
        let queue = DispatchQueue(label: "test.control")
        let link = JackLink(parameters: .init(clientName: "linktest", server: server.name, reportsLatency: false, netManager: nil,
                                              reconnectDelays: (0.01, 0.01)), queue: queue)
        let looks = Looks()
        let frozen = DispatchSemaphore(value: 0)
        queue.sync {
            link.scheduleReconnect(events: { _, _ in }, stillWanted: {
                looks.count += 1
                guard looks.count == 2 else { return true }
                // The second look comes once the client is open: it is no longer wanted, and the
                // server stops answering before it is closed.
                server.suspend()
                frozen.signal()
                return false
            }, completion: { _ in Issue.record("an unwanted client was handed over") })
        }
        #expect(frozen.wait(timeout: .now() + 10) == .success, "the connector never opened a client")
        defer { server.resume() }
        let answered = DispatchSemaphore(value: 0)
        queue.async { answered.signal() }
        #expect(answered.wait(timeout: .now() + 2) == .success, "the control queue is held by the unwanted client's close")
        server.resume()
        // Once the server goes on the close returns, and only then is the next client opened.
        let reopened = DispatchSemaphore(value: 0)
        queue.sync {
            link.scheduleReconnect(events: { _, _ in }, stillWanted: { true }, completion: { outcome in
                if case let .success(opened) = outcome {
                    link.adopt(opened.client, epoch: opened.epoch)
                    link.drop()
                }
                reopened.signal()
            })
        }
        #expect(reopened.wait(timeout: .now() + 10) == .success, "no client opened after the server went on")
    }
}
