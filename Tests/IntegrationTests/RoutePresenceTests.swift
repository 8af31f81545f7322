import Dispatch
import Foundation
import JackRig
@testable import RouterCore
import SessionStore
import Testing

/// Devices that come while the router cannot hear of them yet: JACK updates the graph before it
/// tells clients (on a thread of its own), and tells an inactive client nothing at all.
@Suite("Route presence: devices JACK has not told the router of", .serialized)
struct RoutePresenceTests {
    static func session(_ devices: [(route: String, client: String)]) -> Session {
        var session = Session()
        session.routes = devices.map { Session.Route(name: $0.route, ports: ["\($0.client):in_1", "\($0.client):in_2"]) }
        session.apps = [Session.App(name: "music", category: .playback)]
        return session
    }

    static func device(_ name: String, on server: JackServer) throws -> TestClient {
        try TestClient(name: name, server: server.name, inputs: ["in_1", "in_2"])
    }

    /// Holds the control queue until `release`.
    final class Hold: @unchecked Sendable {
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        /// Whether the hold began while the first device was still settling.
        var beganInTime = false
        func release() { gate.signal() }
    }

    @Test("a device plugged after another that is still settling, whose ports are in the graph before JACK's word of them reaches the router, comes after it: last in wins by the order they came")
    func laterDeviceWinsWhileTheFirstSettles() throws {
        // 1,024 frames: a device settles 3 periods (64 ms), time for the test to hold the queue.
        let server = try JackServer(period: 1024)
        defer { server.stop() }
        // hdmi before usb in the file: a look at every route at once meets hdmi first.
        let configuration = Router.Configuration(session: Self.session([("speaker", "spkdev"), ("hdmi", "hdmidev"), ("usb", "usbdev")]),
                                                 server: server.name)
        let speaker = try Self.device("spkdev", on: server)
        defer { speaker.close() }
        let router = try Router(configuration: configuration)
        defer { router.stop() }
        try waitFor("the speaker route") { router.policyState.availableRoutes == ["speaker"] }

        let usb = try Self.device("usbdev", on: server)
        defer { usb.close() }
        let index = try #require(router.queue.sync { router.inventory.routeIndex("usb") })
        // usb's registration is handled: it settles (3 periods, at least 30 ms)...
        var settlesAt: UInt64?
        try waitFor("usb to settle", timeout: 5) {
            settlesAt = router.queue.sync { router.inventory.routes[index].settlesAt }
            return settlesAt != nil || router.policyState.availableRoutes.contains("usb")
        }
        // ...and the control queue is held until its look again is due, so that look waits behind
        // the hold and hdmi's word behind it.
        let hold = Hold()
        let due = settlesAt
        router.queue.async {
            hold.beganInTime = due.map { DispatchTime.now().uptimeNanoseconds < $0 } ?? false
            hold.entered.signal()
            hold.gate.wait()
        }
        #expect(hold.entered.wait(timeout: .now() + 5) == .success)
        defer { hold.release() }
        try #require(hold.beganInTime, "the machine held the test past usb's settling: nothing to tell")
        let left = Int64(bitPattern: settlesAt! &- DispatchTime.now().uptimeNanoseconds)
        Thread.sleep(forTimeInterval: Double(max(left, 0)) / 1e9 + 0.05)
        let hdmi = try Self.device("hdmidev", on: server)
        defer { hdmi.close() }
        hold.release()
        try waitFor("both devices' routes", timeout: 5) { Set(router.policyState.availableRoutes) == ["speaker", "hdmi", "usb"] }
        #expect(router.policyState.currentRoute == "hdmi", "hdmi came last")
    }

    @Test("a device that comes as the router joins the server, after its look at the graph and before its client is active (JACK tells an inactive client of no port), is found and its route made available")
    func deviceWhileJoining() throws {
        let server = try JackServer(period: 256)
        defer { server.stop() }
        let configuration = Router.Configuration(session: Self.session([("speaker", "spkdev"), ("usb", "usbdev")]), server: server.name)
        let router = try Router(configuration: configuration)
        defer { router.stop() }
        final class Box: @unchecked Sendable { var device: TestClient? }
        let box = Box()
        defer { box.device?.close() }
        router.queue.sync {
            router.willActivate = {
                // Once: a join that fails and is tried again must not make a second device.
                if box.device == nil { box.device = try? Self.device("usbdev", on: server) }
            }
        }
        // The router joins again: the device comes in the window.
        let link = router.queue.sync { router.link.currentEpoch }
        server.kill9()
        try waitFor("the router to see the server gone", timeout: 10) { router.queue.sync { router.link.client == nil } }
        _ = try server.restart()
        try waitFor("the router to join again", timeout: 15) { router.queue.sync { router.link.client != nil && router.link.currentEpoch != link } }
        #expect(box.device != nil, "the device came as the router joined")
        try waitFor("the usb route", timeout: 3) { router.policyState.availableRoutes.contains("usb") }
    }
}
