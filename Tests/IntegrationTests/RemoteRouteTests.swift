import Foundation
import JackHost
import JackRig
import OSCTransport
import Testing

/// Issue 18: a speaker on another machine as a route. Two hosts of this run's own (network
/// namespaces joined by a veth pair, `NetworkHosts`), a jackd on each: the router's host, whose
/// router loads netjack2's `netmanager`, and a stage box that joins it with `netadapter` beside
/// its own (dummy) device. Skipped where namespaces cannot be made.
@Suite("Remote speakers over netjack2", .serialized, .enabled(if: NetworkHosts.available && JackServer.Implementation.current == .jackd,
                                                             "needs network namespaces (root) and jackd's netjack2"))
struct RemoteRouteTests {
    /// The stage box: its jackd and the netadapter that joins the router's server under the name
    /// `stage`, as `jack_load` loads it on a real one. What arrives there is sent straight back
    /// (netadapter's capture ports patched to its playback ports, by `jack_connect`): the router's
    /// host hears it on `stage:from_slave_<n>`. No client of this process joins the stage box's
    /// server: JACK2's libjack serves one server per process (`JackServer.probeFromOutside`).
    final class StageBox {
        let server: JackServer
        /// When `jack_load` had loaded netadapter: the far end joins from then on.
        let joinedAt: Date
        /// `jack_thru`, which sends what arrives back (a client's own ports patched to each
        /// other, netadapter's, carry nothing).
        let thru = Process()

        init(hosts: NetworkHosts, port: Int) throws {
            server = try JackServer(period: 256, namespace: hosts.b)
            try Tool.run("/usr/bin/jack_load", ["-s", server.name, "netadapter", "-i",
                                                "-a \(NetworkHosts.addressA) -p \(port) -n stage -C 2 -P 2"])
            joinedAt = Date()
            thru.executableURL = URL(fileURLWithPath: "/usr/bin/jack_thru")
            thru.environment = ProcessInfo.processInfo.environment.merging(["JACK_DEFAULT_SERVER": server.name]) { $1 }
            thru.standardOutput = FileHandle.nullDevice
            thru.standardError = FileHandle.nullDevice
            Launcher.tieToTestProcess(thru)
            try Launcher.shared.run(thru)
            let name = server.name
            try waitFor("jack_thru's ports") { (try? Tool.run("/usr/bin/jack_lsp", ["-s", name, "jack_thru:output_2"])) != nil }
            for n in 1...2 {
                try Self.connect("netadapter:capture_\(n)", "jack_thru:input_\(n)", on: name)
                try Self.connect("jack_thru:output_\(n)", "netadapter:playback_\(n)", on: name)
            }
        }

        /// jack_connect on the stage box's server, until jack_lsp shows the connection. jack_thru
        /// patches itself to physical ports when it starts (netadapter's are), so a connection can
        /// already be there; and it registers its ports before it activates, while JACK2 refuses
        /// to connect an inactive client's ports ("Cannot connect ports owned by inactive
        /// clients"), so a first attempt can fail although the next one works.
        static func connect(_ source: String, _ destination: String, on server: String) throws {
            var lastError: Error?
            func connected() -> Bool {
                let listing = (try? Tool.output("/usr/bin/jack_lsp", ["-s", server, "-c", source]))?.text ?? ""
                return listing.split(separator: "\n").contains { $0.trimmingCharacters(in: .whitespaces) == destination }
            }
            do {
                try waitFor("\(source) connected to \(destination)", timeout: 5) {
                    do {
                        try Tool.run("/usr/bin/jack_connect", ["-s", server, source, destination])
                        return true
                    } catch {
                        lastError = error
                        return connected()
                    }
                }
            } catch {
                throw lastError ?? error
            }
        }

        /// The stage box loses power: its jackd is killed, netadapter and jack_thru with it.
        func kill() {
            server.kill9()
            if thru.isRunning { thru.terminate() }
            finish(thru)
        }
    }

