import Foundation
import Policy
import Testing
@testable import RouterCore

@Suite("The timeline: what happened lately, in words")
struct TimelineTests {
    @Test("An app's states are events; its gain moving alone is not")
    func appStates() {
        let timeline = Timeline()
        timeline.record(.policy(.appState(app: "music", state: .active, gainDecibels: 0, reason: .osc)))
        timeline.record(.policy(.appState(app: "music", state: .ducked, gainDecibels: -14,
                                          heldBy: HeldBack(by: "nav", rule: "pair", route: "speaker"))))
        // A loudness duck's step, a fader: the same state, the same holder.
        timeline.record(.policy(.appState(app: "music", state: .ducked, gainDecibels: -16,
                                          heldBy: HeldBack(by: "nav", rule: "pair", route: "speaker"))))
        timeline.record(.policy(.systemVolume(route: "speaker", volume: 0.5)))
        timeline.record(.policy(.appState(app: "music", state: .active, gainDecibels: 0, reason: .osc)))
        let (events, newest) = timeline.events(after: 0)
        #expect(newest == 3)
        #expect(events.map(\.text) == ["music active (osc)", "music ducked by nav (pair)", "music active (osc)"])
        #expect(events[1].changed == ["state": "active → ducked", "gainDb": "-14.0", "by": "nav", "rule": "pair", "route": "speaker"])
        #expect(events[2].changed["state"] == "ducked → active")
        #expect(events.map(\.number) == [1, 2, 3])
    }

    @Test("Interruptions, routes and the JACK server, with their reasons, in order")
    func reasons() {
        let timeline = Timeline()
        timeline.record(.policy(.interruption(app: "music", phase: .began, shouldResume: false, reason: .default)))
        timeline.record(.policy(.interruption(app: "music", phase: .ended, shouldResume: true, reason: .default)))
        timeline.record(.policy(.route(reason: .oldDeviceUnavailable, route: "speaker", previous: "headphones")))
        timeline.record(.jack(connected: false, reason: "server shut down"))
        timeline.record(.jack(connected: true, reason: "reconnected after 1.2 s"))
        timeline.record(.xruns(total: 3, new: 2))
        timeline.record(.xruns(total: 4, new: 1))
        let events = timeline.events(after: 0).events
        #expect(events.map(\.kind) == ["interruption", "interruption", "route", "jack", "jack", "xrun"])
        #expect(events[1].text == "music: interruption ended, should resume")
        #expect(events[2].text == "route headphones → speaker (oldDeviceUnavailable)")
        #expect(events[2].changed == ["route": "headphones → speaker", "reason": "oldDeviceUnavailable"])
        #expect(events[3].changed["jack"] == "connected → disconnected")
        #expect(events[5].text == "2 xruns (3 since start)")
    }

    @Test("Apps by the thousand, each active and then removed (no inactive follows): what is kept of them stays bounded")
    func manyApps() {
        let timeline = Timeline(capacity: 4)
        for index in 0..<(3 * Timeline.appsKept) {
            timeline.record(.policy(.appState(app: "app\(index)", state: .active, gainDecibels: 0, reason: .osc)))
            #expect(timeline.appsRemembered <= Timeline.appsKept + 1)
        }
        #expect(timeline.events(after: 0).newest == 3 * Timeline.appsKept, "every one is still an event")
    }

    @Test("A ring: the last events, oldest first; a reader asks for what came after its last")
    func ring() {
        let timeline = Timeline(capacity: 4)
        for number in 1...10 { timeline.record(PolicyNotification.silentSwitch(number % 2 == 1).asNotification) }
        let (all, newest) = timeline.events(after: 0)
        #expect(newest == 10)
        #expect(all.map(\.number) == [7, 8, 9, 10])
        #expect(timeline.events(after: 8).events.map(\.number) == [9, 10])
        #expect(timeline.events(after: 10).events.isEmpty)
    }

    @Test("Xruns every second make one event in ten seconds, counting those between; those held back when they stop make one of their own once ten seconds have passed")
    func xruns() {
        let timeline = Timeline()
        let start = Date(timeIntervalSince1970: 1_000_000)
        for second in 0..<25 {
            timeline.record(.xruns(total: 2 * (second + 1), new: 2), at: start + Double(second))
            timeline.flushXruns(at: start + Double(second) + 0.5)
        }
        #expect(timeline.events(after: 0).events.map(\.text) == ["2 xruns (2 since start)", "20 xruns (22 since start)", "20 xruns (42 since start)"])
        // No more xruns: the 8 of the last four seconds are not lost.
        timeline.flushXruns(at: start + 29)
        #expect(timeline.events(after: 3).events.isEmpty, "not before ten seconds have passed since the last xrun event")
        timeline.flushXruns(at: start + 30)
        let last = timeline.events(after: 3).events
        #expect(last.map(\.text) == ["8 xruns (50 since start)"] && last.first?.time == start + 30)
        timeline.flushXruns(at: start + 60)
        #expect(timeline.events(after: 4).events.isEmpty, "nothing held: nothing more")
    }

    @Test("An app first seen inactive is no event, but its next state says what it was")
    func comesBack() {
        let timeline = Timeline()
        timeline.record(.policy(.appState(app: "nav", state: .inactive, gainDecibels: -.infinity)))
        timeline.record(.policy(.appState(app: "nav", state: .active, gainDecibels: 0, reason: .signal)))
        timeline.record(.policy(.appState(app: "nav", state: .inactive, gainDecibels: -.infinity)))
        timeline.record(.policy(.appState(app: "nav", state: .active, gainDecibels: 0, reason: .signal)))
        let events = timeline.events(after: 0).events
        #expect(events.map(\.changed["state"]) == ["inactive → active", "active → inactive", "inactive → active"])
        #expect(events[1].changed["gainDb"] == "-inf")
    }
}

private extension PolicyNotification {
    var asNotification: RouterNotification { .policy(self) }
}
