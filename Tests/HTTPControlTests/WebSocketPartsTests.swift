import Foundation
@testable import HTTPControl
import Synchronization
import Testing

/// The parts of the WebSocket that need no network: the JSON commands, who may open one, the
/// outbound queue's bounds, the path notifications.
@Suite("OSCQuery WebSocket parts")
struct WebSocketPartsTests {
    @Test("LISTEN and IGNORE decode; anything else is refused with a reason, never a trap")
    func commands() {
        #expect(OSCQueryCommand.decode(#"{"COMMAND": "LISTEN", "DATA": "/app/music/volume"}"#) == .success(.listen("/app/music/volume")))
        #expect(OSCQueryCommand.decode(#"{"DATA": "/x", "COMMAND": "IGNORE"}"#) == .success(.ignore("/x")))
        let bad = ["", "null", "[]", "42", "{", #"{"COMMAND": 1, "DATA": "/x"}"#, #"{"COMMAND": "LISTEN"}"#,
                   #"{"COMMAND": "LISTEN", "DATA": "x"}"#, #"{"COMMAND": "PATH_ADDED", "DATA": "/x"}"#,
                   #"{"COMMAND": "LISTEN", "DATA": ["/x"]}"#, "{\"COMMAND\": \"LISTEN\", \"DATA\": \"/\(String(repeating: "a", count: 2000))\"}",
                   String(repeating: "[", count: 100_000)]
        for text in bad {
            guard case let .failure(error) = OSCQueryCommand.decode(text) else {
                Issue.record("accepted \(text.prefix(80))")
                continue
            }
            #expect(!error.description.isEmpty)
        }
    }

    @Test("a WebSocket is refused to another site's page and to a Host that is not this machine's; programs without Origin and the router's own page pass")
    func origins() {
        let names = ["rig"]
        func refused(_ host: String?, _ origin: String?) -> Bool { OriginCheck.refusal(host: host, origin: origin, machineNames: names) != nil }
        #expect(!refused("127.0.0.1:9952", nil))
        #expect(!refused("127.0.0.1:9952", "http://127.0.0.1:9952"))
        #expect(!refused("localhost:9952", "http://localhost:9952"))
        #expect(!refused("[::1]:9952", "http://[::1]:9952"))
        #expect(!refused("rig.local:9952", "http://rig.local:9952"))
        #expect(!refused("RIG:9952", "http://rig:9952"))
        #expect(!refused("192.168.1.20:9952", "http://192.168.1.20:9952"))
        #expect(refused("127.0.0.1:9952", "http://evil.example"))
        #expect(refused("127.0.0.1:9952", "http://127.0.0.1:8080"))
        #expect(refused("127.0.0.1:9952", "null"))
        #expect(refused("evil.example:9952", "http://evil.example:9952"), "DNS rebinding: the same origin, but not this machine's name")
        #expect(refused("evil.example:9952", nil))
        #expect(refused(nil, nil))
        #expect(refused("", nil))
        #expect(refused("[::1:9952", nil))
    }

    @Test("the outbound queue refuses past its limit, keeps only the latest conflatable frame, and hands frames in order")
    func queue() {
        let queue = OutboundQueue(limit: 10)
        #expect(queue.push(.binary([1, 2, 3, 4])))
        #expect(queue.push(.text("abcd")))
        #expect(!queue.push(.binary([5, 6, 7])), "4 + 4 + 3 > 10")
        #expect(queue.push(.binary([8, 9])))
        #expect(queue.push(.binary([1]), conflatable: true))
        #expect(queue.push(.binary([2]), conflatable: true), "a meter never fails: it replaces the one waiting")
        #expect(queue.queuedBytes == 10)
        #expect(queue.take() == [.binary([1, 2, 3, 4]), .text("abcd"), .binary([8, 9]), .binary([2])])
        #expect(queue.queuedBytes == 0)
        #expect(queue.push(.binary([5, 6, 7])), "room again once taken")
        queue.close()
        #expect(queue.take() == [], "what waited at close is dropped")
        #expect(!queue.push(.text("late")))
    }

    @Test("the writer is woken by the first push after it found the queue empty, once per burst, and at once if frames wait when it is named")
    func wakes() {
        let queue = OutboundQueue(limit: 100)
        let wakes = Mutex(0)
        queue.push(.text("before"))
        queue.setWriter { wakes.withLock { $0 += 1 } }
        #expect(wakes.withLock { $0 } == 1, "a frame waited when the writer was named")
        queue.push(.text("a"))
        queue.push(.binary([1]), conflatable: true)
        #expect(wakes.withLock { $0 } == 1, "busy: not woken again")
        #expect(queue.take() == [.text("before"), .text("a"), .binary([1])])
        queue.push(.text("b"))
        #expect(wakes.withLock { $0 } == 1, "still busy until it finds the queue empty")
        #expect(queue.take() == [.text("b")])
        #expect(queue.take() == [])
        queue.push(.text("c"))
        queue.push(.text("d"))
        #expect(wakes.withLock { $0 } == 2, "idle: the next push wakes it, once")
        #expect(queue.take() == [.text("c"), .text("d")])
        #expect(queue.take() == [], "idle again")
        queue.close()
        queue.push(.text("e"))
        #expect(wakes.withLock { $0 } == 2, "closed: an idle writer is not woken")
    }

    @Test("a push that asks for the later wake wakes the idle writer through it, once per burst; without one named, through the wake")
    func laterWake() {
        let queue = OutboundQueue(limit: 100)
        let wakes = Mutex<[String]>([])
        queue.setWriter({ wakes.withLock { $0.append("now") } }, later: { wakes.withLock { $0.append("later") } })
        queue.push(.binary([1]), conflatable: true, wakingLater: true)
        queue.push(.binary([2]), wakingLater: true)
        #expect(wakes.withLock { $0 } == ["later"])
        #expect(queue.take() == [.binary([2]), .binary([1])])
        #expect(queue.take() == [])
        queue.push(.text("a"))
        #expect(wakes.withLock { $0 } == ["later", "now"])
        let plain = OutboundQueue(limit: 100)
        plain.setWriter { wakes.withLock { $0.append("plain") } }
        plain.push(.text("b"), wakingLater: true)
        #expect(wakes.withLock { $0 } == ["later", "now", "plain"])
    }

    @Test("the writer takes at most a batch's bytes (one frame at least), the latest meter after every other frame")
    func batches() {
        let queue = OutboundQueue(limit: 1000)
        queue.push(.binary([UInt8](repeating: 1, count: 40)))
        queue.push(.binary([UInt8](repeating: 2, count: 40)))
        queue.push(.binary([9]), conflatable: true)
        queue.push(.binary([UInt8](repeating: 3, count: 100)))
        #expect(queue.take(upTo: 90) == [.binary([UInt8](repeating: 1, count: 40)), .binary([UInt8](repeating: 2, count: 40))])
        #expect(queue.queuedBytes == 100)
        #expect(queue.take(upTo: 90) == [.binary([UInt8](repeating: 3, count: 100)), .binary([9])], "a frame over the batch goes alone")
        #expect(queue.queuedBytes == 0)
    }

    @Test("a new app is announced by its own path, not each of its methods")
    func topmost() {
        let added: Set<String> = ["/app/nav", "/app/nav/volume", "/app/nav/gain", "/route/hdmi", "/route/hdmi/available", "/x/y"]
        #expect(ListenHub.topmost(added) == ["/app/nav", "/route/hdmi", "/x/y"])
    }
}
