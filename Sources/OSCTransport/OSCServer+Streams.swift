/// Stream connections carried by another front end: a WebSocket whose binary frames are OSC
/// packets (docs/HTTP.md). To the handler such a packet comes from a TCP peer like any other (its
/// own connection id, the WebSocket peer's address), so it is executed exactly as OSC over TCP:
/// the same replies, errors, ownership (apps it registers are owned by the stream and become
/// unowned when it closes) and subscriptions riding on the connection.
///
/// The front end owns the transport: it hands packets in with `receive`, takes packets out
/// through the stream's outlet, and reports the end with `closeStream`. All three may be called
/// from any thread; the work runs on the server thread, in the order handed in.
extension OSCServer {
    /// Takes a packet for the stream's peer; false when it cannot (its buffer is full: the peer
    /// reads too slowly, counted as a failed send). `conflatable` packets (meters) may be skipped
    /// instead, returning true, while an earlier one still waits to be read.
    public typealias Outlet = @Sendable (_ packet: [UInt8], _ conflatable: Bool) -> Bool

    /// One stream connection (server thread only).
    final class Stream {
        let address: SocketAddress
        let outlet: Outlet
        init(address: SocketAddress, outlet: @escaping Outlet) {
            self.address = address
            self.outlet = outlet
        }
    }

    /// Opens a stream connection for a peer at `address`; returns its connection id at once
    /// (packets handed in after this call are handled after it is open). If the server has
    /// stopped, the stream never opens and its packets are dropped.
    public func openStream(from address: SocketAddress, outlet: @escaping Outlet) -> Int {
        let id = newConnectionID()
        execute { [self] in
            streams[id] = Stream(address: address, outlet: outlet)
        }
        return id
    }

    /// A packet the stream's peer sent (one OSC packet, message or bundle).
    public func receive(_ packet: [UInt8], onStream id: Int) {
        execute { [self] in
            guard let stream = streams[id] else { return }
            handler(packet, Peer(transport: .tcp, address: stream.address, connection: id))
        }
    }

    /// The stream has ended: what rode on it is dropped, as when a TCP peer goes away.
    public func closeStream(_ id: Int) {
        execute { [self] in
            guard let stream = streams.removeValue(forKey: id) else { return }
            onClose(Peer(transport: .tcp, address: stream.address, connection: id))
        }
    }
}
