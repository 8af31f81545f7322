import Foundation
import JackHost
import JackRig
import OSCTransport
import Testing

/// The test harness itself: JACK server names a run makes its own before using them, JACK's
/// table of servers cleaned only of entries whose process is gone, and OSC ports that are free.
/// Two test runs on one machine (or a run beside someone's own server) must never disturb each
/// other. JACK's table is JACK2's: on PipeWire (`JACK_IMPL=pipewire`), whose servers are sockets
/// in the run's own runtime directory, the checks of that table are left out and the tests of it
/// alone do not run.
@Suite("Test harness", .serialized)
struct HarnessTests {
    static let onJackd = JackServer.Implementation.current == .jackd

    @Test("two JackServers in one process get different names, each its own server (on jackd registered in JACK to its own jackd) and claimed while it runs")
    func twoServersInOneProcess() throws {
        let first = try JackServer()
        defer { first.stop() }
        let second = try JackServer()
        defer { second.stop() }
        #expect(first.name != second.name)
        if Self.onJackd {
            #expect(try JackServerRegistry.entry(named: first.name)?.pid == first.processIdentifier)
            #expect(try JackServerRegistry.entry(named: second.name)?.pid == second.processIdentifier)
        }
        #expect(try JackServerNameClaim(first.name) == nil, "the first name is held")
        #expect(try JackServerNameClaim(second.name) == nil, "the second name is held")
        // Stopped, the name is free again (and JACK's entry is gone: jackd left cleanly).
        second.stop()
        let claim = try #require(try JackServerNameClaim(second.name), "stop() gives the name back")
        claim.release()
        if Self.onJackd { #expect(try JackServerRegistry.entry(named: second.name) == nil) }
        #expect(throws: JackError.self, "no server answers under the stopped server's name") {
            try JackClient(name: "check", server: second.name).close()
        }
    }

