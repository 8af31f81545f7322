import Foundation
import JackHost
import JackRig
import OSCTransport
import Testing

/// Issue 18, acceptance 2: a speaker on another machine over zita-njbridge, a one-way bridge that
/// tells nothing of its far end. The router's host runs the router, which runs and supervises
/// `zita-j2n`; the stage box (the other namespace) runs `zita-n2j` into its jackd and a duckrouter
/// of its own, which the router asks `/ping` to know the far end is there. What reaches the stage
/// box goes back over a second bridge (its own zita-j2n to a zita-n2j on the router's host) to be
/// measured here: no client of this process joins the stage box's server (JACK2's libjack serves
/// one server per process).
@Suite("Remote speakers over zita-njbridge", .serialized,
       .enabled(if: NetworkHosts.available && JackServer.Implementation.current == .jackd && FileManager.default.isExecutableFile(atPath: "/usr/bin/zita-j2n"),
                "needs network namespaces (root), jackd and zita-njbridge"))
struct BridgedRouteTests {
    static let audioPort = Int.random(in: 40000...44999)
    static let returnPort = audioPort + 1000
    static let farOSCPort = Int.random(in: 46000...49999)

    /// A program of the test's on a host (`ip netns exec`), tied to the test process.
    /// What the test's own bridge programs printed (`--info`), for a failure's report.
    static let outputs = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-bridges-\(getpid())-\(UUID().uuidString)")

    static func run(on host: String, _ path: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["netns", "exec", host, path] + arguments
        try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
        let file = outputs.appendingPathComponent("\(host)-\(arguments[1]).log")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        process.standardOutput = handle
        process.standardError = handle
        Launcher.tieToTestProcess(process)
        try Launcher.shared.run(process)
        return process
    }

    /// The stage box: its jackd, zita-n2j receiving the router's audio, a zita-j2n sending it back
    /// to the router's host, and its duckrouter, which answers OSC from the router's host only.
    final class StageBox {
        let server: JackServer
        var processes: [Process] = []
        let daemon: HostDaemon
        /// When its duckrouter was started: the far end is there once it answers.
        let startedAt: Date

        init(hosts: NetworkHosts) throws {
            server = try JackServer(period: 256, namespace: hosts.b)
            do {
                processes.append(try BridgedRouteTests.run(on: hosts.b, "/usr/bin/zita-n2j",
                    ["--jname", "n2j", "--jserv", server.name, "--chan", "1,2", "--buff", "20", NetworkHosts.addressB, "\(BridgedRouteTests.audioPort)"]))
                processes.append(try BridgedRouteTests.run(on: hosts.b, "/usr/bin/zita-j2n",
                    ["--jname", "back", "--jserv", server.name, "--chan", "2", "--float", NetworkHosts.addressA, "\(BridgedRouteTests.returnPort)"]))
                let name = server.name
                try waitFor("the stage box's bridges") {
                    BridgedRouteTests.portExists("n2j:out_2", on: name) && BridgedRouteTests.portExists("back:in_2", on: name)
                }
                for n in 1...2 { try Tool.run("/usr/bin/jack_connect", ["-s", name, "n2j:out_\(n)", "back:in_\(n)"]) }
                startedAt = Date()
                daemon = try HostDaemon(host: hosts.b, server: server, session: """
                    {"client": "stagebox", "osc": {"port": \(BridgedRouteTests.farOSCPort), "bind": "0.0.0.0", "allow": ["\(NetworkHosts.addressA)/32"]}}
                    """, name: "stagebox")
            } catch {
                for process in processes where process.isRunning { process.terminate() }
                server.stop()
                throw error
            }
        }

        /// Starts the stage box's zita-n2j again (far-end equipment: on a loaded machine with
        /// xruns it does not always lock onto a stream) and patches it back.
        func restartReceiver(hosts: NetworkHosts) throws {
            let old = processes.removeFirst()
            if old.isRunning { old.terminate() }
            finish(old)
            let name = server.name
            try waitFor("the stage box's old receiver gone") { !BridgedRouteTests.portExists("n2j:out_1", on: name) }
            processes.insert(try BridgedRouteTests.run(on: hosts.b, "/usr/bin/zita-n2j",
                ["--jname", "n2j", "--jserv", name, "--chan", "1,2", "--buff", "20", NetworkHosts.addressB, "\(BridgedRouteTests.audioPort)"]), at: 0)
            try waitFor("the stage box's receiver") { BridgedRouteTests.portExists("n2j:out_2", on: name) }
            for n in 1...2 { try Tool.run("/usr/bin/jack_connect", ["-s", name, "n2j:out_\(n)", "back:in_\(n)"]) }
        }

