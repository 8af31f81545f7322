import Foundation

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

    /// A stream as its front end holds it: its connection id, and what it handed in that the
    /// server has not handled yet.
    public final class StreamHandle: @unchecked Sendable {
        // @unchecked: `packets`, `bytes` and `waiter` are read and written under `lock`.
        public let id: Int
        private let lock = NSLock()
        private var packets = 0
        private var bytes = 0
        private var waiter: (limit: (packets: Int, bytes: Int), continuation: CheckedContinuation<Void, Never>)?
        /// The stream is gone or the server stopped: nobody waits for room any more.
        private var released = false
        init(id: Int) { self.id = id }

        /// Packets handed in and not yet handled.
        public var backlog: Int { lock.withLock { packets } }

        /// Returns once fewer than `packets` packets and `bytes` bytes wait (at once if they do
        /// now). A front end waits here before reading its peer again, so a peer that floods
        /// waits on its own connection and nobody else does. One waiter at a time.
        public func waitForRoom(packets: Int, bytes: Int) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now: Bool = lock.withLock {
                    if released || (self.packets < packets && self.bytes < bytes) { return true }
                    precondition(waiter == nil, "one waiter per stream")
                    waiter = ((packets, bytes), continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func added(_ size: Int) {
            lock.withLock {
                packets += 1
                bytes += size
            }
        }

        func removed(count: Int, bytes size: Int) {
            let ready: CheckedContinuation<Void, Never>? = lock.withLock {
                packets -= count
                bytes -= size
                guard let waiter, packets < waiter.limit.packets && bytes < waiter.limit.bytes else { return nil }
                self.waiter = nil
                return waiter.continuation
            }
            ready?.resume()
        }

        /// The stream is gone: a waiting front end goes on (its reads then end with the connection).
        func release() {
            let ready: CheckedContinuation<Void, Never>? = lock.withLock {
                released = true
                defer { waiter = nil }
                return waiter?.continuation
            }
            ready?.resume()
        }
    }

    /// One stream connection (server thread only).
    final class Stream {
        let address: SocketAddress
        let outlet: Outlet
        let turnEnd: (@Sendable () -> Void)?
        let handle: StreamHandle
        /// Packets handed in, oldest first, handled a few per turn of the loop.
        var inbox: [[UInt8]] = []
        /// The outlet was given packets in this turn of the loop.
        var sentThisTurn = false
        init(address: SocketAddress, outlet: @escaping Outlet, turnEnd: (@Sendable () -> Void)?, handle: StreamHandle) {
            self.address = address
            self.outlet = outlet
            self.turnEnd = turnEnd
            self.handle = handle
        }
    }

    /// Bytes of packets handled per stream per turn of the loop (at least one packet): a stream
    /// that sends thousands of commands at once shares the thread with UDP, TCP peers and timers
    /// instead of holding it. A bundle is one packet and runs whole.
    static let streamBytesPerTurn = 8 * 1024
    /// And at most this many packets (a small command, such as /state, may cost much).
    static let streamPacketsPerTurn = 32

    /// Opens a stream connection for a peer at `address` (packets handed in after this call are
    /// handled after it is open). If the server has stopped, the stream never opens and its
    /// packets are dropped. `turnEnd`, if given, runs on the server thread at the end of each
    /// turn of its loop in which the outlet was given packets: a front end may hold what its
    /// outlets are given until then and hand a turn's packets (a meter tick reaching every
    /// stream) on together.
    public func openStream(from address: SocketAddress, outlet: @escaping Outlet,
                           turnEnd: (@Sendable () -> Void)? = nil) -> StreamHandle {
        let handle = StreamHandle(id: newConnectionID())
        execute({ [self] in
            streams[handle.id] = Stream(address: address, outlet: outlet, turnEnd: turnEnd, handle: handle)
        }, ifStopped: {
            handle.release()
        })
        return handle
    }

    /// A packet the stream's peer sent (one OSC packet, message or bundle).
    public func receive(_ packet: [UInt8], on handle: StreamHandle) {
        handle.added(packet.count)
        execute({ [self] in
            if let stream = streams[handle.id] {
                stream.inbox.append(packet)
                streamPacketsWaiting += 1
            } else {
                handle.removed(count: 1, bytes: packet.count)
            }
        }, ifStopped: {
            handle.removed(count: 1, bytes: packet.count)
            handle.release()
        })
    }

    /// The stream has ended: what rode on it is dropped, as when a TCP peer goes away. Packets
    /// it handed in and that were not handled yet are dropped too.
    public func closeStream(_ handle: StreamHandle) {
        execute({ [self] in endStream(handle) }, ifStopped: {
            handle.release()
        })
    }

    /// Closes a stream (server thread).
    func endStream(_ handle: StreamHandle) {
        guard let stream = streams.removeValue(forKey: handle.id) else { return }
        // Sent to in this turn: its turn ends now (the end of the turn will not see it).
        if stream.sentThisTurn { stream.turnEnd?() }
        handle.removed(count: stream.inbox.count, bytes: stream.inbox.reduce(0) { $0 + $1.count })
        streamPacketsWaiting -= stream.inbox.count
        handle.release()
        onClose(Peer(transport: .tcp, address: stream.address, connection: handle.id))
    }

    /// Tells the streams sent to in this turn that it has ended (server thread, end of a turn).
    func endStreamTurn() {
        guard streamsSentThisTurn else { return }
        streamsSentThisTurn = false
        for stream in streams.values where stream.sentThisTurn {
            stream.sentThisTurn = false
            stream.turnEnd?()
        }
    }

    /// Lets every stream's front end go on (the server has stopped: nothing will run).
    func releaseStreams() {
        for stream in streams.values { stream.handle.release() }
    }

    /// An open stream's peer, as its packets come from (server thread only).
    public func streamPeer(_ id: Int) -> Peer? {
        streams[id].map { Peer(transport: .tcp, address: $0.address, connection: id) }
    }

    /// Handles each stream's packets up to `streamBytesPerTurn` bytes and `streamPacketsPerTurn`
    /// packets (at least one); true when some are left.
    func serviceStreams() -> Bool {
        guard streamPacketsWaiting > 0 else { return false }
        var left = false
        for id in Array(streams.keys) {
            guard let stream = streams[id], !stream.inbox.isEmpty else { continue }
            var count = 0
            var size = 0
            while count < stream.inbox.count && count < Self.streamPacketsPerTurn
                    && (count == 0 || size + stream.inbox[count].count <= Self.streamBytesPerTurn) {
                size += stream.inbox[count].count
                count += 1
            }
            let batch = stream.inbox.prefix(count)
            stream.inbox.removeFirst(count)
            streamPacketsWaiting -= count
            left = left || !stream.inbox.isEmpty
            let peer = Peer(transport: .tcp, address: stream.address, connection: id)
            for packet in batch { handler(packet, peer) }
            stream.handle.removed(count: count, bytes: size)
        }
        return left
    }
}
