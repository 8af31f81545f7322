import Foundation
import JackHost
import JackRig
import Testing

/// Calls that wait for the server's answer have a deadline: libjack's requests have none, and a
/// server frozen with SIGSTOP (or hung in its driver) would hold the caller, the router's control
/// queue, until it goes on or dies.
@Suite("JackHost: requests with a deadline", .serialized)
struct ServerRequestTests {
    @Test("a frozen server: a request fails after the deadline, the next at once, a port given up waits; once the server answers, what the late request registered is given up and nothing holds an app's name")
    func frozenServer() throws {
        let server = try JackServer()
        defer { server.stop() }
        let observer = try JackClient(name: "observer", server: server.name)
        try observer.activate()
        let client = try JackClient(name: "hosttest", server: server.name, answerSeconds: 0.5)
        defer { client.close() }
        try client.setProcessCallback({ _, _ in 0 }, argument: nil)
        try client.activate()
        let kept = try client.registerAudioPort("kept_1", direction: .input)
        let given = try client.registerAudioPort("given_1", direction: .input)
        #expect(client.unansweredRequest == nil)

        server.suspend()
        defer { server.resume() }
        var asked = Date()
        #expect {
            _ = try client.registerAudioPort("late_1", direction: .input)
        } throws: { error in
            guard case .serverNotAnswering = error as? JackError else { return false }
            return true
        }
        let waited = Date().timeIntervalSince(asked)
        #expect(waited >= 0.45 && waited < 3, "waited \(waited) s")
        let unanswered = try #require(client.unansweredRequest)
        #expect(unanswered.what == "register port 'hosttest:late_1'")
        #expect(unanswered.seconds >= 0.45, "waited since it was asked")
        // Nothing more is asked of it meanwhile: at once, whatever is asked.
        asked = Date()
        #expect {
            try client.connect("hosttest:given_1", to: "observer:nothing")
        } throws: { error in
            guard case .serverNotAnswering = error as? JackError else { return false }
            return true
        }
        client.unregister(given)
        #expect(!client.setPrettyName(kept, "kept"))
        #expect(Date().timeIntervalSince(asked) < 0.3, "refused at once")
        #expect(observer.portExists("hosttest:given_1"), "given up once the server answers")

        server.resume()
        try waitFor("the late request to return") { client.unansweredRequest == nil }
        // The next call puts right what the late one did, and what waited.
        let next = try client.registerAudioPort("next_1", direction: .input)
        #expect(next.name == "hosttest:next_1")
        // Another client hears of the graph's changes a moment later on PipeWire: waited for.
        try waitFor("the late port and the one given up to leave the graph under their names, and the next to join it") {
            !observer.portExists("hosttest:late_1") && !observer.portExists("hosttest:given_1") && observer.portExists("hosttest:next_1")
        }
        #expect(observer.portExists("hosttest:kept_1"))
        // The names are free again for an app.
        let again = try client.registerAudioPort("late_1", direction: .input)
        #expect(again.name == "hosttest:late_1")
        // kept_1, next_1 and late_1: on JACK2 the two ports given up came back as the next two
        // (spares), so the client holds no more than it ever held at once.
        #expect(client.portCount == 3, "\(client.spareNames)")
        #expect(client.spareNames.isEmpty)
    }

    @Test("a client whose request the frozen server has not answered closes once the server goes on, from another thread, without a crash")
    func closeAfterUnansweredRequest() throws {
        let server = try JackServer()
        defer { server.stop() }
        let client = try JackClient(name: "hosttest", server: server.name, answerSeconds: 0.3)
        try client.setProcessCallback({ _, _ in 0 }, argument: nil)
        try client.activate()
        server.suspend()
        defer { server.resume() }
        #expect(throws: JackError.self) { _ = try client.registerAudioPort("late_1", direction: .output) }
        let closed = Locked(false)
        let handover = UncheckedBox(client)
        Thread.detachNewThread {
            handover.value.close()
            closed.set(true)
        }
        // Only a wrong close could end this wait early: the server is frozen.
        Thread.sleep(forTimeInterval: 0.3)
        #expect(!closed.get(), "closed while the server was frozen")
        server.resume()
        try waitFor("the close to return once the server answers") { closed.get() }
        #expect(!client.isOpen)
    }
}

/// A value shared by the test and a thread it starts, under a lock.
private final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ value: Value) { lock.withLock { self.value = value } }
}

private final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
