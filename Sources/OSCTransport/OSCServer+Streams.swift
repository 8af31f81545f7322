import Synchronization

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

    /// A stream as its front end holds it: its connection id, and how many packets it handed in
    /// that the server has not handled yet.
    public final class StreamHandle: Sendable {
        public let id: Int
        let queued = Atomic<Int>(0)
        init(id: Int) { self.id = id }

        /// Packets handed in and not yet handled. A front end stops reading its peer while this
        /// is high, so a peer that floods waits on its own connection and nobody else does.
        public var backlog: Int { queued.load(ordering: .relaxed) }
    }

    /// One stream connection (server thread only).
    final class Stream {
        let address: SocketAddress
        let outlet: Outlet
        let handle: StreamHandle
        /// Packets handed in, oldest first, handled a few per turn of the loop.
        var inbox: [[UInt8]] = []
        init(address: SocketAddress, outlet: @escaping Outlet, handle: StreamHandle) {
            self.address = address
            self.outlet = outlet
            self.handle = handle
        }
    }

    /// Packets handled per stream per turn of the loop: a stream that sends thousands at once
    /// shares the thread with UDP, TCP peers and timers instead of holding it.
    static let streamPacketsPerTurn = 32

    /// Opens a stream connection for a peer at `address` (packets handed in after this call are
    /// handled after it is open). If the server has stopped, the stream never opens and its
    /// packets are dropped.
    public func openStream(from address: SocketAddress, outlet: @escaping Outlet) -> StreamHandle {
        let handle = StreamHandle(id: newConnectionID())
        execute { [self] in
            streams[handle.id] = Stream(address: address, outlet: outlet, handle: handle)
        }
        return handle
    }

    /// A packet the stream's peer sent (one OSC packet, message or bundle).
    public func receive(_ packet: [UInt8], on handle: StreamHandle) {
        handle.queued.add(1, ordering: .relaxed)
        execute({ [self] in
            if let stream = streams[handle.id] {
                stream.inbox.append(packet)
            } else {
                handle.queued.subtract(1, ordering: .relaxed)
            }
        }, ifStopped: {
            handle.queued.subtract(1, ordering: .relaxed)
        })
    }

    /// The stream has ended: what rode on it is dropped, as when a TCP peer goes away. Packets
    /// it handed in and that were not handled yet are dropped too.
    public func closeStream(_ handle: StreamHandle) {
        execute { [self] in
            guard let stream = streams.removeValue(forKey: handle.id) else { return }
            handle.queued.subtract(stream.inbox.count, ordering: .relaxed)
            onClose(Peer(transport: .tcp, address: stream.address, connection: handle.id))
        }
    }

    /// Handles up to `streamPacketsPerTurn` packets of each stream; true when some are left.
    func serviceStreams() -> Bool {
        var left = false
        for id in Array(streams.keys) {
            guard let stream = streams[id], !stream.inbox.isEmpty else { continue }
            let count = min(stream.inbox.count, Self.streamPacketsPerTurn)
            let batch = stream.inbox.prefix(count)
            stream.inbox.removeFirst(count)
            left = left || !stream.inbox.isEmpty
            let peer = Peer(transport: .tcp, address: stream.address, connection: id)
            for packet in batch {
                stream.handle.queued.subtract(1, ordering: .relaxed)
                // A packet may close its own stream (it cannot now: closing comes from the front end).
                guard streams[id] != nil else { break }
                handler(packet, peer)
            }
        }
        return left
    }
}