        func stop() {
            daemon.close()
            for process in processes where process.isRunning { process.terminate() }
            for process in processes { finish(process) }
            server.stop()
        }
    }

    @Test("the router runs zita-j2n; the stage box's duckrouter answering makes route stage available within 2 s, a -15.05 dBFS sine arrives there at -15.05 ±0.1 dB; its link down: oldDeviceUnavailable within the documented 1.25 s, nothing to the local speaker; up: back, audio back after activation; a killed sender is started again; a killed router takes its sender with it")
    func zitaStageBox() throws {
        let rig = try RouterHost()
        defer { rig.close() }
        // `returned`: what reached the stage box, back on this host.
        let (hosts, router, local, returned) = (rig.hosts, rig.router, rig.local, rig.returned)
        // The return bridge's receiver: the test's instrument, started again when it does not
        // take up its stream after the link came back (awaitSine).
        var receiver: Process?
        func startReceiver() throws {
            if let old = receiver {
                if old.isRunning { old.terminate() }
                finish(old)
                try waitFor("the old return receiver gone") { !returned.client.portExists("n2j-back:out_1") }
            }
            receiver = try Self.run(on: hosts.a, "/usr/bin/zita-n2j", ["--jname", "n2j-back", "--jserv", router.name, "--chan", "1,2", "--buff", "20",
                                                                     NetworkHosts.addressA, "\(Self.returnPort)"])
            try waitFor("the return bridge's ports") { returned.client.portExists("n2j-back:out_2") }
            for n in 1...2 { try returned.connect("n2j-back:out_\(n)", to: "returned:in_\(n)") }
        }
        try startReceiver()
        defer { if let receiver { if receiver.isRunning { receiver.terminate() }; finish(receiver) } }

        let oscPort = Int.random(in: 30000...39999)
        let daemon = try HostDaemon(host: hosts.a, server: router, session: """
            {
              "routes": [
                {"name": "speaker", "ports": ["local:speaker_1", "local:speaker_2"], "builtIn": true},
                {"name": "stage", "private": true,
                 "remote": {"engine": "zita-njbridge", "host": "\(NetworkHosts.addressB)", "port": \(Self.audioPort), "watch": \(Self.farOSCPort),
                            "latency": 20}}
              ],
              "apps": [{"name": "music", "category": "playback", "connect": ["source:out_[12]"], "active": true}],
              "osc": {"port": \(oscPort)}
            }
            """)
        defer { daemon.close() }
        var logText: String { daemon.logText }
        let client = try HostDaemon.client(on: hosts.a, to: "127.0.0.1", port: oscPort)
        let watcher = try HostDaemon.client(on: hosts.a, to: "127.0.0.1", port: oscPort)
        try waitFor("the router to answer OSC", timeout: 10) { daemon.process.isRunning && (try? ask(client, OSCMessage("/state"))) != nil }
        #expect(try ask(watcher, OSCMessage("/subscribe"))?.path == "/reply")
        func rms(_ recorder: TestClient, seconds: Double = 0.3) -> Double { Signals.rmsDecibels(recorder.record(seconds: seconds).channels[0]) }
        func stageRoute() throws -> [String: Any]? { try HostDaemon.stateRoute("stage", through: client) }

        var stage: StageBox?
        defer { stage?.stop() }
        defer { try? FileManager.default.removeItem(at: Self.outputs) }

        /// Waits for the sine at the stage box (through two bridges whose receivers lock onto a
        /// stream within a second or two: no limit is asked of that); how long it took.
        func awaitSine(_ what: String) throws -> Double {
            let start = Date()
            var levels: [Double] = []
            do {
                // The receivers are the far end's equipment and the test's instrument, not the
                // router: on a loaded machine with xruns zita-n2j does not always lock onto a
                // stream, or lock again after the link came back (docs/NETWORK.md; a CI run saw
                // one still flapping 10 s after a restart). They are started again, up to three
                // times, each said; the router's side (its sender, its connections) is untouched.
                var restarts = 0
                while true {
                    do {
                        try waitFor(what, timeout: restarts == 0 ? 5 : 10) {
                            levels.append(rms(returned))
                            return abs(levels.last! - -15.05) < 0.1
                        }
                        break
                    } catch {
                        guard restarts < 3 else { throw error }
                        restarts += 1
                        print("BridgedRouteTests: \(what): not yet; both zita-n2j started again (\(restarts) of 3)")
                        try stage?.restartReceiver(hosts: hosts)
                        try startReceiver()
                    }
                }
            } catch {
                let graph = { (server: String) -> String in (try? Tool.output("/usr/bin/jack_lsp", ["-s", server, "-c"]))?.text ?? "" }
                let bridges = ((try? FileManager.default.contentsOfDirectory(atPath: Self.outputs.path)) ?? []).map { name in
                    "\(name):\n" + ((try? String(contentsOf: Self.outputs.appendingPathComponent(name), encoding: .utf8)) ?? "").split(separator: "\n").suffix(30).joined(separator: "\n")
                }.joined(separator: "\n")
                let state = (try? ask(client, OSCMessage("/state")))?.arguments.last.map { "\($0)" } ?? ""
                Issue.record("\(what): levels \(levels)\nrouter host:\n\(graph(router.name))\nstage box:\n\(stage.map { graph($0.server.name) } ?? "")\nbridges:\n\(bridges)\nstate: \(state)\nlog:\n\(logText)")
                throw error
            }
            return Date().timeIntervalSince(start)
        }

        // The sender runs; with no far end answering, the route is not available.
        try waitFor("the router's sender") { returned.client.portExists("j2n-stage:in_2") }
        let connections = returned.client.connections(of: "duckrouter:stage_out_1")
        #expect(connections == ["j2n-stage:in_1"], "the route's ports patched to the sender's: \(connections)")
        // Latency: zita-j2n's ports report none; the far end's 20 ms (`remote.latency`, the stage
        // box's zita-n2j --buff) is the route's, in /state and, for players upstream, in JACK
        // (which asks a client only once its driver's ports lead to it: a capture into music).
        let latency = try #require(try stageRoute()?["latencyMs"] as? [Double], "\(logText)")
        #expect(latency == [20, 20], "/state stage latencyMs \(latency)")
        _ = try Tool.run("/usr/bin/jack_connect", ["-s", router.name, "system:capture_1", "duckrouter:music_in_1"])
        let frames = 20 * router.sampleRate / 1000
        func jackLatency(_ port: String) -> String { (try? Tool.output("/usr/bin/jack_lsp", ["-s", router.name, "-l", port]))?.text ?? "" }
        try waitFor("JACK to have the stage route's latency") {
            jackLatency("duckrouter:stage_out_1").contains("playback latency = [ \(frames) \(frames) ]")
        }
        #expect(jackLatency("duckrouter:music_in_1").contains("playback latency = [ 0 \(frames) ]"),
                "an app's input: the local speaker at once, the stage 20 ms later: \(jackLatency("duckrouter:music_in_1"))")
        try waitFor("music on the local speaker") { abs(rms(local) - -15.05) < 0.1 }
        let before = try #require(try stageRoute(), "\(logText)")
        #expect(before["available"] as? Bool == false && before["farEndAnswers"] as? Bool == false, "\(before)")

