import Foundation
import JackRig
import OSCTransport

/// The allowed control surface being measured, on 127.0.0.1: `/ping` over UDP at a steady rate
/// (each answer's latency kept), and once a second `/state` over OSC TCP, a plain HTTP GET and a
/// `/ping` over a fresh WebSocket. Every one of them must be answered within `patience` seconds.
/// Runs on two threads of its own (the UDP pings are never held up by the slower checks) until
/// `stop()`.
final class Probe: @unchecked Sendable {
    // @unchecked: `results` is touched under `lock`; the rest is the probe thread's own.
    struct Results {
        var latencies: [Double] = []
        var sent = 0
        var lost = 0
        var stateAsked = 0, stateAnswered = 0
        var httpAsked = 0, httpAnswered = 0
        var webSocketAsked = 0, webSocketAnswered = 0
        var failures: [String] = []

        mutating func fail(_ what: String) {
            if failures.count < 12 { failures.append(what) }
        }

        /// The latency at quantile `q` (0...1) in milliseconds, or nil with none.
        func milliseconds(_ q: Double) -> Double? {
            guard !latencies.isEmpty else { return nil }
            let sorted = latencies.sorted()
            return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))] * 1000
        }
    }

    let oscPort: UInt16
    let httpPort: UInt16
    let rate: Double
    let patience: Double
    private let lock = NSLock()
    private var results = Results()
    private var running = true
    private let finished = DispatchSemaphore(value: 0)

    init(oscPort: UInt16, httpPort: UInt16, rate: Double, patience: Double = 2) {
        self.oscPort = oscPort
        self.httpPort = httpPort
        self.rate = rate
        self.patience = patience
    }

    /// What was measured since the last call (the counts start again from zero).
    func take() -> Results {
        lock.withLock {
            defer { results = Results() }
            return results
        }
    }

    func start() {
        Thread.detachNewThread { [self] in
            pingOverUDP()
            finished.signal()
        }
        Thread.detachNewThread { [self] in
            askEverySecond()
            finished.signal()
        }
    }

    func stop() {
        lock.withLock { running = false }
        finished.wait()
        finished.wait()
    }

    private func record(_ change: (inout Results) -> Void) {
        lock.withLock { change(&results) }
    }

    /// `/ping` over UDP, `rate` a second, each answer's latency kept (the UDP thread).
    private func pingOverUDP() {
        guard let udp = try? OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: oscPort)) else {
            record { $0.fail("the probe could not open its UDP socket") }
            return
        }
        var token: Int32 = 0
        var waiting: [Int32: Date] = [:]
        let start = Date()
        var pings = 0
        while lock.withLock({ running }) {
            let now = Date().timeIntervalSince(start)
            while Double(pings) < now * rate {
                pings += 1
                token &+= 1
                if (try? udp.send(OSCMessage("/ping", [.int32(token)]))) != nil {
                    waiting[token] = Date()
                    record { $0.sent += 1 }
                }
            }
            while let packet = try? udp.receive(timeout: 0.002) {
                for message in OSCClient.messages(in: packet) where message.path == "/reply" {
                    guard case let .int32(answered)? = message.arguments.last, let asked = waiting.removeValue(forKey: answered) else { continue }
                    let latency = Date().timeIntervalSince(asked)
                    record { $0.latencies.append(latency) }
                }
            }
            for (token, asked) in waiting where Date().timeIntervalSince(asked) > patience {
                waiting.removeValue(forKey: token)
                record { $0.lost += 1; $0.fail("a UDP /ping unanswered after \(patience) s") }
            }
        }
    }

    /// Once a second, each on a connection of its own made then (a surface that connects during
    /// the attack): `/state` over OSC TCP, an HTTP GET, a WebSocket `/ping` (the other thread).
    private func askEverySecond() {
        var next = Date().addingTimeInterval(1)
        while lock.withLock({ running }) {
            let wait = next.timeIntervalSinceNow
            if wait > 0 { Thread.sleep(forTimeInterval: min(wait, 0.1)); continue }
            next = next.addingTimeInterval(1)
            askState()
            askHTTP()
            askWebSocket()
        }
    }

    private func askState() {
        record { $0.stateAsked += 1 }
        guard let tcp = try? OSCClient(OSCURL(transport: .tcp, host: "127.0.0.1", port: oscPort)),
              (try? tcp.send(OSCMessage("/state"))) != nil,
              (try? tcp.receive(timeout: patience, until: { $0.path == "/reply" && $0.arguments.first == .string("/state") })) != nil else {
            record { $0.fail("/state over a new OSC TCP connection unanswered within \(patience) s") }
            return
        }
        record { $0.stateAnswered += 1 }
    }

    /// A new connection to the HTTP port, or nil (the failure recorded under `what`).
    private func connectHTTP(_ what: String) -> Int32? {
        let fd = Sockets.tcp(from: "127.0.0.1", toPort: httpPort, wait: true, timeout: patience)
        guard fd >= 0 else {
            record { $0.fail("\(what): no connection within \(patience) s") }
            return nil
        }
        return fd
    }

    private func askHTTP() {
        record { $0.httpAsked += 1 }
        guard let fd = connectHTTP("HTTP") else { return }
        defer { close(fd) }
        Sockets.write(fd, Array("GET /?HOST_INFO HTTP/1.1\r\nHost: 127.0.0.1:\(httpPort)\r\nConnection: close\r\n\r\n".utf8))
        let answer = Sockets.read(fd, until: headComplete)
        let status = String(decoding: answer.prefix(12), as: UTF8.self)
        if status.hasPrefix("HTTP/1.1 200") {
            record { $0.httpAnswered += 1 }
        } else {
            record { $0.fail("HTTP GET answered '\(status)' (\(answer.count) bytes)") }
        }
    }

    private func askWebSocket() {
        record { $0.webSocketAsked += 1 }
        guard let fd = connectHTTP("WebSocket") else { return }
        defer { close(fd) }
        Sockets.write(fd, webSocketUpgrade(port: httpPort))
        let head = Sockets.read(fd, until: headComplete)
        guard String(decoding: head.prefix(12), as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
            record { $0.fail("WebSocket upgrade answered '\(String(decoding: head.prefix(12), as: UTF8.self))'") }
            return
        }
        Sockets.write(fd, webSocketFrame(opcode: 0x2, OSCCodec.encode(OSCMessage("/ping", [.int32(7)]))))
        // The answer: a binary frame (unmasked, short) holding a /reply.
        let frame = Sockets.read(fd, until: { bytes in
            guard bytes.count >= 2 else { return false }
            let length = Int(bytes[1] & 0x7F)
            return length < 126 ? bytes.count >= 2 + length : bytes.count >= 4 && bytes.count >= 4 + (Int(bytes[2]) << 8 | Int(bytes[3]))
        })
        if frame.count > 2, String(decoding: frame.dropFirst(2).prefix(6), as: UTF8.self) == "/reply" || frame.dropFirst(4).starts(with: Array("/reply".utf8)) {
            record { $0.webSocketAnswered += 1 }
        } else {
            record { $0.fail("WebSocket /ping unanswered within \(patience) s (\(frame.count) bytes)") }
        }
    }
}
