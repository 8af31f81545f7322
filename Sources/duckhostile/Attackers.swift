import Foundation
import JackRig
import OSCTransport

/// One kind of hostile traffic from one host, on a thread of its own until `stop()`: bounded in
/// rate, in connections held and in time (it stops when told). All of it goes to this machine's
/// loopback.
final class Attacker: @unchecked Sendable {
    // @unchecked: the counters are touched under `lock`; everything else is the thread's own.
    struct Counts {
        /// Datagrams, requests or frames sent.
        var sent = 0
        /// Connections made, and the ones the router closed while this held them.
        var opened = 0
        var closedByRouter = 0
        /// Connections that could not be made (refused, or no answer to the handshake in time).
        var notConnected = 0
        /// Connections held at the last look.
        var held = 0
    }

    enum Kind: CustomStringConvertible {
        /// OSC-looking and random datagrams to the OSC port, `rate` a second.
        case udpFlood(rate: Int)
        /// `count` OSC TCP connections opened and held: silent, or with a frame never finished.
        case oscHold(count: Int)
        /// OSC TCP connections opened, sent random bytes and dropped, `rate` a second.
        case oscChurn(rate: Int)
        /// `count` HTTP connections held: silent, or sending a header a byte a second.
        case httpHold(count: Int)
        /// Broken or oversized HTTP requests on connections that read nothing, `rate` a second.
        case httpJunk(rate: Int)
        /// `count` WebSockets that ask for meters at 20 Hz and never read; some send broken frames.
        case webSocketHog(count: Int)

        var description: String {
            switch self {
            case let .udpFlood(rate): "UDP garbage and OSC, \(rate)/s"
            case let .oscHold(count): "\(count) silent OSC TCP connections"
            case let .oscChurn(rate): "OSC TCP open, garbage, drop, \(rate)/s"
            case let .httpHold(count): "\(count) HTTP connections held (a third slow-loris)"
            case let .httpJunk(rate): "broken HTTP requests, \(rate)/s"
            case let .webSocketHog(count): "\(count) WebSockets asking for meters, never reading"
            }
        }
    }

    let host: String
    let kind: Kind
    let oscPort: UInt16
    let httpPort: UInt16
    private let lock = NSLock()
    private var counts = Counts()
    private var running = true
    private let finished = DispatchSemaphore(value: 0)
    private var random: SplitMix

    /// Whether `host` is outside the router's `osc.allow`.
    let refused: Bool

    init(host: String, refused: Bool, kind: Kind, oscPort: UInt16, httpPort: UInt16, seed: UInt64) {
        self.host = host
        self.refused = refused
        self.kind = kind
        self.oscPort = oscPort
        self.httpPort = httpPort
        random = SplitMix(seed: seed)
    }

    var snapshot: Counts { lock.withLock { counts } }

    func start() {
        Thread.detachNewThread { [self] in
            switch kind {
            case let .udpFlood(rate): udpFlood(rate: rate)
            case let .oscHold(count): hold(count: count, port: oscPort, opening: { _ in [] }, trickle: { [0, 0, 1, 0] })
            case let .oscChurn(rate): churn(rate: rate, port: oscPort) { $0.garbage(upTo: 512) }
            case let .httpHold(count): hold(count: count, port: httpPort, opening: { $0 % 3 == 0 ? Array("GET /".utf8) : [] },
                                            trickle: { Array("X".utf8) })
            case let .httpJunk(rate): churn(rate: rate, port: httpPort) { $0.junkRequest(port: self.httpPort) }
            case let .webSocketHog(count): webSocketHog(count: count)
            }
            finished.signal()
        }
    }

    func stop() {
        lock.withLock { running = false }
        finished.wait()
    }

    private var isRunning: Bool { lock.withLock { running } }
    private func count(_ change: (inout Counts) -> Void) { lock.withLock { change(&counts) } }

    /// Calls `round` every `interval` seconds until stopped.
    private func every(_ interval: Double, _ round: () -> Void) {
        var next = Date()
        while isRunning {
            if Date() < next {
                Thread.sleep(forTimeInterval: 0.02)
                continue
            }
            next = next.addingTimeInterval(interval)
            round()
        }
    }

