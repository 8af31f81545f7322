#if canImport(Glibc)
import Glibc
#endif

/// What leaves the server (server thread only): replies to a peer, notifications to
/// destinations (a UDP address, an outgoing TCP connection, a peer's own connection or stream).
extension OSCServer {
    /// Sends a packet to a peer (a reply). False when it could not be sent or queued.
    @discardableResult
    public func send(_ packet: [UInt8], to peer: Peer) -> Bool {
        switch peer.transport {
        case .udp:
            let sent = packet.withUnsafeBytes { raw in
                peer.address.withSockaddr(family: OSCServer.localFamily(udp)) { address, length in
                    sendto(udp, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), address, length)
                }
            }
            return sent == packet.count
        case .tcp:
            return enqueue(packet, on: peer.connection)
        }
    }

    func enqueue(_ packet: [UInt8], on id: Int, conflatable: Bool = false) -> Bool {
        if let stream = streams[id] {
            stream.sentThisTurn = true
            streamsSentThisTurn = true
            return stream.outlet(packet, conflatable)
        }
        guard let c = connections[id], c.output.count + packet.count <= configuration.maximumPendingOutput else { return false }
        c.output.append(contentsOf: Connection.frame(packet, c.framing))
        flush(c)
        return connections[id] != nil
    }

    /// A destination for notifications: `url` (UDP or TCP), or a TCP peer's own connection. Nil
    /// when it cannot be reached, or when its socket would take one of the descriptors kept in
    /// reserve (`DescriptorBudget.isShort`): peers' destinations never hold those.
    public func destination(_ url: OSCURL) -> Destination? {
        guard let address = SocketAddress(host: url.host, port: url.port), !DescriptorBudget.isShort() else { return nil }
        switch url.transport {
        case .udp:
            let fd = socket(address.family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return nil }
            guard address.withSockaddr(family: address.family, { connect(fd, $0, $1) }) == 0 else { Glibc.close(fd); return nil }
            return Destination(kind: .udp(fd), url: url.description)
        case .tcp:
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return nil }
            let result = address.withSockaddr(family: address.family) { connect(fd, $0, $1) }
            guard result == 0 || errno == EINPROGRESS else { Glibc.close(fd); return nil }
            setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            let id = newConnectionID()
            let c = Connection(fd: fd, id: id, address: address, inbound: false)
            c.connecting = result != 0
            c.framing = .lengthPrefixed
            connections[id] = c
            return Destination(kind: .connection(id), url: url.description)
        }
    }

    /// The destination that is a TCP peer's own connection (notifications ride on it).
    public func destination(_ peer: Peer) -> Destination {
        switch peer.transport {
        case .tcp: Destination(kind: .connection(peer.connection), url: peer.url)
        case .udp: destination(OSCURL(transport: .udp, host: peer.address.host, port: peer.address.port))
            ?? Destination(kind: .udp(-1), url: peer.url)
        }
    }

    /// Sends a packet to a destination. False when it failed (unreachable, too slow, closed).
    /// - Parameter conflatable: the packet may be skipped, not queued, while an earlier one like it
    ///   waits to be read (meters: a stream that cannot keep up gets fewer, never a backlog). Only
    ///   streams skip; sockets queue every packet.
    @discardableResult
    public func send(_ packet: [UInt8], to destination: Destination, conflatable: Bool = false) -> Bool {
        switch destination.kind {
        case let .udp(fd):
            guard fd >= 0 else { return false }
            // The socket is connected: a closed port answers a send with ICMP, which the kernel
            // hands to the next call only (ECONNREFUSED) and forgets, so sends would fail and
            // succeed in turn and never fail 8 times in a row. A refusal left by the last send
            // is read first (and cleared) and counts as this one failing; the packet still goes,
            // so a port that opens again is heard from at the next send.
            var pending: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            let refused = getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &length) == 0 && pending != 0
            let sent = packet.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) } == packet.count
            return sent && !refused
        case let .connection(id):
            return enqueue(packet, on: id, conflatable: conflatable)
        }
    }

    /// Closes a destination's socket (an outgoing one; a peer's own connection stays open).
    public func close(_ destination: Destination) {
        switch destination.kind {
        case let .udp(fd): if fd >= 0 { Glibc.close(fd) }
        case let .connection(id): if let c = connections[id], !c.inbound { drop(id, reason: nil) }
        }
    }

    /// Whether a TCP peer is still connected.
    public func isConnected(_ peer: Peer) -> Bool {
        peer.transport == .udp || connections[peer.connection] != nil || streams[peer.connection] != nil
    }
}
