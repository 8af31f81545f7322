import Foundation
import JackRig
import OSCTransport
import Testing

/// OSCQuery clients no one here wrote: python-oscquery (PyPI), run against the daemon.
@Suite("OSCQuery client libraries", .serialized)
struct OSCQueryLibraryTests {
    /// Every node's FULL_PATH in a namespace answer, the root's included.
    static func paths(_ node: [String: Any]) -> [String] {
        let children = (node["CONTENTS"] as? [String: [String: Any]] ?? [:]).values.flatMap(paths)
        return (node["FULL_PATH"] as? String).map { [$0] + children } ?? children
    }

    @Test("python-oscquery 0.4.0 parses the whole namespace (every node the daemon serves, write-only methods and containers included), reads HOST_INFO and one value")
    func pythonOSCQuery() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        // A value to read back, and one app whose meter has channels to show.
        #expect(try rig.query("/app/music/volume", [.float(0.5)])?.path == "/reply")
        let served = Self.paths(try HTTPClient.get(port: rig.httpPort, "/").json()).sorted()
        #expect(served.count > 50 && served.contains("/app/register") && served.contains("/system/interruption/begin"))

        let script = try JSONLineScript("python_oscquery_walk.py", ["127.0.0.1", "\(rig.httpPort)"])
        let result = try #require(script.readLine(timeout: 60), "the script printed nothing")
        #expect(result["error"] == nil, "python-oscquery refused the namespace: \(result["error"] ?? "")")
        #expect(result["paths"] as? [String] == served, "every node the daemon serves, parsed")
        let host = try #require(result["host"] as? [String: Any])
        #expect(host["name"] as? String == "duckrouter" && host["osc_port"] as? Int == Int(rig.port) && host["osc_transport"] as? String == "UDP")
        let volume = try #require(result["volume"] as? [String: Any])
        #expect(volume["value"] as? [Double] == [0.5] && volume["access"] as? Int == 3)
    }
}