    /// Calls `step` `rate` times a second, evenly, until stopped.
    private func paced(rate: Int, _ step: () -> Void) {
        let start = Date()
        var done = 0
        while isRunning {
            let due = Int(Date().timeIntervalSince(start) * Double(rate))
            while done < due { step(); done += 1 }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    private func udpFlood(rate: Int) {
        let fd = Sockets.udp(from: host)
        guard fd >= 0 else { return count { $0.notConnected += 1 } }
        defer { close(fd) }
        // Changes too from a refused host (each must be refused); an allowed one only asks and
        // sends what is not valid (its changes would be carried out, as they should).
        var messages = [OSCMessage("/state"), OSCMessage("/ping", [.int32(1)]), OSCMessage("/meters", [.float(20)]),
                        OSCMessage("/app/nosuchapp/volume", [.float(.nan)]), OSCMessage("/no/such/path")]
        if refused {
            messages += [OSCMessage("/app/music/volume", [.float(0)]), OSCMessage("/app/register", [.string("intruder"), .string("playback")])]
        }
        paced(rate: rate) {
            let packet = random.next(10) < 6 ? OSCCodec.encode(messages[random.next(messages.count)]) : random.garbage(upTo: 512)
            Sockets.send(fd, packet, toPort: oscPort)
            count { $0.sent += 1 }
        }
    }

    /// Holds `count` connections to `port`, each opened with `opening(index)`; every 250 ms each
    /// held one that has something to trickle sends one more piece of it (a slow peer), and a
    /// connection the router closed is opened again (its close counted).
    private func hold(count total: Int, port: UInt16, opening: (Int) -> [UInt8], trickle: () -> [UInt8]) {
        var held: [(fd: Int32, trickles: Bool)] = []
        defer { for connection in held { close(connection.fd) } }
        every(0.25) {
            held.removeAll { connection in
                guard Sockets.peerClosed(connection.fd) else { return false }
                close(connection.fd)
                count { $0.closedByRouter += 1 }
                return true
            }
            // At most 100 new connections a round: the router sees them arrive, not a wall.
            for index in 0..<max(0, min(total - held.count, 100)) where isRunning {
                let fd = Sockets.tcp(from: host, toPort: port, wait: false)
                guard fd >= 0 else {
                    count { $0.notConnected += 1 }
                    continue
                }
                let first = opening(index)
                if !first.isEmpty { Sockets.write(fd, first) }
                held.append((fd, !first.isEmpty))
                count { $0.opened += 1 }
            }
            for connection in held where connection.trickles { Sockets.write(connection.fd, trickle()) }
            count { $0.held = held.count }
        }
    }

    /// Opens a connection to `port` `rate` times a second, writes `bytes(&random)` and closes it
    /// at once, reading nothing.
    private func churn(rate: Int, port: UInt16, bytes: (inout SplitMix) -> [UInt8]) {
        paced(rate: rate) {
            let fd = Sockets.tcp(from: host, toPort: port, wait: true, timeout: 0.5)
            guard fd >= 0 else { return count { $0.notConnected += 1 } }
            Sockets.write(fd, bytes(&random))
            close(fd)
            count { $0.opened += 1; $0.sent += 1 }
        }
    }

    /// Keeps `count` WebSockets open, each asking for meters at 20 Hz and never reading; every
    /// second one of them sends a broken frame (the router closes it) and is opened again.
    private func webSocketHog(count total: Int) {
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        let meters = webSocketFrame(opcode: 0x2, OSCCodec.encode(OSCMessage("/meters", [.float(20)])))
        every(1) {
            sockets.removeAll { fd in
                // Still open: the router would have closed it; reading would drain its meters.
                // POLLRDHUP (Linux, 0x2000): the router shut its side, seen without reading.
                let readHangUp: Int16 = 0x2000
                var poller = pollfd(fd: fd, events: readHangUp, revents: 0)
                guard poll(&poller, 1, 0) == 1, poller.revents & (readHangUp | Int16(POLLHUP) | Int16(POLLERR)) != 0 else { return false }
                close(fd)
                count { $0.closedByRouter += 1 }
                return true
            }
            while sockets.count < total && isRunning {
                let fd = Sockets.tcp(from: host, toPort: httpPort, wait: true, timeout: 1)
                guard fd >= 0 else {
                    count { $0.notConnected += 1 }
                    break
                }
                Sockets.write(fd, webSocketUpgrade(port: httpPort))
                let head = Sockets.read(fd, until: headComplete)
                guard String(decoding: head.prefix(12), as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
                    close(fd)
                    count { $0.notConnected += 1 }
                    break
                }
                Sockets.write(fd, meters)
                sockets.append(fd)
                count { $0.opened += 1; $0.sent += 1 }
            }
            if let fd = sockets.first {
                // A frame that says it is 2^62 bytes long, unmasked: a protocol error.
                Sockets.write(fd, [0x82, 127, 0x40, 0, 0, 0, 0, 0, 0, 0])
                count { $0.sent += 1 }
            }
            count { $0.held = sockets.count }
        }
    }
}

extension SplitMix {
    /// 1 to `limit` random bytes that never start as OSC does ('/' or '#').
    mutating func garbage(upTo limit: Int) -> [UInt8] {
        [0xFF] + (0..<next(limit)).map { _ in UInt8(next(256)) }
    }

    /// A broken HTTP request: random bytes, a request line with no end, a header block over the
    /// router's limit, or a body longer than it takes.
    mutating func junkRequest(port: UInt16) -> [UInt8] {
        switch next(4) {
        case 0: return garbage(upTo: 2048)
        case 1: return Array("GET /\(String(repeating: "a", count: 8000))".utf8)
        case 2: return Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nX: \(String(repeating: "b", count: 20_000))\r\n\r\n".utf8)
        default: return Array("POST / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 1000000\r\n\r\n".utf8) + garbage(upTo: 4096)
        }
    }
}
