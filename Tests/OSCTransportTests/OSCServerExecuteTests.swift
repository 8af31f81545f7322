import Foundation
import OSCTransport
import Synchronization
import Testing

/// `OSCServer.execute` from other threads: work either runs on the server's thread or, once the
/// server has stopped, is reported as not run, so a caller waiting for it is never left waiting.
@Suite("OSCServer.execute and stop")
struct OSCServerExecuteTests {
    final class Outcome: Sendable {
        let ran = Atomic<Int>(0)
        let stopped = Atomic<Int>(0)
    }

    func server() throws -> OSCServer {
        var configuration = OSCServer.Configuration()
        configuration.port = 0
        return try OSCServer(configuration: configuration)
    }

    @Test("work handed in while it runs runs once; work handed in after stop is reported, never run")
    func afterStop() throws {
        let server = try server()
        server.start { _, _ in }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        server.execute({ outcome.ran.add(1, ordering: .relaxed); done.signal() },
                       ifStopped: { outcome.stopped.add(1, ordering: .relaxed); done.signal() })
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(outcome.ran.load(ordering: .relaxed) == 1 && outcome.stopped.load(ordering: .relaxed) == 0)
        server.stop()
        server.execute({ outcome.ran.add(1, ordering: .relaxed) }, ifStopped: { outcome.stopped.add(1, ordering: .relaxed) })
        #expect(outcome.ran.load(ordering: .relaxed) == 1 && outcome.stopped.load(ordering: .relaxed) == 1)
    }

    @Test("work queued but not yet run when the server stops is reported by stop")
    func queuedAtStop() throws {
        let server = try server()
        // Never started: the work stays queued until stop() abandons it.
        let outcome = Outcome()
        for _ in 0..<3 {
            server.execute({ outcome.ran.add(1, ordering: .relaxed) }, ifStopped: { outcome.stopped.add(1, ordering: .relaxed) })
        }
        #expect(outcome.stopped.load(ordering: .relaxed) == 0)
        server.stop()
        #expect(outcome.ran.load(ordering: .relaxed) == 0 && outcome.stopped.load(ordering: .relaxed) == 3)
    }
}