    @Test("a stage box joining over netjack2 makes route stage available and current within 2 s, a -15.05 dBFS sine arrives there at -15.05 ±0.1 dB; the box killed: oldDeviceUnavailable within 2 s and (private) nothing moves to the local speaker; back: available again, audio back after activation")
    func netjack2StageBox() throws {
        let rig = try RouterHost()
        defer { rig.close() }
        // `returned`: what reached the stage box, back on this host.
        let (hosts, router, local, returned) = (rig.hosts, rig.router, rig.local, rig.returned)
        func patchReturn() throws {
            try waitFor("the stage box's return ports") { returned.client.portExists("stage:from_slave_2") }
            for n in 1...2 { try returned.connect("stage:from_slave_\(n)", to: "returned:in_\(n)") }
        }

        let netPort = Int.random(in: 20000...29999)
        let oscPort = Int.random(in: 30000...39999)   // inside the router's host: nothing else listens there
        let daemon = try HostDaemon(host: hosts.a, server: router, session: """
            {
              "netjack2": {"address": "\(NetworkHosts.addressA)", "port": \(netPort)},
              "routes": [
                {"name": "speaker", "ports": ["local:speaker_1", "local:speaker_2"], "builtIn": true},
                {"name": "stage", "remote": {"engine": "netjack2", "peer": "stage"}, "channels": 2, "private": true}
              ],
              "apps": [{"name": "music", "category": "playback", "connect": ["source:out_[12]"], "active": true}],
              "osc": {"port": \(oscPort)}
            }
            """)
        defer { daemon.close() }
        var logText: String { daemon.logText }

        // OSC from inside the router's host (its 127.0.0.1).
        let client = try HostDaemon.client(on: hosts.a, to: "127.0.0.1", port: oscPort)
        let watcher = try HostDaemon.client(on: hosts.a, to: "127.0.0.1", port: oscPort)
        try waitFor("the router to answer OSC", timeout: 10) { daemon.process.isRunning && (try? ask(client, OSCMessage("/state"))) != nil }
        #expect(logText.contains("loaded netmanager"), "\(logText)")
        #expect(try ask(watcher, OSCMessage("/subscribe"))?.path == "/reply")
        func rms(_ recorder: TestClient, seconds: Double = 0.3) -> Double {
            Signals.rmsDecibels(recorder.record(seconds: seconds).channels[0])
        }
        var localLevel = -200.0
        do {
            try waitFor("music on the local speaker") {
                localLevel = rms(local)
                return abs(localLevel - -15.05) < 0.1
            }
        } catch {
            Issue.record("music on the local speaker at \(localLevel) dBFS; the router's log:\n\(logText)")
            throw error
        }

        // The stage box joins.
        var stage: StageBox? = try StageBox(hosts: hosts, port: netPort)
        let available = try watcher.receive(timeout: 5) { $0.path == "/duckrouter/route" }
        let joinTime = Date().timeIntervalSince(stage!.joinedAt)
        #expect(joinTime <= 2, "the stage route available \(joinTime) s after netadapter was loaded")
        #expect(available?.arguments == [.string("newDeviceAvailable"), .string("stage"), .string("speaker")],
                "\(String(describing: available)) after \(joinTime) s; the log:\n\(logText)")
        #expect(try ask(client, OSCMessage("/route/select"))?.arguments.last == .string("stage"))
        try patchReturn()
        // Latency: netmanager's ports carry netjack2's own; /state shows what they report.
        let reported = try #require(try Tool.output("/usr/bin/jack_lsp", ["-s", router.name, "-l", "stage:to_slave_1"]).text
            .firstMatch(of: /playback latency = \[ (\d+) (\d+) \]/), "netmanager's port and its latency")
        let expected = [Double(reported.1)!, Double(reported.2)!].map { ($0 * 1000 / Double(router.sampleRate) * 100).rounded() / 100 }
        let stageState = try #require(try HostDaemon.stateRoute("stage", through: client), "route stage in /state")
        let latency = stageState["latencyMs"] as? [Double]
        print("RemoteRouteTests: netjack2's ports report \(reported.0); /state stage latencyMs \(latency ?? [])")
        #expect(latency == expected && expected[1] > 0, "/state stage latencyMs \(latency ?? []), netmanager's port: \(reported.0)")
        var level = -200.0
        do {
            try waitFor("the sine at the stage box at -15.05 dBFS", timeout: 3) {
                level = rms(returned)
                return abs(level - -15.05) < 0.1
            }
        } catch {
            let take = returned.record(seconds: 0.3).channels[0]
            let graph = { (server: String) -> String in (try? Tool.output("/usr/bin/jack_lsp", ["-s", server, "-c"]))?.text ?? "" }
            Issue.record("the stage box's return at \(level) dBFS (peak \(Signals.peakDecibels(take)) dBFS, \(take.prefix(8)))\nrouter host:\n\(graph(router.name))\nstage box:\n\(graph(stage!.server.name))\nlog:\n\(logText)")
            throw error
        }
        print("RemoteRouteTests: stage available \(String(format: "%.2f", joinTime)) s after it joined; its level \(String(format: "%.2f", level)) dBFS")
        try waitFor("the local speaker silent") { Signals.peakDecibels(local.record(seconds: 0.2).channels[0]) < -90 }

        // The stage box dies.
        let killed = Date()
        stage?.kill()
        stage = nil
        let gone = try watcher.receive(timeout: 3) { $0.path == "/duckrouter/route" }
        let goneTime = Date().timeIntervalSince(killed)
        #expect(gone?.arguments == [.string("oldDeviceUnavailable"), .string("speaker"), .string("stage")], "\(String(describing: gone))")
        // netjack2's master gives up a slave that stopped sending after 2 s of its own (seen:
        // 0.03 s when the slave's goodbye got out, else 2.02-2.04 s); the router follows at once.
        #expect(goneTime <= 2.5, "the stage box's loss seen \(goneTime) s after it died")
        print("RemoteRouteTests: the stage box's loss seen \(String(format: "%.2f", goneTime)) s after it died")
        let peak = Signals.peakDecibels(local.record(seconds: 0.5).channels[0])
        #expect(peak < -90, "a private route gone: nothing jumps to the local speaker (peak \(peak) dBFS)")

        // It comes back; music, interrupted when its route went, plays there once activated.
        stage = try StageBox(hosts: hosts, port: netPort)
        let back = try watcher.receive(timeout: 5) { $0.path == "/duckrouter/route" }
        #expect(Date().timeIntervalSince(stage!.joinedAt) <= 2, "available again within 2 s of joining")
        #expect(back?.arguments.prefix(2) == [.string("newDeviceAvailable"), .string("stage")], "\(String(describing: back))")
        #expect(try ask(client, OSCMessage("/app/music/activate"))?.path == "/reply")
        try patchReturn()
        try waitFor("the sine back at the stage box", timeout: 3) { abs(rms(returned) - -15.05) < 0.1 }
        // The router stops first, then the stage box: each leaves as a person would shut down.
        #expect(daemon.stop(), "the router stopped cleanly: \(logText)")
        stage?.server.stop()
    }
}
