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
}
