import Foundation
@testable import OSCTransport
import Testing

/// The OSC server's ticks: at the time their owner wants (meters at 20 Hz wake the thread 20 times
/// a second, not at every 10 ms tick of the grid), on the grid, never twice in one tick.
@Suite("OSCServer ticks")
struct OSCServerTickTests {
    @Test("a wanted time becomes the first tick of the grid at or after it, and one after the last tick")
    func tickForWanted() {
        #expect(OSCServer.tick(for: 100.05, after: 0, every: 10) == 100_050, "on the grid")
        #expect(OSCServer.tick(for: 100.051, after: 0, every: 10) == 100_060)
        #expect(OSCServer.tick(for: 1_795_500_000.15, after: 0, every: 10) == 1_795_500_000_150, "a Double's last bit")
        #expect(OSCServer.tick(for: 7.0 + 1.0 / 15, after: 0, every: 10) == 7_070, "a rate off the grid")
        #expect(OSCServer.tick(for: 100.0504, after: 0, every: 10) == 100_060, "just after a grid point: the next one")
        #expect(OSCServer.tick(for: 2e13, after: 100_050, every: 10) > 1 << 60, "a time beyond any clock: never")
        #expect(OSCServer.tick(for: 100.05, after: 100_050, every: 10) == 100_060, "not twice in one tick")
        #expect(OSCServer.tick(for: 0, after: 100_050, every: 10) == 100_060, "now: the next tick")
    }

    /// What the server thread's callbacks share with the test's thread.
    final class Ticks: @unchecked Sendable {
        // @unchecked: under `lock`.
        private let lock = NSLock()
        private var times: [(at: Double, due: Double)] = []
        private var wanted = 0.0

        /// Every 50 ms of the clock, as a 20 Hz meter subscriber is due.
        func tick() {
            let now = OSCServer.clockSeconds()
            lock.withLock {
                times.append((now, wanted))
                wanted = ((now * 20).rounded(.down) + 1) / 20
            }
        }

        var next: Double { lock.withLock { wanted } }
        var all: [(at: Double, due: Double)] { lock.withLock { times } }
    }

    @Test("a timer due every 50 ms is ticked every 50 ms, not at every tick of the 10 ms grid")
    func ticksWhenDue() throws {
        var configuration = OSCServer.Configuration()
        configuration.port = 0
        let server = try OSCServer(configuration: configuration)
        let ticks = Ticks()
        server.start(tickMilliseconds: 10, onTick: { ticks.tick() }, nextTickWanted: { ticks.next }) { _, _ in }
        defer { server.stop() }
        let deadline = Date() + 10
        while ticks.all.count < 8 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        let times = ticks.all
        #expect(times.count >= 8)
        // Late on a loaded machine, never early (a ms of slack for the clocks' rounding): with a
        // tick at every 10 ms, four in five came 10 to 40 ms before they were due.
        let early = times.filter { $0.at < $0.due - 0.001 }.map { ($0.due - $0.at) * 1000 }
        #expect(early.isEmpty, "ticks early by (ms): \(early)")
    }
}
