import Engine
import CJack
import Foundation
import JackHost
import JackRig
import Synchronization
import Testing

/// The JACK client against a real server: a private `jackd -d dummy` per test (JackRig),
/// or a private PipeWire with `JACK_IMPL=pipewire`. Serialized: JACK2 has room for only a few
/// servers on a machine.
@Suite("JackHost: JackClient", .serialized)
struct JackClientTests {
    @Test("a client opens on a running server with its settings, and closes (twice is harmless); its ports leave the graph")
    func openAndClose() throws {
        let server = try JackServer(sampleRate: 44100, period: 512)
        defer { server.stop() }
        let observer = try JackClient(name: "observer", server: server.name)
        let client = try JackClient(name: "hosttest", server: server.name)
        #expect(client.isOpen)
        #expect(client.name == "hosttest")
        #expect(client.serverName == server.name)
        #expect(client.sampleRate == 44100)
        #expect(client.bufferSize == 512)
        _ = try client.registerAudioPort("in", direction: .input)
        // Another client hears of ports at once on jackd, a moment later on PipeWire.
        try waitFor("the port to appear to another client") { observer.portExists("hosttest:in") }
        client.close()
        #expect(!client.isOpen)
        client.close()
        try waitFor("the port to leave the graph") { !observer.portExists("hosttest:in") }
    }

