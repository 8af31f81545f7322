import Foundation
import Policy
import Testing

/// Why routes change (§5.9, §5.10; docs/POLICY.md, "Routes"), one row per reason and per case in
/// which a reason must not be sent. The fixture has two routes, `speaker` (current at start) and
/// `headphones`, both available; `dj` is a multiRoute deck.
let routeScenarios: [Scenario] = [
    // The current route: every app's but a multiRoute one's.
    Scenario(rule: "5.9", name: "headphones plugged in become the current route (newDeviceAvailable)",
             given: [.setRouteAvailable(route: "headphones", false)], when: .setRouteAvailable(route: "headphones", true),
             expect: [.notified(.route(reason: .newDeviceAvailable, route: "headphones", previous: "speaker"))]),
    Scenario(rule: "5.9", name: "selected headphones pulled: the speaker is current again (oldDeviceUnavailable)",
             given: [.selectRoute("headphones")], when: .setRouteAvailable(route: "headphones", false),
             expect: [.notified(.route(reason: .oldDeviceUnavailable, route: "speaker", previous: "headphones"))]),
    Scenario(rule: "5.9", name: "a person selects the headphones (override)",
             when: .selectRoute("headphones"),
             expect: [.notified(.route(reason: .override, route: "headphones", previous: "speaker"))]),
    Scenario(rule: "5.9", name: "private headphones pulled while music plays through them: music is interrupted (routeDisconnected)",
             given: [.activate(app: "music"), .selectRoute("headphones")], when: .setRouteAvailable(route: "headphones", false),
             expect: [.notified(.interruption(app: "music", phase: .began, shouldResume: false, reason: .routeDisconnected)),
                      .state("music", .interrupted)],
             privateRoutes: ["headphones"]),

    // noSuitableRouteForCategory: an app activates and no route can carry it.
    Scenario(rule: "5.9", name: "music activated while every route is gone is told no route can carry it, and is active for when one comes",
             given: [.setRouteAvailable(route: "speaker", false), .setRouteAvailable(route: "headphones", false)],
             when: .activate(app: "music"),
             expect: [.notified(.route(reason: .noSuitableRouteForCategory, route: "", previous: "", app: "music")),
                      .state("music", .active), .gain("music", 0)]),
    Scenario(rule: "5.9", name: "music activated with a route available hears nothing about routes",
             when: .activate(app: "music"), expect: [.noRouteNotification, .state("music", .active)]),
    Scenario(rule: "5.3", name: "a game the router resumes while every route is gone is told no route can carry it",
             given: [.activate(app: "game"), .outsideInterruptionBegan(source: "phone"),
                     .setRouteAvailable(route: "speaker", false), .setRouteAvailable(route: "headphones", false)],
             when: .outsideInterruptionEnded(source: "phone", shouldResume: true),
             expect: [.state("game", .active),
                      .notified(.route(reason: .noSuitableRouteForCategory, route: "", previous: "", app: "game"))]),
    Scenario(rule: "5.10", name: "a multiRoute deck whose channel map names only the headphones, activated while they are gone, is told no route can carry it",
             given: [.setChannelMap(app: "dj", [ChannelLink(appChannel: 1, route: "headphones", routeChannel: 1)]),
                     .setRouteAvailable(route: "headphones", false)],
             when: .activate(app: "dj"),
             expect: [.notified(.route(reason: .noSuitableRouteForCategory, route: "", previous: "", app: "dj"))]),
    Scenario(rule: "5.10", name: "a multiRoute deck activated with one route left plays there: no route notification",
             given: [.setRouteAvailable(route: "headphones", false)], when: .activate(app: "dj"),
             expect: [.noRouteNotification, .state("dj", .active)]),
    Scenario(rule: "5.8", name: "a recorder activated while every route is gone is not told: it records the input, which no output route carries",
             given: [.setRouteAvailable(route: "speaker", false), .setRouteAvailable(route: "headphones", false)],
             when: .activate(app: "recorder"),
             expect: [.noRouteNotification, .state("recorder", .active)]),

    // categoryChange: a category change moves the app from one set of routes to another.
    Scenario(rule: "5.10", name: "music changed to multiRoute moves from the current route to every available route",
             when: .setCategory(app: "music", category: .multiRoute, options: [.mixWithOthers], mode: .default),
             expect: [.notified(.route(reason: .categoryChange, route: "speaker,headphones", previous: "speaker", app: "music"))]),
    Scenario(rule: "5.10", name: "playing music re-registered as multiRoute moves too, and plays on",
             given: [.activate(app: "music")],
             when: .register(AppConfiguration(name: "music", category: .multiRoute, options: [.mixWithOthers])),
             expect: [.notified(.route(reason: .categoryChange, route: "speaker,headphones", previous: "speaker", app: "music")),
                      .state("music", .active)]),
    Scenario(rule: "5.10", name: "a multiRoute deck changed to playback moves to the current route",
             when: .setCategory(app: "dj", category: .playback, options: [], mode: .default),
             expect: [.notified(.route(reason: .categoryChange, route: "speaker", previous: "speaker,headphones", app: "dj"))]),
    Scenario(rule: "5.10", name: "a deck mapped to the headphones only, changed to playback, moves to the speaker",
             given: [.setChannelMap(app: "dj", [ChannelLink(appChannel: 1, route: "headphones", routeChannel: 1)])],
             when: .setCategory(app: "dj", category: .playback, options: [], mode: .default),
             expect: [.notified(.route(reason: .categoryChange, route: "speaker", previous: "headphones", app: "dj"))]),
    Scenario(rule: "5.10", name: "music changed to multiRoute while only the current route is available moves nowhere: no route notification",
             given: [.setRouteAvailable(route: "headphones", false)],
             when: .setCategory(app: "music", category: .multiRoute, options: [.mixWithOthers], mode: .default),
             expect: [.noRouteNotification]),
    Scenario(rule: "5.8", name: "music changed to record keeps the current route (a recorder plays there too): no route notification",
             when: .setCategory(app: "music", category: .record, options: [], mode: .default),
             expect: [.noRouteNotification]),
    Scenario(rule: "5.10", name: "a changed category that is refused moves nothing",
             when: .setCategory(app: "music", category: .multiRoute, options: [], mode: .spokenAudio),
             expect: [.refused(.badArgument)]),

    // Channel maps (§5.10): one link once; two app channels onto one route channel are a sum.
    Scenario(rule: "5.10", name: "two deck channels onto one speaker channel are a deliberate sum, accepted",
             when: .setChannelMap(app: "dj", [ChannelLink(appChannel: 1, route: "speaker", routeChannel: 1),
                                              ChannelLink(appChannel: 2, route: "speaker", routeChannel: 1)]),
             expect: [.effect(.channelMap(app: "dj", [ChannelLink(appChannel: 1, route: "speaker", routeChannel: 1),
                                                      ChannelLink(appChannel: 2, route: "speaker", routeChannel: 1)])),
                      .saves(true)]),
    Scenario(rule: "5.10", name: "a channel map that lists one link twice (it would play 6 dB louder) is refused",
             when: .setChannelMap(app: "dj", [ChannelLink(appChannel: 1, route: "speaker", routeChannel: 1),
                                              ChannelLink(appChannel: 2, route: "speaker", routeChannel: 2),
                                              ChannelLink(appChannel: 1, route: "speaker", routeChannel: 1)]),
             expect: [.refused(.badArgument)]),
]

