#if canImport(Glibc)
import Glibc
#endif

/// A simple blocking OSC client (for `duckctl` and tests): sends messages to one server and reads
/// what comes back, over UDP or TCP (OSC 1.0 length-prefixed framing).
public final class OSCClient {
    public let url: OSCURL
    private let fd: Int32
    private let address: SocketAddress
    /// TCP bytes received and not yet returned, from `inputStart` on.
    private var input: [UInt8] = []
    private var inputStart = 0
    private var buffer = [UInt8](repeating: 0, count: 65_536)
    /// Over UDP, take only datagrams from the server's own address and port (its replies; any
    /// loopback address when the server is asked at one), and
    /// drop the rest: notifications come from the server's other sockets, so a client that
    /// listens to them leaves this off; one that acts on a reply (`duckctl page` reads the file
    /// a reply names) turns it on, so another program on the network cannot answer in its place.
    public var onlyFromServer = false

    public init(_ url: OSCURL) throws(OSCServerError) {
        guard let address = SocketAddress(host: url.host, port: url.port) else {
            throw OSCServerError("cannot resolve '\(url.host)'")
        }
        self.url = url
        self.address = address
        let type = url.transport == .udp ? SOCK_DGRAM : SOCK_STREAM
        fd = socket(address.family, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw OSCServerError("cannot create a socket: \(errorText())") }
        if url.transport == .udp {
            // Not connected: notifications come from the server's other sockets, and a connected
            // UDP socket would discard them. Bound now so `localPort` is known before sending.
            let any = SocketAddress(host: address.isIPv6 ? "::" : "0.0.0.0", port: 0)!
            guard any.withSockaddr(family: address.family, { bind(fd, $0, $1) }) == 0 else {
                let text = errorText()
                close(fd)
                throw OSCServerError("cannot bind a UDP socket: \(text)")
            }
            // Answers and notifications wait here while the caller does something else.
            setOption(fd, SOL_SOCKET, SO_RCVBUF, udpReceiveBuffer)
            return
        }
        guard address.withSockaddr(family: address.family, { connect(fd, $0, $1) }) == 0 else {
            let text = errorText()
            close(fd)
            throw OSCServerError("cannot reach \(url): \(text)")
        }
        if url.transport == .tcp { setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1) }
    }

    deinit { close(fd) }

    /// The receive buffer the kernel granted this socket, bytes (it doubles what is asked for,
    /// within net.core.rmem_max).
    public var receiveBufferBytes: Int {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, &length) == 0 ? Int(value) : 0
    }

    /// The local port (where UDP replies and notifications arrive).
    public var localPort: UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0)?.port ?? 0 } }
    }

    public func send(_ message: OSCMessage) throws(OSCServerError) {
        try send(packet: OSCCodec.encode(message))
    }

    /// Sends raw bytes as one packet (a datagram, or a length-prefixed frame over TCP).
    public func send(packet: [UInt8]) throws(OSCServerError) {
        let bytes = url.transport == .tcp ? OSCCodec.lengthPrefixed(packet) : packet
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { raw in
                url.transport == .udp
                    ? address.withSockaddr(family: address.family) { sendto(fd, raw.baseAddress, raw.count, 0, $0, $1) }
                    : Glibc.send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                throw OSCServerError("cannot send to \(url): \(errorText())")
            }
            offset += sent
        }
    }

    /// The next packet, or nil after `timeout` seconds (0: only what has already arrived). Packets
    /// that are not OSC are skipped.
    public func receive(timeout: Double) throws(OSCServerError) -> OSCPacket? {
        let deadline = Self.now() + timeout
        var polled = false
        while true {
            if url.transport == .tcp, input.count - inputStart >= 4 {
                let s = inputStart
                let size = Int(UInt32(input[s]) << 24 | UInt32(input[s + 1]) << 16 | UInt32(input[s + 2]) << 8 | UInt32(input[s + 3]))
                if input.count - s >= 4 + size {
                    let packet = Array(input[s + 4..<s + 4 + size])
                    inputStart = s + 4 + size
                    if inputStart == input.count {
                        input.removeAll(keepingCapacity: true)
                        inputStart = 0
                    }
                    if let decoded = try? OSCCodec.decode(packet) { return decoded }
                    continue
                }
            }
            let left = deadline - Self.now()
            if left <= 0 && polled { return nil }
            polled = true
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, left <= 0 ? 0 : Int32(min(left * 1000 + 1, 1_000_000)))
            if ready <= 0 { continue }
            let capacity = buffer.count
            var source = sockaddr_storage()
            var sourceLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = withUnsafeMutablePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, capacity, 0, $0, &sourceLength) }
            }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw OSCServerError("cannot receive from \(url): \(errorText())")
            }
            if count == 0 && url.transport == .tcp { throw OSCServerError("\(url) closed the connection") }
            if url.transport == .udp {
                if onlyFromServer {
                    let sender = withUnsafePointer(to: &source) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0) } }
                    // A router on loopback answers from the loopback address the kernel picks
                    // (127.0.0.1 for a request to 127.0.1.1, Debian's address for the hostname):
                    // any loopback address then, on the router's port.
                    guard let sender, sender.port == address.port,
                          sender.bytes == address.bytes || (address.isLoopback && sender.isLoopback) else { continue }
                }
                if let decoded = try? OSCCodec.decode(Array(buffer[0..<count])) { return decoded }
            } else {
                if inputStart > 0 {
                    input.removeFirst(inputStart)
                    inputStart = 0
                }
                input.append(contentsOf: buffer[0..<count])
            }
        }
    }

    /// Messages, with bundles opened, until one matches `predicate` or `timeout` passes; every
    /// message received on the way is passed to `seen`.
    public func receive(timeout: Double, until predicate: (OSCMessage) -> Bool,
                        seen: (OSCMessage) -> Void = { _ in }) throws(OSCServerError) -> OSCMessage? {
        let deadline = Self.now() + timeout
        while true {
            let left = deadline - Self.now()
            guard left > 0, let packet = try receive(timeout: left) else { return nil }
            for message in Self.messages(in: packet) {
                seen(message)
                if predicate(message) { return message }
            }
        }
    }

    /// The messages of a packet, bundles opened in order.
    public static func messages(in packet: OSCPacket) -> [OSCMessage] {
        switch packet {
        case let .message(message): [message]
        case let .bundle(_, elements): elements.flatMap(messages(in:))
        }
    }

    static func now() -> Double { OSCServer.clockSeconds() }
}