    @Test("opening on a server that does not exist fails with serverUnavailable, naming the server")
    func noServer() {
        let name = "duckrouter-absent-\(getpid())"
        #expect {
            _ = try JackClient(name: "hosttest", server: name)
        } throws: { error in
            guard case let .serverUnavailable(server, _) = error as? JackError else { return false }
            return server == name
        }
        // The message says how to start the server this process's libjack can reach.
        let message = JackError.serverUnavailable(server: name, status: []).description
        switch JackServer.Implementation.current {
        case .jackd:
            #expect(JackLibrary.loaded == .jack2)
            #expect(message.contains("jackd -n \(name)"), "\(message)")
        case .pipewire:
            #expect(JackLibrary.loaded == .pipewire)
            #expect(message.contains("start PipeWire") && !message.contains("jackd"), "\(message)")
        }
    }

    @Test("which libjack is loaded is told by what it says it is, wherever it is installed; its file only when it says nothing")
    func libraryIdentified() {
        // PipeWire's libjack installed as the system's (Arch: /usr/lib/libjack.so.0), or linked over JACK2's.
        #expect(JackLibrary.identify(version: "3.0.0.0 (using PipeWire 0.3.65)", file: "/usr/lib/libjack.so.0") == .pipewire)
        #expect(JackLibrary.identify(version: "1.9.21", file: "/usr/lib/x86_64-linux-gnu/libjack.so.0") == .jack2)
        #expect(JackLibrary.identify(version: nil, file: "/usr/lib/x86_64-linux-gnu/pipewire-0.3/jack/libjack.so.0") == .pipewire)
        #expect(JackLibrary.identify(version: nil, file: nil) == .jack2)
        // And the library this process loaded says so itself.
        let version = CJackShims_version_string().map { String(cString: $0) } ?? ""
        switch JackServer.Implementation.current {
        case .jackd: #expect(!version.contains("PipeWire") && JackLibrary.loaded == .jack2, "\(version)")
        case .pipewire: #expect(version.contains("PipeWire") && JackLibrary.loaded == .pipewire, "\(version)")
        }
    }

    @Test("ports register under the client's name, are found by name, pattern and direction, and unregister")
    func registerAndUnregister() throws {
        let server = try JackServer()
        defer { server.stop() }
        let device = try server.standInForDriverPorts()
        defer { device?.close() }
        let client = try JackClient(name: "hosttest", server: server.name)
        let input = try client.registerAudioPort("in_1", direction: .input)
        let output = try client.registerAudioPort("out_1", direction: .output)
        #expect(input.name == "hosttest:in_1")
        #expect(output.name == "hosttest:out_1")
        #expect(client.portExists("hosttest:in_1") && client.portExists("hosttest:out_1"))
        #expect(!client.portExists("hosttest:in_2"))
        #expect(Set(client.ports(matching: "^hosttest:")) == ["hosttest:in_1", "hosttest:out_1"])
        #expect(client.ports(matching: "^hosttest:", direction: .input) == ["hosttest:in_1"])
        #expect(client.ports(matching: "^hosttest:", direction: .output) == ["hosttest:out_1"])
        #expect(client.ports(direction: .output).contains("system:capture_1"), "the dummy driver's (or its stand-in's) ports are in the graph")
        client.unregister(input)
        #expect(!client.portExists("hosttest:in_1"))
        #expect(client.portExists("hosttest:out_1"))
    }

    @Test("a second port of the same name is refused, naming it; the first stays",
          .enabled(if: JackServer.Implementation.current == .jackd,
                   "PipeWire 0.3.65's libjack registers a second port under a name the client already has (both are listed); the router never asks it to (its port names end in _in_N per app and _out_N per route)"))
    func duplicatePortName() throws {
        let server = try JackServer()
        defer { server.stop() }
        let client = try JackClient(name: "hosttest", server: server.name)
        _ = try client.registerAudioPort("in", direction: .input)
        #expect(throws: JackError.portRegistrationFailed(port: "hosttest:in")) {
            _ = try client.registerAudioPort("in", direction: .output)
        }
        #expect(client.ports(matching: "^hosttest:") == ["hosttest:in"])
    }

    @Test("ports connect and disconnect by name; connecting twice is fine, disconnecting twice and unknown ports are refused")
    func connectAndDisconnect() throws {
        let server = try JackServer()
        defer { server.stop() }
        let device = try server.standInForDriverPorts()
        defer { device?.close() }
        let client = try JackClient(name: "hosttest", server: server.name)
        _ = try client.registerAudioPort("out", direction: .output)
        _ = try client.registerAudioPort("in", direction: .input)
        try client.activate()   // JACK connects only the ports of active clients
        try client.connect("hosttest:out", to: "hosttest:in")
        try client.connect("system:capture_1", to: "hosttest:in")
        // Connections are read from the graph as the server last published it: a change shows
        // once it has (a cycle later on JACK2), not always as the call returns.
        try waitFor("both connections in the graph") { Set(client.connections(of: "hosttest:in")) == ["hosttest:out", "system:capture_1"] }
        #expect(client.connections(of: "hosttest:out") == ["hosttest:in"])
        try client.connect("hosttest:out", to: "hosttest:in")
        try client.disconnect("hosttest:out", from: "hosttest:in")
        try waitFor("the disconnection in the graph") { client.connections(of: "hosttest:in") == ["system:capture_1"] }
        #expect {
            try client.disconnect("hosttest:out", from: "hosttest:in")
        } throws: { error in
            guard case let .disconnectFailed(source, destination, _) = error as? JackError else { return false }
            return source == "hosttest:out" && destination == "hosttest:in"
        }
        #expect {
            try client.connect("hosttest:out", to: "nobody:in")
        } throws: { error in
            guard case let .connectFailed(source, destination, _) = error as? JackError else { return false }
            return source == "hosttest:out" && destination == "nobody:in"
        }
        #expect(client.connections(of: "nobody:in").isEmpty)
    }

    @Test("a port's pretty name is set and read back through JACK's metadata; a port without one has none")
    func prettyNames() throws {
        let server = try JackServer()
        defer { server.stop() }
        let client = try JackClient(name: "hosttest", server: server.name)
        let port = try client.registerAudioPort("nav_in_1", direction: .input)
        _ = try client.registerAudioPort("music_in_1", direction: .input)
        #expect(client.setPrettyName(port, "Navigation (left)"))
        #expect(client.prettyName(of: "hosttest:nav_in_1") == "Navigation (left)")
        if JackServer.Implementation.current == .jackd {
            #expect(client.prettyName(of: "hosttest:music_in_1") == nil)
        } else {
            // PipeWire's libjack keeps port properties it heard of for the whole process, by an id
            // a new server hands out again: an earlier test's server may have named that id.
            #expect(client.prettyName(of: "hosttest:music_in_1") != "Navigation (left)")
        }
        #expect(client.prettyName(of: "nobody:in") == nil)
    }

    @Test("the process callback runs on JACK's thread once per period with the period's frames, and stops on deactivate")
    func processCallback() throws {
        let server = try JackServer(period: 128)
        defer { server.stop() }
        let client = try JackClient(name: "hosttest", server: server.name)
        let counter = UnsafeMutablePointer<CallbackCounter>.allocate(capacity: 1)
        counter.initialize(to: CallbackCounter())
        defer { counter.deinitialize(count: 1); counter.deallocate() }
        try client.setProcessCallback(countingCallback, argument: UnsafeMutableRawPointer(counter))
        try client.activate()
        try waitFor("ten process cycles") { counter.pointee.cycles.load(ordering: .acquiring) >= 10 }
        #expect(counter.pointee.frames.load(ordering: .relaxed) == 128)
        #expect(pthread_equal(client.processThread, counter.pointee.thread.load(ordering: .relaxed)) != 0,
                "the callback ran on the thread JACK reports as the client's process thread")
        client.deactivate()
        let stopped = counter.pointee.cycles.load(ordering: .acquiring)
        // The server's own clock moving on by several periods is the event that proves the point.
        let frame = client.frameTime
        try waitFor("the server to run four more periods") { client.frameTime &- frame >= 4 * 128 }
        #expect(counter.pointee.cycles.load(ordering: .acquiring) == stopped, "no cycle after deactivate()")
    }

    @Test("notifications arrive as events: ports registered, connected, disconnected and unregistered by another client")
    func portEvents() throws {
        let server = try JackServer()
        defer { server.stop() }
        let device = try server.standInForDriverPorts()
        defer { device?.close() }
        let events = EventLog()
        let client = try JackClient(name: "hosttest", server: server.name, events: events.record)
        try client.activate()
        let other = try JackClient(name: "other", server: server.name)
        // JACK2 announces a client's ports once that client is active.
        try other.activate()
        let port = try other.registerAudioPort("out", direction: .output)
        try waitFor("the registration event") { events.contains(.portRegistered("other:out")) }
        try other.connect("other:out", to: "system:playback_1")
        try waitFor("the connection event") { events.contains(.portsConnected("other:out", "system:playback_1")) }
        try other.disconnect("other:out", from: "system:playback_1")
        try waitFor("the disconnection event") { events.contains(.portsDisconnected("other:out", "system:playback_1")) }
        // Inactive first: an active JACK2 client keeps a port it gives up (SparePortTests).
        other.deactivate()
        other.unregister(port)
        // JACK2 names the port; PipeWire's libjack may no longer can.
        let names: Set<String> = JackServer.Implementation.current == .jackd ? ["other:out"] : ["other:out", ""]
        try waitFor("the unregistration event") {
            events.all.contains { if case let .portUnregistered(name) = $0 { names.contains(name) } else { false } }
        }
        #expect(!events.contains(.portRegistered("hosttest:in")), "nothing invented")
    }

    @Test("a period change made by someone else is reported (takeBufferSize, once) and in bufferSize")
    func bufferSizeChange() throws {
        let server = try JackServer(period: 256)
        defer { server.stop() }
        let events = EventLog()
        let client = try JackClient(name: "hosttest", server: server.name, events: events.record)
        try client.activate()
        #expect(client.bufferSize == 256)
        // JACK2 reports the period as the process thread starts; PipeWire only changes.
        if let first = client.takeBufferSize() { #expect(first == 256) }
        // jack_bufsize on jackd, PipeWire's settings on PipeWire.
        try server.changePeriod(to: 512)
        var reported: Int?
        try waitFor("the period to be reported") {
            reported = client.takeBufferSize() ?? reported
            return reported == 512
        }
        #expect(client.takeBufferSize() == nil, "taken once")
        #expect(client.bufferSize == 512)
    }

    @Test("reported latencies: an output that hears its inputs N frames late widens its capture latency by N at the top")
    func latencyReporting() throws {
        let server = try JackServer(period: 256)
        defer { server.stop() }
        // jackd's dummy driver reports a capture latency on system:capture_1; on PipeWire a client
        // standing in for it reports one period there.
        var device: JackClient?
        defer { device?.close() }
        if JackServer.Implementation.current == .pipewire {
            let system = try JackClient(name: "system", server: server.name, reportsLatency: true, events: { _ in })
            device = system
            let capture = try system.registerAudioPort("capture_1", direction: .output)
            system.setLatencies(inputs: [], outputs: [(capture, UInt32(server.period))])
            try system.activate()
        }
        let client = try JackClient(name: "hosttest", server: server.name, reportsLatency: true, events: { _ in })
        let input = try client.registerAudioPort("in", direction: .input)
        let late = try client.registerAudioPort("late", direction: .output)
        let plain = try client.registerAudioPort("plain", direction: .output)
        client.setLatencies(inputs: [input], outputs: [(late, 300), (plain, 0)])
        try client.activate()
        try client.connect("system:capture_1", to: "hosttest:in")
        // On PipeWire the stand-in's range is set just after its callback returns: wait for it.
        try waitFor("the device's capture latency") { (client.captureLatency(of: "system:capture_1")?.upperBound ?? 0) > 0 }
        let source = try #require(client.captureLatency(of: "system:capture_1"))
        #expect(source.upperBound > 0, "the dummy driver reports a capture latency")
        try waitFor("JACK to recompute the latencies") {
            client.captureLatency(of: "hosttest:late") == source.lowerBound...(source.upperBound + 300)
        }
        #expect(client.captureLatency(of: "hosttest:plain") == source)
        client.setLatencies(inputs: [input], outputs: [(late, 600), (plain, 0)], recompute: true)
        try waitFor("the recomputed latency") {
            client.captureLatency(of: "hosttest:late") == source.lowerBound...(source.upperBound + 600)
        }
    }

    @Test("an output with latency beyond what it feeds (a bridge's far end) reports that much playback latency, and its inputs include it; worked out afresh each time, never added twice")
    func latencyBeyond() throws {
        let server = try JackServer(period: 256)
        defer { server.stop() }
        // JACK2 asks for latencies only clients its driver's ports lead to: the input is fed
        // from system:capture_1 (on PipeWire, a client standing in for it).
        let device = try server.standInForDriverPorts()
        defer { device?.close() }
        let events = EventLog()
        let client = try JackClient(name: "hosttest", server: server.name, reportsLatency: true, events: events.record)
        defer { client.close() }
        // Two plain receivers whose inputs report no playback latency, as zita-j2n's do.
        let sink = try JackClient(name: "sink", server: server.name, events: { _ in })
        defer { sink.close() }
        _ = try sink.registerAudioPort("a", direction: .input)
        _ = try sink.registerAudioPort("b", direction: .input)
        try sink.activate()
        let input = try client.registerAudioPort("in", direction: .input)
        let bridged = try client.registerAudioPort("bridged", direction: .output)
        let plain = try client.registerAudioPort("plain", direction: .output)
        client.setLatencies(inputs: [input], outputs: [(bridged, 0), (plain, 0)], beyond: [bridged: 480])
        try client.activate()
        try client.connect("hosttest:bridged", to: "sink:a")
        try client.connect("hosttest:plain", to: "sink:b")
        try client.connect("system:capture_1", to: "hosttest:in")
        try waitFor("JACK to work out the latencies") {
            client.playbackLatency(of: "hosttest:bridged") == 480...480 && client.playbackLatency(of: "hosttest:in") == 0...480
        }
        #expect(client.playbackLatency(of: "hosttest:plain") == 0...0)
        #expect(client.downstreamPlaybackLatency(of: bridged) == 0...0, "what it feeds reports none")
        try waitFor("the client told that its latencies were worked out") { events.contains(.latenciesChanged) }
        // Recomputed again and again: the far end's share is put on what the port feeds, not on
        // what the port said last time (JACK2 works an output's latency out from its connections
        // before every callback, so there it would not compound anyway; PipeWire keeps what was set).
        for _ in 0..<4 {
            client.setLatencies(inputs: [input], outputs: [(bridged, 0), (plain, 0)], beyond: [bridged: 960], recompute: true)
        }
        try waitFor("the recomputed latency") { client.playbackLatency(of: "hosttest:in") == 0...960 }
        Thread.sleep(forTimeInterval: 0.2)   // room for a wrong, compounded, answer to show
        #expect(client.playbackLatency(of: "hosttest:bridged") == 960...960)
        #expect(client.playbackLatency(of: "hosttest:in") == 0...960)
    }

    @Test("a client whose server is killed (SIGKILL) sees shutdownReason become non-nil on its own, with no event or handler involved; close() then works")
    func serverKilled() throws {
        let server = try JackServer()
        defer { server.stop() }
        // No event handler at all: the flag alone must tell.
        let client = try JackClient(name: "hosttest", server: server.name)
        _ = try client.registerAudioPort("in", direction: .input)
        try client.activate()
        #expect(client.shutdownReason == nil, "nil while the server is there")
        server.kill9()
        try waitFor("shutdownReason after the server was killed") { client.shutdownReason != nil }
        let reason = try #require(client.shutdownReason)
        #expect(!reason.isEmpty)
        client.close()
        #expect(!client.isOpen)
        #expect(client.shutdownReason == reason, "still readable after close()")
    }

    @Test("a client with an event handler is sent serverShutDown when its server is killed, once, with shutdownReason already set; closing it leaves no descriptor open")
    func serverShutDownEvent() throws {
        let server = try JackServer()
        defer { server.stop() }
        let pipesBefore = Self.openPipes()
        let events = EventLog()
        let client = try JackClient(name: "hosttest", server: server.name, events: events.record)
        // The client's own: the two ends of its shutdown pipe.
        let pipes = Self.openPipes().subtracting(pipesBefore)
        #expect(pipes.count == 2, "\(pipes)")
        _ = try client.registerAudioPort("in", direction: .input)
        try client.activate()
        server.kill9()
        try waitFor("serverShutDown after the server was killed") { events.contains(.serverShutDown) }
        // The flag is set before the event is sent.
        #expect(client.shutdownReason != nil)
        Thread.sleep(forTimeInterval: 0.2)   // spacing only: a second event would have come by now
        #expect(events.all.filter { $0 == .serverShutDown }.count == 1)
        client.close()
        // The pipe's two ends are closed by the watch's cancel handler, on its own queue.
        try waitFor("the shutdown pipe's descriptors to be closed") { Self.openPipes().isDisjoint(with: pipes) }
    }

    /// Every open descriptor that is a pipe end, as "descriptor → pipe:[inode]".
    static func openPipes() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return Set(names.compactMap { name in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
                  target.hasPrefix("pipe:") else { return nil }
            return "\(name) → \(target)"
        })
    }
}

