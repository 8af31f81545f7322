import Foundation
import OSCTransport
import Testing

/// Timed bundles are allowed when they arrive and applied at their moment (docs/OSC.md, "Bundles"):
/// one that acts on an app is withdrawn when the app changes owner or goes before that moment, so
/// a change allowed on one app never lands on another that took its name.
@Suite("Timed changes and ownership", .serialized)
struct TimedOwnershipTests {
    /// The app's volume as `/app/<app>/volume` answers it.
    static func volume(_ rig: OSCRig, _ app: String) throws -> Float? {
        guard case let .float(value)? = try rig.query("/app/\(app)/volume")?.arguments.last else { return nil }
        return value
    }

    static func bundle(_ message: OSCMessage, in seconds: Double) -> [UInt8] {
        OSCCodec.encodeBundle([message], timetag: OSCTimetag(unixTime: Date().timeIntervalSince1970 + seconds))
    }

    @Test("a change one peer timed on an app with no owner is withdrawn when another registers the app: -5 to the first, the volume untouched")
    func withdrawnWhenTheAppGetsAnOwner() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let before = try #require(try Self.volume(rig, "music"), "music's volume")
        let scheduler = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        try scheduler.send(packet: Self.bundle(OSCMessage("/app/music/volume", [.float(0.1)]), in: 1.5))
        // The session's music has no owner: a peer registering it takes it.
        let owner = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(owner, OSCMessage("/app/register", [.string("music"), .string("playback")]))?.path == "/reply")

        let answer = try scheduler.receive(timeout: 4) { $0.arguments.first == .string("/app/music/volume") }
        #expect(answer?.path == "/error" && answer?.arguments.dropFirst().first == .int32(-5), "\(String(describing: answer))")
        #expect(try Self.volume(rig, "music") == before, "the timed change never applied")
    }

    @Test("a change timed on an app is withdrawn when the app is removed: -3 to its sender, and the app registered again under that name by another peer has its own volume")
    func withdrawnWhenTheAppGoes() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let first = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(first, OSCMessage("/app/register", [.string("synth"), .string("ambient")]))?.path == "/reply")
        try first.send(packet: Self.bundle(OSCMessage("/app/synth/volume", [.float(0.1)]), in: 1.5))
        #expect(try ask(first, OSCMessage("/app/synth/unregister"))?.path == "/reply")
        // Another synth, another peer's, before the change's moment.
        let second = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(second, OSCMessage("/app/register", [.string("synth"), .string("ambient")]))?.path == "/reply")

        let answer = try first.receive(timeout: 4) { $0.arguments.first == .string("/app/synth/volume") }
        #expect(answer?.path == "/error" && answer?.arguments.dropFirst().first == .int32(-3), "\(String(describing: answer))")
        // That /error was the withdrawal: nothing is left to apply to the new synth.
        #expect(try Self.volume(rig, "synth") != 0.1)
    }
}
