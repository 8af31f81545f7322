import Foundation
import JackTestSupport
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

    @Test("a timed bundle that only the page's key allowed (another's app) is withdrawn when the key changes before its moment: -5, and it never applies")
    func rotationWithdrawsTimedBundles() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let key = try #require(rig.pageKey())
        let owner = try Self.synthOwnedByAnother(rig)
        let before = try rig.query("/app/synth/volume")?.arguments
        let person = try Self.webSocket(rig, key: key)
        let bundle = OSCCodec.encodeBundle([OSCMessage("/app/synth/volume", [.float(0.125)])],
                                           timetag: OSCTimetag(unixTime: Date().timeIntervalSince1970 + 3))
        _ = person.call("binary_hex", bundle.map { String(format: "%02x", $0) }.joined())
        #expect(try ask(owner, OSCMessage("/page/key/rotate", [.string(key)]))?.path == "/reply")
        #expect(person.until(["osc": "/error", "args": ["/app/synth/volume", -5]], timeout: 6).matched, "the bundle is refused, not applied")
        Thread.sleep(forTimeInterval: 0.5)   // past its moment: had it stayed, it would have applied by now
        #expect(try rig.query("/app/synth/volume")?.arguments == before)
    }
}
