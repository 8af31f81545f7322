import Foundation
import JackHost
import JackRig
import Testing

/// Ports an active client gives up on JACK2 are kept as spares rather than unregistered: JACK2's
/// libjack frees a port's node of the client's own port list while its notification thread may
/// be walking that list for a latency recompute (jackaudio/jack2#216), which crashed the process
/// under app churn. On PipeWire, and on an inactive client, ports are unregistered.
@Suite("JackHost: spare ports", .serialized)
struct SparePortTests {
    static let keepsSpares = JackServer.Implementation.current == .jackd

    @Test("an active client's port given up leaves the graph under its name, with its connections and pretty name (others hear of it); on JACK2 the next port of its direction is that port renamed, and an old handle changes nothing")
    func givenUpAndReused() throws {
        let server = try JackServer()
        defer { server.stop() }
        let device = try server.standInForDriverPorts()
        defer { device?.close() }
        let events = EventLog()
        let observer = try JackClient(name: "observer", server: server.name, events: events.record)
        try observer.activate()
        let client = try JackClient(name: "hosttest", server: server.name)
        defer { client.close() }
        try client.setProcessCallback({ _, _ in 0 }, argument: nil)
        try client.activate()
        let input = try client.registerAudioPort("in_1", direction: .input)
        #expect(client.setPrettyName(input, "music L"))
        try client.connect("system:capture_1", to: "hosttest:in_1")
        try waitFor("the connection") { observer.connections(of: "hosttest:in_1") == ["system:capture_1"] }

        client.unregister(input)
        try waitFor("the port's name to leave the graph") { !observer.portExists("hosttest:in_1") }
        try waitFor("another client to hear the port has gone") { events.contains(.portUnregistered("hosttest:in_1")) }
        #expect(observer.connections(of: "system:capture_1").isEmpty, "its connection went with it")
        #expect(client.portCount == (Self.keepsSpares ? 1 : 0))
        if Self.keepsSpares {
            #expect(client.spareNames == ["hosttest:~spare_in_1"])
            try waitFor("the spare in the graph, announced as a port come") { events.contains(.portRegistered("hosttest:~spare_in_1")) }
            #expect(observer.portExists("hosttest:~spare_in_1"))
            #expect(observer.prettyName(of: "hosttest:~spare_in_1") == nil, "the spare has no pretty name")
            // Given up twice: nothing more happens.
            client.unregister(input)
            #expect(client.spareNames == ["hosttest:~spare_in_1"])
            // A patchbay connects the spare meanwhile.
            try observer.connect("system:capture_2", to: "hosttest:~spare_in_1")
        } else {
            #expect(client.spareNames.isEmpty)
            #expect(!observer.ports(matching: "^hosttest:").contains { $0.contains("spare") })
        }

        // An output is no use for an input: a new port.
        let output = try client.registerAudioPort("out_1", direction: .output)
        #expect(output.handle != input.handle)
        #expect(client.spareNames == (Self.keepsSpares ? ["hosttest:~spare_in_1"] : []))
        if Self.keepsSpares {
            // A name already taken is refused (JACK's rename would not check), and the spare is
            // kept for the next. (PipeWire's libjack registers a second port of a name anyway.)
            #expect(throws: JackError.portRegistrationFailed(port: "hosttest:out_1")) {
                _ = try client.registerAudioPort("out_1", direction: .input)
            }
            #expect(client.spareNames == ["hosttest:~spare_in_1"])
        }

        let again = try client.registerAudioPort("nav_in_1", direction: .input)
        #expect(again.name == "hosttest:nav_in_1")
        #expect((again.handle == input.handle) == Self.keepsSpares, "on JACK2 the spare, renamed")
        #expect(client.spareNames.isEmpty)
        try waitFor("the new name in the graph, announced as a port come") {
            observer.portExists("hosttest:nav_in_1") && events.contains(.portRegistered("hosttest:nav_in_1"))
        }
        #expect(observer.connections(of: "hosttest:nav_in_1").isEmpty, "what a patchbay connected to the spare is not carried over")
        try client.connect("system:capture_1", to: "hosttest:nav_in_1")
        // Another client sees a connection when its server tells it (PipeWire: on that client's own loop).
        try waitFor("the connection") { observer.connections(of: "hosttest:nav_in_1") == ["system:capture_1"] }
        // The handle of the port as it was (in_1) is not the port it is now: giving it up again
        // leaves nav_in_1 alone.
        client.unregister(input)
        #expect(observer.portExists("hosttest:nav_in_1") && client.spareNames.isEmpty)
        #expect(Set(observer.ports(matching: "^hosttest:")) == ["hosttest:nav_in_1", "hosttest:out_1"])

        // Inactive, the client unregisters for real (JACK sends it no latency recompute then).
        client.deactivate()
        client.unregister(again)
        #expect(client.spareNames.isEmpty)
        try waitFor("the port to leave the graph") { observer.ports(matching: "^hosttest:") == ["hosttest:out_1"] }
    }

    @Test("a client with 200 spares closes at once and they leave the graph with it (unregistered one by one first: left to jack_client_close, so many ports could hang jackd, docs/RELIABILITY.md)")
    func manySparesClose() throws {
        let server = try JackServer()
        defer { server.stop() }
        let observer = try JackClient(name: "observer", server: server.name)
        let client = try JackClient(name: "hosttest", server: server.name)
        try client.setProcessCallback({ _, _ in 0 }, argument: nil)
        try client.activate()
        let ports = try (1...200).map { n in try client.registerAudioPort("in_\(n)", direction: .input) }
        for port in ports { #expect(client.setPrettyName(port, "port \(port.name)")) }
        for port in ports { client.unregister(port) }
        #expect(client.spareNames.count == (Self.keepsSpares ? 200 : 0))
        #expect(client.portCount == client.spareNames.count)
        // Reused again and again, the spares do not grow.
        for round in 0..<3 {
            let again = try (1...200).map { n in try client.registerAudioPort("r\(round)_\(n)", direction: .input) }
            for port in again { client.unregister(port) }
        }
        #expect(client.spareNames.count == (Self.keepsSpares ? 200 : 0))
        nonisolated(unsafe) let closing = client
        let closed = DispatchSemaphore(value: 0)
        Thread { closing.close(); closed.signal() }.start()
        #expect(closed.wait(timeout: .now() + 20) == .success, "close() returned")
        try waitFor("every port of the client to leave the graph") { observer.ports(matching: "^hosttest:").isEmpty }
    }
}
