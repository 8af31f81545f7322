import Dispatch
import Foundation
import JackRig
@testable import OSCControl
@testable import OSCTransport
import Testing

/// Peers over TCP that go away while something of theirs is under way: a subscription a
/// notification goes out to, a registration in a bundle timed for later.
@Suite("OSC peers over TCP that go away", .serialized)
struct SubscriberResetTests {
    final class Box: @unchecked Sendable { var value: Int? }

    /// Runs `work` on the OSC server's thread and waits for it.
    static func onServerThread(_ control: ControlServer, _ work: @escaping @Sendable () -> Int) -> Int? {
        let box = Box(), done = DispatchSemaphore(value: 0)
        control.server.execute { box.value = work(); done.signal() }
        return done.wait(timeout: .now() + 5) == .success ? box.value : nil
    }

    /// An OSC control server on the rig's router, on a port of its own, started.
    static func control(on rig: Rig) throws -> ControlServer {
        var configuration = ControlServer.Configuration()
        configuration.port = try OSCPorts.free()
        let control = try ControlServer(configuration: configuration, router: try #require(rig.router), relay: NotificationRelay())
        control.start()
        return control
    }

    @Test("a TCP subscriber whose connection was reset when a notification goes out to it is dropped, and the server goes on (the failed send closed the connection, whose close took the subscriber out of the list being walked: an abort)")
    func resetAsANotificationGoesOut() throws {
        let rig = try Rig()
        defer { rig.close() }
        let control = try Self.control(on: rig)
        defer { control.stop() }

        let fd = Sockets.tcp(from: "127.0.0.1", toPort: control.port, wait: true)
        try #require(fd >= 0)
        let packet = OSCCodec.encode(OSCMessage("/subscribe"))
        #expect(Sockets.write(fd, OSCCodec.lengthPrefixed(packet)))
        // Its reply says it is subscribed.
        let reply = Sockets.read(fd, until: { String(decoding: $0, as: UTF8.self).contains("/subscribe") })
        #expect(String(decoding: reply, as: UTF8.self).contains("/reply"))
        #expect(Self.onServerThread(control) { control.subscribers.count } == 1)

        // The server thread is held; the subscriber resets its connection (RST); the notification
        // goes out before the thread looks at its sockets again.
        let reset = DispatchSemaphore(value: 0), delivered = DispatchSemaphore(value: 0)
        control.server.execute {
            reset.wait()
            usleep(50_000)   // the RST reaches the server's end of the socket
            control.deliver(.xruns(total: 1, new: 1))
            delivered.signal()
        }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
        reset.signal()
        #expect(delivered.wait(timeout: .now() + 5) == .success)
        #expect(Self.onServerThread(control) { control.subscribers.count } == 0, "the subscriber whose connection went is dropped")
        // And the server answers the next peer.
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: control.port))
        #expect(try ask(client, OSCMessage("/subscribe"))?.path == "/reply")
    }

    @Test("an app registered by a time-tagged bundle from a TCP peer that went away before the bundle applied is not left owned by the gone connection: another peer may control it, as after any owner's going")
    func registrationAfterThePeerWent() throws {
        let rig = try Rig()
        defer { rig.close() }
        let control = try Self.control(on: rig)
        defer { control.stop() }
        let router = try #require(rig.router)

        let fd = Sockets.tcp(from: "127.0.0.1", toPort: control.port, wait: true)
        try #require(fd >= 0)
        let register = OSCMessage("/app/register", [.string("late"), .string("playback"), .string("mixWithOthers"), .string("default"), .int32(2)])
        let packet = OSCCodec.encodeBundle([register], timetag: OSCTimetag(unixTime: Date().timeIntervalSince1970 + 0.4))
        #expect(Sockets.write(fd, OSCCodec.lengthPrefixed(packet)))
        // Gone before the bundle's time: the server sees the close first.
        close(fd)
        try waitFor("the close to reach the server") { Self.onServerThread(control) { control.server.connections.count } == 0 }
        try waitFor("the bundle to apply", timeout: 5) { router.policyState.apps.contains { $0.name == "late" } }
        #expect(Self.onServerThread(control) { control.owners["late"] == nil ? 0 : 1 } == 0, "no owner on a gone connection")
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: control.port))
        #expect(try ask(client, OSCMessage("/app/late/volume", [.float(0.5)]))?.path == "/reply")
    }
}
