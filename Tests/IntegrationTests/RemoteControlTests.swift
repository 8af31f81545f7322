import Foundation
import JackRig
import OSCTransport
import Testing

/// Issue 18, "control across machines": the router on one host, a control surface on another
/// that `osc.allow` admits, and a third host that it does not, each a network namespace of this
/// run's own (`NetworkHosts` with a third host joined to the router's by its own veth pair).
/// OSC over UDP and TCP and HTTP (OSCQuery) cross real non-loopback addresses.
@Suite("Control across hosts", .serialized, .enabled(if: NetworkHosts.available && JackServer.Implementation.current == .jackd,
                                                      "needs network namespaces (root) and jackd (a JACK server inside a namespace)"))
struct RemoteControlTests {
    @Test("a control surface on another host drives the router over OSC (UDP and TCP) and HTTP through osc.bind and osc.allow; a third host outside osc.allow gets -5 (403 over HTTP) and changes nothing")
    func controlAcrossHosts() throws {
        let rig = try RouterHost(thirdHost: true)
        defer { rig.close() }
        let hosts = rig.hosts
        let c = try #require(hosts.c)
        let oscPort = Int.random(in: 30000...39999), httpPort = Int.random(in: 40000...49999)
        let daemon = try HostDaemon(host: hosts.a, server: rig.router, session: """
            {
              "routes": [{"name": "speaker", "ports": ["local:speaker_1", "local:speaker_2"]}],
              "apps": [{"name": "music", "category": "playback", "connect": ["source:out_[12]"], "active": true}],
              "osc": {"port": \(oscPort), "bind": "0.0.0.0", "allow": ["\(NetworkHosts.addressB)/32", "127.0.0.1/32"]}
            }
            """, httpPort: httpPort)
        defer { daemon.close() }
        let local = try HostDaemon.client(on: hosts.a, to: "127.0.0.1", port: oscPort)
        try waitFor("the router to answer OSC", timeout: 10) { daemon.process.isRunning && (try? ask(local, OSCMessage("/state"))) != nil }
        func level() -> Double { Signals.rmsDecibels(rig.local.record(seconds: 0.3).channels[0]) }
        func volume() throws -> OSCArgument? { try ask(local, OSCMessage("/app/music/volume"))?.arguments.last }
        try waitFor("music on the speaker at -15.05 dBFS") { abs(level() - -15.05) < 0.1 }

        // The control surface on host b, across the veth: answered, and the mix follows.
        let surface = try HostDaemon.client(on: hosts.b, to: NetworkHosts.addressA, port: oscPort)
        let reply = try ask(surface, OSCMessage("/app/music/volume", [.float(0.5)]))
        #expect(reply?.path == "/reply", "\(String(describing: reply)); the log:\n\(daemon.logText)")
        #expect(try volume() == .float(0.5))
        // 0.5 on the cubic taper is 0.125, -18.06 dB: -33.11 dBFS.
        try waitFor("music at -33.11 dBFS") { abs(level() - -33.11) < 0.1 }
        #expect(try ask(surface, OSCMessage("/subscribe"))?.path == "/reply")
        let tcpSurface = try NetworkHosts.inside(hosts.b) {
            try OSCClient(OSCURL(transport: .tcp, host: NetworkHosts.addressA, port: UInt16(oscPort)))
        }
        #expect(try ask(tcpSurface, OSCMessage("/app/music/volume"))?.arguments.last == .float(0.5), "read over TCP")
        // The subscriber on b hears of a change made from elsewhere (music, playback, is not
        // silenced by the switch).
        #expect(try ask(local, OSCMessage("/system/silent", [.int32(1)]))?.path == "/reply")
        let notice = try surface.receive(timeout: 2) { $0.path == "/duckrouter/silent" }
        #expect(notice?.arguments == [.int32(1)], "the notification reaches the surface on host b: \(String(describing: notice))")
        #expect(try ask(local, OSCMessage("/system/silent", [.int32(0)]))?.path == "/reply")

        // Host c, outside osc.allow: -5 over UDP and TCP, nothing changed.
        let intruder = try HostDaemon.client(on: c, to: NetworkHosts.addressAForC, port: oscPort)
        let refused = try ask(intruder, OSCMessage("/app/music/volume", [.float(1)]))
        #expect(refused?.path == "/error" && refused?.arguments.dropFirst().first == .int32(-5), "\(String(describing: refused))")
        // Over TCP it is closed at accept, told why in one short /error (path "/": the connection).
        let tcpIntruder = try NetworkHosts.inside(c) {
            try OSCClient(OSCURL(transport: .tcp, host: NetworkHosts.addressAForC, port: UInt16(oscPort)))
        }
        let refusedTCP = (try? tcpIntruder.receive(timeout: 2) { $0.path == "/error" }) ?? nil
        #expect(refusedTCP?.arguments.prefix(2) == [.string("/"), .int32(-5)], "\(String(describing: refusedTCP))")
        #expect(throws: (any Error).self, "the connection is closed") { try tcpIntruder.send(OSCMessage("/app/music/volume", [.float(1)])); _ = try tcpIntruder.receive(timeout: 1) }
        #expect(try ask(intruder, OSCMessage("/system/silent", [.int32(1)]))?.path == "/error")
        #expect(try volume() == .float(0.5), "the volume host c asked for was not set")
        #expect(abs(level() - -33.11) < 0.1, "the mix unchanged")
        #expect(try ask(local, OSCMessage("/system/silent"))?.arguments.last == .int32(0), "the silent switch unchanged")

        // HTTP (OSCQuery) on the same rules: host b reads the value, host c gets 403.
        func curl(on host: String, _ url: String, headers: [String] = []) throws -> (status: String, body: String) {
            let out = try Tool.output("/usr/sbin/ip", ["netns", "exec", host, "/usr/bin/curl", "-s", "-m", "5", "-w", "\n%{http_code}"]
                                      + headers.flatMap { ["-H", $0] } + [url]).text
            let lines = out.split(separator: "\n", omittingEmptySubsequences: false)
            return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"))
        }
        let read = try curl(on: hosts.b, "http://\(NetworkHosts.addressA):\(httpPort)/app/music/volume?VALUE")
        #expect(read.status == "200" && read.body == #"{"VALUE":[0.5]}"#, "\(read)")
        let forbidden = try curl(on: c, "http://\(NetworkHosts.addressAForC):\(httpPort)/app/music/volume?VALUE")
        #expect(forbidden.status == "403", "\(forbidden)")
        // Nor may it open the WebSocket that would carry OSC (and so changes) to the router.
        let upgrade = ["Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
        let socket = try curl(on: c, "http://\(NetworkHosts.addressAForC):\(httpPort)/", headers: upgrade)
        #expect(socket.status == "403", "a WebSocket from host c: \(socket)")
        #expect(daemon.process.isRunning, "\(daemon.logText)")
    }
}