/// Every reason the policy declares is one some rule sends, and docs/OSC.md says when.
@Suite("Notification reasons")
struct NotificationReasonTests {
    static let expected: [PolicyNotification] = (scenarios + routeScenarios).flatMap { scenario in
        scenario.expect.compactMap { if case let .notified(notification) = $0 { notification } else { nil } }
    }

    @Test("every route-change reason is sent by a rule of the table")
    func routeReasons() {
        let sent = Set(Self.expected.compactMap { if case let .route(reason, _, _, _) = $0 { reason.rawValue } else { nil } })
        #expect(sent.sorted() == RouteChangeReason.allCases.map(\.rawValue).sorted())
    }

    @Test("every interruption reason is sent by a rule of the table")
    func interruptionReasons() {
        let sent = Set(Self.expected.compactMap { if case let .interruption(_, _, _, reason) = $0 { reason.rawValue } else { nil } })
        #expect(sent.sorted() == InterruptionReason.allCases.map(\.rawValue).sorted())
    }

    @Test("docs/OSC.md names every reason in its notification's row")
    func documented() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/OSC.md").standardizedFileURL
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        func row(_ path: String) -> String { lines.first { $0.hasPrefix("| `\(path)`") }.map(String.init) ?? "" }
        for reason in RouteChangeReason.allCases {
            #expect(row("/duckrouter/route").contains("`\(reason.rawValue)`"), "\(reason)")
        }
        for reason in InterruptionReason.allCases {
            #expect(row("/duckrouter/interruption").contains("`\(reason.rawValue)`"), "\(reason)")
        }
    }
}