    @Test("a name another process has claimed is never used: the server takes the next one; once the claim ends the name can be claimed")
    func nameClaimedByAnotherProcess() throws {
        // The name a new server would take now: the first of the pool no one holds or runs.
        var holder: Process?
        var taken = ""
        for _ in 0..<10 where holder == nil {
            guard let candidate = try Self.nextFreeName() else { break }
            // Another process (flock(1)) claims it, as a second test run would.
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
            process.arguments = ["--no-fork", "--timeout", "5", JackServerNameClaim.lockFile(for: candidate).path, "sleep", "60"]
            try process.run()
            // Held once our own claim fails (or lost to a third party when flock gives up).
            try waitFor("flock to hold \(candidate)", timeout: 10) { !process.isRunning || Self.isClaimed(candidate) }
            if process.isRunning { holder = process; taken = candidate }
        }
        let other = try #require(holder, "no free pool name could be held by another process")
        // SIGKILL: a child of the test runner may inherit SIGTERM blocked.
        defer { if other.isRunning { kill(other.processIdentifier, SIGKILL); finish(other) } }

        let server = try JackServer()
        defer { server.stop() }
        #expect(server.name != taken, "the name held by another process (\(taken)) was used")
        if Self.onJackd { #expect(try JackServerRegistry.entry(named: server.name)?.pid == server.processIdentifier) }

        kill(other.processIdentifier, SIGKILL)
        finish(other)
        let claim = try #require(try JackServerNameClaim(taken), "the name is free once its holder is gone")
        claim.release()
    }

    @Test("the entry of a killed server (its process gone) is freed; a live server's entry is kept; the killed server restarts under its own name",
          .enabled(if: onJackd, "JACK2's table of servers only: a PipeWire server has no entry there"))
    func staleEntryReclaimed() throws {
        let live = try JackServer()
        defer { live.stop() }
        let killed = try JackServer()
        defer { killed.stop() }
        let pid = killed.processIdentifier
        killed.kill9()
        let stale = try #require(try JackServerRegistry.entry(named: killed.name), "SIGKILL leaves jackd's entry in JACK's table")
        #expect(stale.pid == pid && stale.ownerIsGone)
        #expect(try JackServerRegistry.entry(named: live.name)?.ownerIsGone == false)

        let freed = try JackServerRegistry.reclaimStaleEntries()
        #expect(freed.contains(stale), "freed \(freed)")
        #expect(freed.allSatisfy { kill($0.pid, 0) == -1 }, "only entries of processes that are gone")
        #expect(try JackServerRegistry.entry(named: killed.name) == nil)
        #expect(try JackServerRegistry.entry(named: live.name)?.pid == live.processIdentifier, "the live server's entry is kept")
        // Its client still works.
        let client = try JackClient(name: "check", server: live.name)
        client.close()

        // The name stayed claimed across the kill; the server comes back under it.
        #expect(try JackServerNameClaim(killed.name) == nil)
        try killed.restart()
        #expect(try JackServerRegistry.entry(named: killed.name)?.pid == killed.processIdentifier)
    }

    @Test("a test process that dies (SIGKILL) takes its server with it and its name is unclaimed; jackd's entry is left stale and reclaimed")
    func serverDiesWithItsTestProcess() throws {
        // A second test process (this test binary, running only `holdServerUntilKilled`).
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = ["--testing-library", "swift-testing", "--filter", "HarnessTests/holdServerUntilKilled"]
        child.environment = ProcessInfo.processInfo.environment.merging([Self.childVariable: "1"]) { $1 }
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()
        defer { if child.isRunning { kill(child.processIdentifier, SIGKILL); finish(child) } }
        var text = ""
        var server: (name: String, pid: Int32)?
        try waitFor("the child's server", timeout: 30) {
            let data = output.fileHandleForReading.availableData
            text += String(decoding: data, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("HARNESS-CHILD-SERVER ") }) {
                let parts = line.split(separator: " ")
                server = (String(parts[1]), Int32(parts[2])!)
            }
            return server != nil || data.isEmpty
        }
        let (name, pid) = try #require(server, "the child printed: \(text)")
        if Self.onJackd { #expect(try JackServerRegistry.entry(named: name)?.pid == pid) }
        #expect(Self.isClaimed(name))

        kill(child.processIdentifier, SIGKILL)
        finish(child)
        // The log its JackServer had no chance to remove.
        try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(child.processIdentifier).log"))
        try waitFor("the child's server to die with it", timeout: 5) { kill(pid, 0) == -1 && errno == ESRCH }
        #expect(!Self.isClaimed(name), "the dead process's claim is gone with it")
        guard Self.onJackd else { return }
        let stale = try #require(try JackServerRegistry.entry(named: name), "a jackd killed by SIGKILL keeps its entry")
        #expect(stale.pid == pid && stale.ownerIsGone)
        #expect(try JackServerRegistry.reclaimStaleEntries().contains(stale))
        #expect(try JackServerRegistry.entry(named: name) == nil)
    }

    static let childVariable = "DUCKROUTER_HARNESS_CHILD"

    @Test("(run by serverDiesWithItsTestProcess only) holds a JackServer until killed", .enabled(if: ProcessInfo.processInfo.environment[HarnessTests.childVariable] != nil))
    func holdServerUntilKilled() throws {
        let server = try JackServer()
        FileHandle.standardOutput.write(Data("HARNESS-CHILD-SERVER \(server.name) \(server.processIdentifier)\n".utf8))
        Thread.sleep(forTimeInterval: 60)
        server.stop()
    }

    @Test("OSC ports: free for UDP and TCP on loopback and on every address, never the same twice; a daemon whose port was taken is started again on another")
    func oscPorts() throws {
        var seen: Set<UInt16> = []
        for _ in 0..<20 {
            let port = try OSCPorts.free()
            #expect(seen.insert(port).inserted, "port \(port) handed out twice")
            for bind in ["127.0.0.1", "::"] {
                #expect(try OSCServer(configuration: Self.configuration(bind: bind, port: port)).port == port,
                        "the project's own server binds UDP and TCP on \(bind) port \(port)")
            }
        }

        // Someone takes the port after it was found free: the daemon cannot bind it, says so,
        // and the rig starts it again on another port.
        let server = try JackServer()
        defer { server.stop() }
        let taken = try OSCPorts.free()
        let squatter = try OSCServer(configuration: Self.configuration(bind: "127.0.0.1", port: taken))
        defer { _ = squatter }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-harness-\(getpid())-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        var tried: [UInt16] = []
        let (daemon, port) = try OSCPorts.withFreePort { free in
            let port = tried.isEmpty ? taken : free
            tried.append(port)
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let daemon = Process()
            daemon.executableURL = DaemonTests.binary
            daemon.arguments = daemonArguments(["--server", server.name, "--osc-port", "\(port)", "Sessions/default.json"])
            daemon.currentDirectoryURL = DaemonTests.repository
            daemon.standardError = try FileHandle(forWritingTo: log)
            daemon.standardOutput = FileHandle.nullDevice
            Launcher.tieToTestProcess(daemon)
            try Launcher.shared.run(daemon)
            let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: port))
            try waitForDaemon(daemon, port: port, log: (try? String(contentsOf: log, encoding: .utf8)) ?? "", "OSC to answer") {
                (try? ask(client, OSCMessage("/state"))) != nil
            }
            return (daemon, port)
        }
        defer { daemon.terminate(); finish(daemon) }
        #expect(tried.count == 2 && tried.first == taken, "ports tried: \(tried)")
        #expect(port != taken && port == tried.last)
    }

    static func configuration(bind: String, port: UInt16) -> OSCServer.Configuration {
        var configuration = OSCServer.Configuration()
        configuration.bind = bind
        configuration.port = port
        return configuration
    }

    /// True when someone holds a claim on `name` (our own attempt fails).
    static func isClaimed(_ name: String) -> Bool {
        do { return try JackServerNameClaim(name) == nil } catch { return false }
    }

    /// The first pool name that no claim holds and no live server has registered.
    static func nextFreeName() throws -> String? {
        for name in JackServer.namePool {
            guard let claim = try JackServerNameClaim(name) else { continue }
            claim.release()
            if let entry = try JackServerRegistry.entry(named: name), !entry.ownerIsGone { continue }
            return name
        }
        return nil
    }
}