        // The stage box comes up.
        stage = try StageBox(hosts: hosts)
        let available = try watcher.receive(timeout: 5) { $0.path == "/duckrouter/route" }
        let joinTime = Date().timeIntervalSince(stage!.startedAt)
        #expect(available?.arguments == [.string("newDeviceAvailable"), .string("stage"), .string("speaker")],
                "\(String(describing: available)); the log:\n\(logText)")
        #expect(joinTime <= 2, "the stage route available \(joinTime) s after the stage box's duckrouter was started")
        let arrival = try awaitSine("the sine at the stage box at -15.05 dBFS")
        try waitFor("the local speaker silent") { Signals.peakDecibels(local.record(seconds: 0.2).channels[0]) < -90 }
        print("BridgedRouteTests: stage available \(String(format: "%.2f", joinTime)) s after the stage box's duckrouter was started; the sine there \(String(format: "%.2f", arrival)) s later")

        // The stage box's cable is pulled.
        let pulled = Date()
        try hosts.setLink(hosts.b, up: false)
        let gone = try watcher.receive(timeout: 4) { $0.path == "/duckrouter/route" }
        let goneTime = Date().timeIntervalSince(pulled)
        #expect(gone?.arguments == [.string("oldDeviceUnavailable"), .string("speaker"), .string("stage")], "\(String(describing: gone))")
        // Documented (docs/NETWORK.md): 1 s of silence, noticed at the next ask (every 0.25 s).
        #expect(goneTime <= 1.25 + 0.25, "the stage box's loss seen \(goneTime) s after its link went down")
        print("BridgedRouteTests: the link's loss seen \(String(format: "%.2f", goneTime)) s after it went down")
        let peak = Signals.peakDecibels(local.record(seconds: 0.5).channels[0])
        #expect(peak < -90, "a private route gone: nothing jumps to the local speaker (peak \(peak) dBFS)")

        // Plugged back: available again, music (interrupted when its route went) plays there once activated.
        let plugged = Date()
        try hosts.setLink(hosts.b, up: true)
        let back = try watcher.receive(timeout: 5) { $0.path == "/duckrouter/route" }
        let backTime = Date().timeIntervalSince(plugged)
        #expect(back?.arguments.prefix(2) == [.string("newDeviceAvailable"), .string("stage")], "\(String(describing: back))")
        #expect(backTime <= 1.5, "available again \(backTime) s after the link came up")
        print("BridgedRouteTests: back \(String(format: "%.2f", backTime)) s after the link came up")
        #expect(try ask(client, OSCMessage("/app/music/activate"))?.path == "/reply")
        print("BridgedRouteTests: the sine back \(String(format: "%.2f", try awaitSine("the sine back at the stage box"))) s after activation")

        // The sender is killed: the router starts it again and patches its new ports.
        let senderPid = try #require(Self.senderPid(), "zita-j2n for the stage route")
        kill(senderPid, SIGKILL)
        let lost = try watcher.receive(timeout: 3) { $0.path == "/duckrouter/route" }
        #expect(lost?.arguments.prefix(2) == [.string("oldDeviceUnavailable"), .string("speaker")], "its ports gone: \(String(describing: lost))")
        let regained = try watcher.receive(timeout: 5) { $0.path == "/duckrouter/route" }
        #expect(regained?.arguments.prefix(2) == [.string("newDeviceAvailable"), .string("stage")], "its ports back: \(String(describing: regained))")
        #expect(Self.senderPid().map { $0 != senderPid } == true, "another zita-j2n")
        #expect(returned.client.connections(of: "duckrouter:stage_out_1") == ["j2n-stage:in_1"], "the route's ports patched to the new sender")
        #expect(logText.contains("zita-j2n exited (killed by signal 9); starting it again in 0.5 s"), "\(logText)")
        #expect(try ask(client, OSCMessage("/app/music/activate"))?.path == "/reply")
        // The music is mixed into the new sender (the route's meter). Whether the far zita-n2j
        // takes up the new stream is its own affair: in trials it did 1.7-2.0 s after the
        // restart, or not within 10 s (docs/NETWORK.md).
        var routePeak = -200.0
        try waitFor("music on the stage route again") {
            guard case let .string(json)? = try? ask(client, OSCMessage("/state"))?.arguments.last,
                  let document = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
                  let peaks = ((document["engine"] as? [String: Any])?["peaksDbfs"] as? [String: Any])?["routes"] as? [String: [Double]],
                  let stagePeak = peaks["stage"]?.first else { return false }
            routePeak = stagePeak
            return abs(stagePeak - 20 * log10(0.25)) < 0.5
        }
        #expect(abs(routePeak - 20 * log10(0.25)) < 0.5, "the sine's peak on the stage route: \(routePeak) dBFS")

        // A router killed outright takes its sender with it (the kernel's parent-death signal).
        let lastSender = try #require(Self.senderPid())
        kill(daemon.process.processIdentifier, SIGKILL)
        try waitFor("the sender gone with its router", timeout: 5) { kill(lastSender, 0) != 0 }
        try waitFor("the sender's ports gone") { !returned.client.portExists("j2n-stage:in_1") }
        stage?.stop()
        stage = nil
    }

    /// Whether `port` exists on JACK server `server`, asked from outside this process (jack_lsp
    /// lists the ports matching its argument and succeeds whether or not any does).
    static func portExists(_ port: String, on server: String) -> Bool {
        guard let listed = try? Tool.output("/usr/bin/jack_lsp", ["-s", server, port]) else { return false }
        return listed.text.split(separator: "\n").contains { $0 == port }
    }

    /// The pid of the zita-j2n the router runs for the stage route (`--jname j2n-stage`).
    static func senderPid() -> pid_t? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        for entry in entries {
            guard let pid = pid_t(entry), let command = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(entry)/cmdline")) else { continue }
            let arguments = command.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.first?.hasSuffix("zita-j2n") == true, arguments.contains("j2n-stage") { return pid }
        }
        return nil
    }
}