/// What the counting process callback saw, in memory the test owns.
struct CallbackCounter: ~Copyable {
    let cycles = Atomic<Int>(0)
    let frames = Atomic<UInt32>(0)
    let thread = Atomic<UInt>(0)
}

/// Counts cycles; real-time safe (atomics only).
let countingCallback: JackClient.ProcessCallback = { frames, argument in
    let counter = argument!.assumingMemoryBound(to: CallbackCounter.self)
    counter.pointee.frames.store(frames, ordering: .relaxed)
    counter.pointee.thread.store(pthread_self(), ordering: .relaxed)
    counter.pointee.cycles.add(1, ordering: .releasing)
    return 0
}

/// The events a client's handler received, in order.
/// An NSLock, not Synchronization's Mutex, which ThreadSanitizer cannot see on Linux.
final class EventLog: @unchecked Sendable {
    // @unchecked: `events` is read and written only under `lock`.
    private let lock = NSLock()
    private var events: [JackEvent] = []
    var record: @Sendable (JackEvent) -> Void { { [self] event in lock.withLock { events.append(event) } } }
    var all: [JackEvent] { lock.withLock { events } }
    func contains(_ event: JackEvent) -> Bool { all.contains(event) }
}

/// Polls `condition` until it holds or `timeout` seconds pass.
func waitFor(_ what: String, timeout: Double = 5, _ condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return }
        Thread.sleep(forTimeInterval: 0.01)
    }
    struct TimedOut: Error, CustomStringConvertible { let description: String }
    throw TimedOut(description: "timed out after \(timeout) s waiting for \(what)")
}
