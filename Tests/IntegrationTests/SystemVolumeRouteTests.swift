import Foundation
import OSCTransport
import Testing

/// Issue 15, defect 8: `/system/volume` and `/system/gain` act on the route that is current when
/// the message arrives, and the change, the reply and `/duckrouter/volume` all name that one route.
///
/// A bundle with a time tag makes the race deterministic: the route is resolved when the bundle
/// arrives, another route becomes current before its time, and then it applies.
@Suite("/system/volume names the route it changed", .serialized)
struct SystemVolumeRouteTests {
    @Test("a timed /system/volume: the current route changes before it applies; reply, notification and change agree",
          arguments: [OSCMessage("/system/volume", [.float(0.5)]), OSCMessage("/system/gain", [.float(-18)])])
    func replyNamesTheChangedRoute(_ message: OSCMessage) throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(client, OSCMessage("/subscribe"))?.path == "/reply")
        #expect(try ask(client, OSCMessage("/route/select"))?.arguments == [.string("/route/select"), .string("speaker")])

        try client.send(packet: OSCCodec.encodeBundle([message], timetag: OSCTimetag(unixTime: Date().timeIntervalSince1970 + 1)))
        try client.send(OSCMessage("/route/select", [.string("headphones")]))
        var seen: [OSCMessage] = []
        let reply = try #require(try client.receive(timeout: 5, until: { $0.arguments.first == .string(message.path) },
                                                    seen: { seen.append($0) }))
        let selected = seen.contains { $0.path == "/reply" && $0.arguments == [.string("/route/select"), .string("headphones")] }
        try #require(selected, "the route changed before the bundle applied (else this test proves nothing): \(seen)")

        // The notification comes from the control queue when the change applies, the reply from
        // the OSC thread: either may come first.
        let notification = try #require(try seen.first { $0.path == "/duckrouter/volume" }
                                        ?? client.receive(timeout: 2) { $0.path == "/duckrouter/volume" })
        guard reply.path == "/reply", reply.arguments.count == 3, case let .string(replied) = reply.arguments[2],
              case let .string(notified) = notification.arguments.last else {
            Issue.record("unexpected answers: \(reply), \(notification)")
            return
        }
        #expect(notified == "speaker", "the route current when the bundle arrived changed")
        #expect(replied == notified, "the reply names \(replied), the notification \(notified)")
        // And the volumes say the same: the speaker's moved, the headphones' did not.
        let routes = try #require(try rig.settings()["routes"] as? [[String: Any]])
        let volume = { (name: String) in routes.first { $0["name"] as? String == name }?["volume"] as? Double }
        #expect(abs((volume("speaker") ?? 1) - 0.5) < 0.01, "\(routes)")
        #expect(volume("headphones") == 1)
    }
}
