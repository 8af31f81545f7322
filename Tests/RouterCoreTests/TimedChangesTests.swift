import Policy
@testable import RouterCore
import Testing

/// The changes that wait for their moment: soonest first, withdrawn with the apps they act on,
/// and no more than `capacity` at once.
@Suite("Timed changes waiting for their moment")
struct TimedChangesTests {
    static func entry(_ events: [PolicyEvent], at frame: UInt32) -> TimedChanges.Entry {
        TimedChanges.Entry(changes: events.map { Router.Change($0) }, frame: frame, completion: { _ in })
    }

    @Test("an entry knows the apps its changes act on; taking those acting on an app leaves the rest in order")
    func takeActingOnAnApp() {
        var timed = TimedChanges()
        timed.insert(Self.entry([.setAppVolume(app: "music", .position(0.1)), .setSilentSwitch(true)], at: 300))
        timed.insert(Self.entry([.setSystemVolume(route: "speaker", .position(0.5))], at: 100))
        timed.insert(Self.entry([.unregister(app: "nav"), .activate(app: "music")], at: 200))
        #expect(timed.take(actingOn: "music").map(\.frame) == [200, 300])
        #expect(timed.take(actingOn: "music").isEmpty)
        #expect(timed.takeDue(now: 1000, lead: 0).map { $0.apps } == [[]], "a change that names no app stays until its moment")
    }

    @Test("full at capacity")
    func capacity() {
        var timed = TimedChanges()
        for k in 0..<TimedChanges.capacity {
            #expect(!timed.isFull)
            timed.insert(Self.entry([.setSilentSwitch(k % 2 == 0)], at: UInt32(k)))
        }
        #expect(timed.isFull)
        _ = timed.takeDue(now: 0, lead: 0)
        #expect(!timed.isFull)
    }
}
