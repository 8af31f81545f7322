import NIOCore
import NIOWebSocket

/// Writes what the router sends one WebSocket (its `OutboundQueue`) on the connection's event
/// loop, with no other thread in between, as frames encoded by `EncodedFrames` (a meter bundle
/// sent to every page once for them all) through the `EncodedFrameDoor` below NIO's encoder: woken by a push, it takes everything waiting, writes it
/// and flushes once, and takes again only when the socket has taken the last frame, so a peer
/// that reads slowly holds at most one batch in NIO's buffer and slows only its own connection
/// (the queue conflates its meters meanwhile).
///
/// A batch the socket has not taken within `stallTime` (a peer that stopped reading) closes the
/// connection: a timer runs only while a batch waits for the socket.
///
/// It sits in the pipeline just after the frame encoder, where it also sees the frames
/// Hummingbird's WebSocket handler writes (pongs, the closing handshake): after a close frame it
/// writes nothing more and drops data frames, as RFC 6455 §5.5.1 asks.
final class FrameOutlet: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let queue: OutboundQueue
    private let door: EncodedFrameDoor
    private let encodedFrames: EncodedFrames
    private let stallTime: TimeAmount
    /// Told (on the loop) before a stalled connection is closed.
    private let onStall: @Sendable () -> Void
    private var stallTimer: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// A close frame went out: no data frame may follow it.
    private var closing = false

    /// At most this much (or one frame) per batch: a batch the socket has not taken for the
    /// stall time closes the connection, so a slow peer is judged on this, not on all that waits.
    static let batchBytes = 64 * 1024
    /// Batches the socket takes at once written in one turn of the loop, at most.
    private static let batchesPerTurn = 8

    private init(queue: OutboundQueue, door: EncodedFrameDoor, encodedFrames: EncodedFrames, stallTime: TimeAmount,
                 onStall: @escaping @Sendable () -> Void) {
        self.queue = queue
        self.door = door
        self.encodedFrames = encodedFrames
        self.stallTime = stallTime
        self.onStall = onStall
    }

    /// Puts an outlet for `queue` on `channel` (a WebSocket, after its upgrade) and makes it the
    /// queue's writer, woken through `waker` when that is the channel's loop's (pushes that wake
    /// it later are held there until `waker.flush()`), else by a task of its own.
    static func install(on channel: any Channel, queue: OutboundQueue, stallTime: TimeAmount,
                        onStall: @escaping @Sendable () -> Void = {}, waker: OutletWaker? = nil) -> EventLoopFuture<Void> {
        channel.eventLoop.submit {
            let door = EncodedFrameDoor()
            let encodedFrames = waker.map { $0.eventLoop === channel.eventLoop ? $0.encodedFrames : EncodedFrames() } ?? EncodedFrames()
            let outlet = FrameOutlet(queue: queue, door: door, encodedFrames: encodedFrames, stallTime: stallTime, onStall: onStall)
            let encoder = try channel.pipeline.syncOperations.handler(type: WebSocketFrameEncoder.self)
            try channel.pipeline.syncOperations.addHandler(door, position: .before(encoder))
            try channel.pipeline.syncOperations.addHandler(outlet, position: .after(encoder))
            let bound = NIOLoopBound(outlet, eventLoop: channel.eventLoop)
            if let waker, waker.eventLoop === channel.eventLoop {
                queue.setWriter({ waker.wake(bound) }, later: { waker.hold(bound) })
            } else {
                queue.setWriter { bound.eventLoop.execute { bound.value.drain() } }
            }
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        stallTimer?.cancel()
        stallTimer = nil
    }

    /// Frames written by others on the way to the encoder.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        if frame.opcode == .connectionClose {
            closing = true
        } else if closing && !frame.opcode.isControlOpcode {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        context.write(data, promise: promise)
    }

    /// Writes what waits, in batches of at most `batchBytes` (event loop only); the next batch
    /// when the socket has taken the last one. A socket that takes a batch at once (inside the
    /// flush) gets the next in this same call, up to `batchesPerTurn`, then the loop's other
    /// connections have their turn.
    func drain() {
        for _ in 0..<Self.batchesPerTurn {
            // Closing or removed: the queue stays marked busy and is never woken again; the
            // connection is going.
            guard let context, let socket = door.context, !closing else { return }
            let frames = queue.take(upTo: Self.batchBytes)
            guard !frames.isEmpty else { return }
            let written = context.eventLoop.makePromise(of: Void.self)
            for (index, frame) in frames.enumerated() {
                socket.write(NIOAny(encodedFrames.buffer(for: frame, allocator: context.channel.allocator)),
                             promise: index == frames.count - 1 ? written : nil)
            }
            // NIO completes writes in order: the last one done, the whole batch is in the socket.
            var flushing = true
            var takenAtOnce = false
            written.futureResult.assumeIsolated().whenComplete { [self] result in
                stallTimer?.cancel()
                stallTimer = nil
                guard case .success = result else {
                    // Not written, and nothing more will be: the connection ends.
                    self.context?.close(promise: nil)
                    return
                }
                if flushing { takenAtOnce = true } else { drain() }
            }
            context.flush()
            flushing = false
            guard takenAtOnce else {
                // The socket has not taken the whole batch: it has `stallTime` to.
                if stallTimer == nil, self.context != nil {
                    let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                    stallTimer = context.eventLoop.scheduleTask(in: stallTime) { bound.value.0.stalled(bound.value.1) }
                }
                return
            }
        }
        guard let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute { bound.value.drain() }
    }

    /// The batch waiting for the socket was not taken in time: the peer has stopped reading.
    /// `context` is the outlet's when the clock started; removing the outlet stops the clock
    /// (`handlerRemoved`), so a removed outlet is never judged.
    private func stalled(_ context: ChannelHandlerContext) {
        stallTimer = nil
        onStall()
        context.close(promise: nil)
    }
}
