import Dispatch
import Foundation
import JackHost
import JackRig
import Testing

/// The latency callback sets port latencies inside JACK's callback, as JACK's API asks. On
/// PipeWire's libjack (0.3.65) that call runs the loop's pending work in place, and pending work
/// that calls a callback waits for the lock its own thread holds: the client's notification thread
/// hung for good, and every later request of the client (a port registered) with it.
@Suite("JackHost: latency callback", .serialized)
struct LatencyCallbackTests {
    @Test("latencies recomputed again and again, each time with new values, never hang the client: a port still registers after")
    func recomputeBurst() throws {
        let server = try JackServer(period: 256)
        defer { server.stop() }
        let client = try JackClient(name: "hosttest", server: server.name, reportsLatency: true, events: { _ in })
        let input = try client.registerAudioPort("in", direction: .input)
        let late = try client.registerAudioPort("late", direction: .output)
        client.setLatencies(inputs: [input], outputs: [(late, 100)])
        try client.activate()
        let done = DispatchSemaphore(value: 0)
        let work = Handoff(client)
        Thread.detachNewThread {
            for added in 1...200 {
                work.client.setLatencies(inputs: [input], outputs: [(late, UInt32(100 + added))], recompute: true)
            }
            _ = try? work.client.registerAudioPort("after", direction: .output)
            done.signal()
        }
        let finished = done.wait(timeout: .now() + 20) == .success
        #expect(finished, "the client hung: a port could not register after 200 latency recomputes")
        guard finished else { return }   // a hung client cannot be closed
        #expect(client.portExists("hosttest:after"))
        // On PipeWire the recomputes are queued: the last one must have run (and not hung the
        // queue) before the client closes. JACK2 works latencies out along connections only: a
        // feed for the input there, whose own latency is what the output adds its 300 frames to.
        var upstream: ClosedRange<UInt32> = 0...0
        if JackServer.Implementation.current == .jackd {
            try client.connect("system:capture_1", to: "hosttest:in")
            upstream = try #require(client.captureLatency(of: "system:capture_1"))
        }
        do {
            try waitFor("the last latency set (300 frames) to reach the graph", timeout: 10) {
                client.captureLatency(of: "hosttest:late") == upstream.lowerBound...(upstream.upperBound + 300)
            }
        } catch {
            // A hung queue: closing (here or in deinit) would wait for it for good.
            _ = Unmanaged.passRetained(client)
            Issue.record("\(error): \(String(describing: client.captureLatency(of: "hosttest:late")))")
            return
        }
        client.close()
    }

    @Test("the ranges the callback works out reach the graph (on PipeWire set just after it returns): an output N frames late widens its capture latency by N")
    func rangesReachTheGraph() throws {
        let server = try JackServer(period: 256)
        defer { server.stop() }
        let source = try JackClient(name: "source", server: server.name)
        defer { source.close() }
        _ = try source.registerAudioPort("out", direction: .output)
        try source.activate()
        let client = try JackClient(name: "hosttest", server: server.name, reportsLatency: true, events: { _ in })
        defer { client.close() }
        let input = try client.registerAudioPort("in", direction: .input)
        let late = try client.registerAudioPort("late", direction: .output)
        client.setLatencies(inputs: [input], outputs: [(late, 300)])
        try client.activate()
        // jackd's capture port has a latency of its own; PipeWire without a session manager has
        // no system ports, so there the source is a client's.
        let feed = JackServer.Implementation.current == .jackd ? "system:capture_1" : "source:out"
        try client.connect(feed, to: "hosttest:in")
        let upstream = try #require(client.captureLatency(of: feed))
        try waitFor("the latency with 300 frames added") {
            client.captureLatency(of: "hosttest:late") == upstream.lowerBound...(upstream.upperBound + 300)
        }
        client.setLatencies(inputs: [input], outputs: [(late, 600)], recompute: true)
        try waitFor("the latency with 600 frames added") {
            client.captureLatency(of: "hosttest:late") == upstream.lowerBound...(upstream.upperBound + 600)
        }
    }
}

/// Carries the client to the thread that works it while the test thread only waits.
private final class Handoff: @unchecked Sendable {
    let client: JackClient
    init(_ client: JackClient) { self.client = client }
}
