import Foundation
import JackRig
import OSCTransport
import Testing

/// `/page/key/rotate` writes the new key off the OSC server's thread and answers once it is kept.
extension PageKeyTests {
    @Test("a new key that cannot be kept is answered -1 and the old key stays in force: its WebSocket keeps a person's rights")
    func rotationUnkept() throws {
        let rig = try OSCRig(http: true)
        defer {
            try? FileManager.default.removeItem(at: rig.pageKeyFile)
            rig.close()
        }
        let key = try #require(rig.pageKey())
        let person = try Self.webSocket(rig, key: key)
        // A folder where the file was: the new key cannot be renamed over it (not even by root).
        try FileManager.default.removeItem(at: rig.pageKeyFile)
        try FileManager.default.createDirectory(at: rig.pageKeyFile.appendingPathComponent("held"), withIntermediateDirectories: true)
        let refused = try rig.query("/page/key/rotate", [.string(key)])
        #expect(refused?.path == "/error" && refused?.arguments.dropFirst().first == .int32(-1), "\(String(describing: refused))")
        person.osc("/rights")
        #expect(person.until(["osc": "/reply", "args": ["/rights", "admin", "key"]]).matched, "the old key still grants")
        #expect(try rig.query("/ping")?.path == "/reply")
    }

    @Test("a timed bundle that only the page's key allowed (another's app) is withdrawn when the key changes before its moment: -5, and it never applies; also once the WebSocket that sent it has closed",
          arguments: [false, true])
    func rotationWithdrawsTimedBundles(closedFirst: Bool) throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let key = try #require(rig.pageKey())
        let owner = try Self.synthOwnedByAnother(rig)
        let before = try rig.query("/app/synth/volume")?.arguments
        let person = try Self.webSocket(rig, key: key)
        let moment = Date().addingTimeInterval(3)
        Self.scheduleSynthVolume(0.125, at: moment, on: person)
        if closedFirst { _ = person.call("close") }
        #expect(try ask(owner, OSCMessage("/page/key/rotate", [.string(key)]))?.path == "/reply")
        if !closedFirst {
            #expect(person.until(["osc": "/error", "args": ["/app/synth/volume", -5]], timeout: 6).matched, "the bundle is refused, not applied")
        }
        Thread.sleep(until: moment.addingTimeInterval(0.5))   // past its moment: had it stayed, it would have applied
        #expect(try rig.query("/app/synth/volume")?.arguments == before, "the bundle applied after the key changed (WebSocket closed first: \(closedFirst))")
    }

    /// Sends a bundle setting synth's volume at `moment` over `person`'s WebSocket, and waits for
    /// the answer to a `/ping` sent after it: the server takes a stream's packets in order, so the
    /// bundle is scheduled by then (a rotation after it cannot overtake it).
    static func scheduleSynthVolume(_ volume: Float, at moment: Date, on person: OSCQueryClient) {
        let bundle = OSCCodec.encodeBundle([OSCMessage("/app/synth/volume", [.float(volume)])],
                                           timetag: OSCTimetag(unixTime: moment.timeIntervalSince1970))
        _ = person.call("binary_hex", bundle.map { String(format: "%02x", $0) }.joined())
        person.osc("/ping")
        #expect(person.until(["osc": "/reply", "args": ["/ping"]]).matched, "the bundle was taken before the rotation")
    }
}
