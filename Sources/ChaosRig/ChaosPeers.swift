import Foundation
import JackRig
import OSCTransport

/// Peers that misbehave at the router's listeners: bursts of garbage over UDP, TCP, HTTP and
/// WebSocket, and clients that connect (and subscribe) and then never read. Each listener must
/// bound what they hold, and the router must go on answering everyone else.
public final class ChaosPeers: @unchecked Sendable {
    // @unchecked: used from the harness's thread only.
    let oscPort: UInt16
    let httpPort: UInt16
    /// Descriptors of connections held open and never read, and of WebSockets read slowly.
    private var stuck: [Int32] = []
    private var slow: [Int32] = []

    public init(oscPort: UInt16, httpPort: UInt16) {
        self.oscPort = oscPort
        self.httpPort = httpPort
    }

    deinit { releaseStuck() }

    public var stuckCount: Int { stuck.count + slow.count }

    /// Reads a little from each slow WebSocket (called once a step: a few hundred bytes every
    /// second or so, while the router sends levels at 20 Hz).
    public func readSlowly() {
        var buffer = [UInt8](repeating: 0, count: 256)
        for fd in slow { _ = read(fd, &buffer, buffer.count) }
    }

    /// A burst of garbage on every listener; returns what was sent, in words.
    public func garbage(_ random: inout SplitMix) -> String {
        var udp = 0, tcp = 0, http = 0, ws = 0
        if let client = try? OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: oscPort)) {
            for _ in 0..<(50 + random.next(200)) {
                let bytes = Self.junk(&random, count: 1 + random.next(200))
                // Half never OSC at all, half OSC-looking with broken type tags or lengths.
                try? client.send(packet: random.next(2) == 0 ? [0xff] + bytes : Array("/app/".utf8) + bytes)
                udp += 1
            }
        }
        for _ in 0..<(2 + random.next(6)) {
            guard let fd = Self.connect(oscPort) else { continue }
            // A length prefix that promises more than comes, or junk after a valid one.
            var bytes: [UInt8] = random.next(2) == 0 ? [0x7f, 0xff, 0xff, 0xff] : [0, 0, 0, 16]
            bytes += Self.junk(&random, count: 1 + random.next(300))
            Sockets.write(fd, bytes)
            close(fd)
            tcp += 1
        }
        for _ in 0..<(2 + random.next(6)) {
            guard let fd = Self.connect(httpPort) else { continue }
            let requests = [
                "GARBAGE\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: \(String(repeating: "a", count: 20_000))\r\n\r\n",
                "GET /%zz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999\r\n\r\nxx",
                "GET /app/music/volume?VALUE=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            ]
            Sockets.write(fd, Array(requests[random.next(requests.count)].utf8) + Self.junk(&random, count: random.next(64)))
            close(fd)
            http += 1
        }
        for _ in 0..<(1 + random.next(3)) {
            guard let fd = webSocket() else { continue }
            // Frames with a bad opcode, a huge length, or unmasked (a client must mask).
            let frames: [[UInt8]] = [
                [0x83, 0x80, 1, 2, 3, 4],
                [0x82, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
                [0x82, 0x05] + Array("/junk".utf8),
                [0x82, 0x84, 9, 9, 9, 9] + Self.junk(&random, count: 4),
            ]
            Sockets.write(fd, frames[random.next(frames.count)])
            close(fd)
            ws += 1
        }
        return "\(udp) UDP datagrams, \(tcp) TCP, \(http) HTTP and \(ws) WebSocket connections of garbage"
    }

    /// Connections that subscribe to everything and never read: OSC over TCP (`/subscribe`,
    /// `/meters 20`), WebSockets (`/subscribe` and `/meters/levels`; one of them read slowly),
    /// and HTTP connections that send half a request.
    public func stick(_ random: inout SplitMix) -> String {
        var opened = 0
        for _ in 0..<(1 + random.next(4)) {
            guard let fd = Self.connect(oscPort) else { continue }
            for message in [OSCMessage("/subscribe"), OSCMessage("/meters", [.float(20)])] {
                Sockets.write(fd, OSCCodec.lengthPrefixed(OSCCodec.encode(message)))
            }
            stuck.append(fd)
            opened += 1
        }
        for index in 0..<(1 + random.next(3)) {
            guard let fd = webSocket() else { continue }
            for message in [OSCMessage("/subscribe"), OSCMessage("/meters/levels", [.float(20)])] {
                Sockets.write(fd, webSocketFrame(opcode: 2, OSCCodec.encode(message)))
            }
            // The first reads slowly; the others never.
            if index == 0 { slow.append(fd) } else { stuck.append(fd) }
            opened += 1
        }
        for _ in 0..<(1 + random.next(3)) {
            guard let fd = Self.connect(httpPort) else { continue }
            Sockets.write(fd, Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8))
            stuck.append(fd)
            opened += 1
        }
        return "\(opened) connections that never read or read slowly (\(stuckCount) held)"
    }

    /// Closes every connection held by `stick`.
    public func releaseStuck() {
        for fd in stuck + slow { close(fd) }
        stuck = []
        slow = []
    }

    /// A WebSocket opened on the HTTP port, non-blocking once open (nil when the router refused it).
    func webSocket() -> Int32? {
        let fd = Sockets.tcp(from: "127.0.0.1", toPort: httpPort, wait: true)
        guard fd >= 0 else { return nil }
        Sockets.write(fd, webSocketUpgrade(port: httpPort))
        // The 101 and its headers.
        let response = Sockets.read(fd, until: headComplete)
        guard String(decoding: response, as: UTF8.self).hasPrefix("HTTP/1.1 101") else { close(fd); return nil }
        Sockets.setNonBlocking(fd)
        return fd
    }

    static func junk(_ random: inout SplitMix, count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(random.next(256)) }
    }

    /// A TCP connection to 127.0.0.1:`port`, non-blocking once open (nil when refused).
    static func connect(_ port: UInt16) -> Int32? {
        let fd = Sockets.tcp(from: "127.0.0.1", toPort: port, wait: true)
        guard fd >= 0 else { return nil }
        Sockets.setNonBlocking(fd)
        return fd
    }
}
