import Foundation
import JackRig
import Testing

/// Issue 17: zeroconf. The router's OSC and OSCQuery services as avahi-browse sees them, with an
/// avahi daemon of the test's own (Resources/zeroconf.sh: a network and a mount namespace, a
/// private D-Bus system bus); and the router without any avahi daemon, and bound to loopback.
@Suite("Zeroconf", .serialized)
struct ZeroconfTests {
    static var canRunAvahi: Bool {
        getuid() == 0 && ["/usr/bin/unshare", "/usr/sbin/avahi-daemon", "/usr/bin/avahi-browse", "/usr/bin/dbus-daemon", "/usr/sbin/ip"]
            .allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test("advertised as _oscjson._tcp on the HTTP port and _osc._udp/_osc._tcp on the OSC port; avahi stopping is noticed and its return re-advertises; a stopped router leaves nothing behind",
          .enabled(if: ZeroconfTests.canRunAvahi, "needs root, unshare, ip, dbus-daemon, avahi-daemon and avahi-browse (make test installs them)"))
    func advertised() throws {
        let server = try JackServer()
        defer { server.stop() }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-zeroconf-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let oscPort = try OSCPorts.free()
        let httpPort = try OSCPorts.free()
        let session = work.appendingPathComponent("session.json")
        try """
            {"routes": [{"name": "speaker", "ports": ["system:playback_1", "system:playback_2"]}],
             "apps": [{"name": "music", "category": "playback"}],
             "osc": {"port": \(oscPort), "bind": "0.0.0.0", "allow": ["127.0.0.1/32", "10.77.0.0/24"]},
             "http": {"port": \(httpPort)}}
            """.write(to: session, atomically: true, encoding: .utf8)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources/zeroconf.sh")
        let text = try Tool.output("/usr/bin/unshare", ["-n", "-m", "bash", script.path, work.path, DaemonTests.binary.path,
                                                                  server.name, session.path]).text
        let lines = text.split(separator: "\n").map(String.init)
        func records(_ tag: String) -> [String] { lines.filter { $0.hasPrefix(tag + " ") } }
        let expected = ["_oscjson._tcp;local;duckrig.local;10.77.0.1;\(httpPort);",
                        "_osc._udp;local;duckrig.local;10.77.0.1;\(oscPort);",
                        "_osc._tcp;local;duckrig.local;10.77.0.1;\(oscPort);"]
        for tag in ["browse1", "browse2"] {
            for service in expected {
                #expect(records(tag).contains { $0.contains(";duckrouter;" + service) }, "\(tag) \(service):\n\(text)")
            }
        }
        let gone = lines.first { $0.hasPrefix("gone ") }.flatMap { Double($0.dropFirst(5)) }
        #expect(gone != nil && gone! < 5, "avahi stopping noticed: \(String(describing: gone))\n\(text)")
        #expect(records("browse3").isEmpty, "nothing left once the router stopped:\n\(text)")
        #expect(records("sentinel").contains { $0.contains(";sentinel;_sentinel._tcp;") }, "avahi still answered then:\n\(text)")
        #expect(lines.contains("router-exit 0"), "\(text)")
        print("ZeroconfTests: \(records("browse1").count) services browsed; avahi stopping noticed in \(gone ?? -1) s")
    }

    @Test("no avahi daemon: one log line, and the router runs; bound to 127.0.0.1 it is not advertised at all, and says why")
    func withoutAvahi() throws {
        // Test daemons get a D-Bus system bus that does not exist (launchDaemon).
        let open = try OSCRig(osc: #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32", "192.168.0.0/16"]"#, http: true)
        try waitFor("the router to say there is no avahi daemon") { open.log.contains("zeroconf:") }
        #expect(try open.query("/route/select") != nil, "OSC answers")
        let said = open.log.split(separator: "\n").filter { $0.contains("zeroconf:") }
        #expect(said.count == 1 && said[0].contains("no avahi daemon"), "\(said)")
        open.close()

        let local = try OSCRig(http: true)
        defer { local.close() }
        try waitFor("the router to say why it is not advertised") { local.log.contains("zeroconf:") }
        #expect(local.log.contains("zeroconf: not advertised: OSC and HTTP listen on 127.0.0.1 only (osc.bind)"), "\(local.log)")
        local.close()
        let lonely = try OSCRig(osc: #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32"]"#, http: true)
        defer { lonely.close() }
        try waitFor("the router to say why it is not advertised") { lonely.log.contains("zeroconf:") }
        #expect(lonely.log.contains("zeroconf: not advertised: osc.allow admits this machine only"), "\(lonely.log)")
    }
}
