import Dispatch
import NIOCore
import NIOWebSocket
import Synchronization

/// Writes what the router sends one WebSocket (its `OutboundQueue`) on the connection's event
/// loop, with no other thread in between: woken by a push, it takes everything waiting, writes it
/// and flushes once, and takes again only when the socket has taken the last frame, so a peer
/// that reads slowly holds at most one batch in NIO's buffer and slows only its own connection
/// (the queue conflates its meters meanwhile).
///
/// It sits in the pipeline just after the frame encoder, where it also sees the frames
/// Hummingbird's WebSocket handler writes (pongs, the closing handshake): after a close frame it
/// writes nothing more and drops data frames, as RFC 6455 §5.5.1 asks.
final class FrameOutlet: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let queue: OutboundQueue
    private let clock: WriteClock
    private var context: ChannelHandlerContext?
    /// A close frame went out: no data frame may follow it.
    private var closing = false

    /// At most this much (or one frame) per batch: a batch the socket has not taken for the
    /// stall time closes the connection, so a slow peer is judged on this, not on all that waits.
    static let batchBytes = 64 * 1024
    /// Batches the socket takes at once written in one turn of the loop, at most.
    private static let batchesPerTurn = 8

    private init(queue: OutboundQueue, clock: WriteClock) {
        self.queue = queue
        self.clock = clock
    }

    /// Puts an outlet for `queue` on `channel` (a WebSocket, after its upgrade) and makes it the
    /// queue's writer.
    static func install(on channel: any Channel, queue: OutboundQueue, clock: WriteClock) -> EventLoopFuture<Void> {
        channel.eventLoop.submit {
            let outlet = FrameOutlet(queue: queue, clock: clock)
            let encoder = try channel.pipeline.syncOperations.handler(type: WebSocketFrameEncoder.self)
            try channel.pipeline.syncOperations.addHandler(outlet, position: .after(encoder))
            let bound = NIOLoopBound(outlet, eventLoop: channel.eventLoop)
            queue.setWriter { bound.eventLoop.execute { bound.value.drain() } }
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
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
    private func drain() {
        for _ in 0..<Self.batchesPerTurn {
            // Closing or removed: the queue stays marked busy and is never woken again; the
            // connection is going.
            guard let context, !closing else { return }
            let frames = queue.take(upTo: Self.batchBytes)
            guard !frames.isEmpty else { return }
            clock.since.store(Int64(DispatchTime.now().uptimeNanoseconds), ordering: .relaxed)
            let written = context.eventLoop.makePromise(of: Void.self)
            for (index, frame) in frames.enumerated() {
                context.write(wrapOutboundOut(Self.webSocketFrame(frame, allocator: context.channel.allocator)),
                              promise: index == frames.count - 1 ? written : nil)
            }
            // NIO completes writes in order: the last one done, the whole batch is in the socket.
            var flushing = true
            var takenAtOnce = false
            written.futureResult.assumeIsolated().whenComplete { [self] result in
                clock.since.store(0, ordering: .relaxed)
                guard case .success = result else {
                    // Not written, and nothing more will be: the connection ends.
                    self.context?.close(promise: nil)
                    return
                }
                if flushing { takenAtOnce = true } else { drain() }
            }
            context.flush()
            flushing = false
            guard takenAtOnce else { return }
        }
        guard let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute { bound.value.drain() }
    }

    static func webSocketFrame(_ frame: OutboundQueue.Frame, allocator: ByteBufferAllocator) -> WebSocketFrame {
        var buffer = allocator.buffer(capacity: frame.size)
        switch frame {
        case let .text(text):
            buffer.writeString(text)
            return WebSocketFrame(fin: true, opcode: .text, data: buffer)
        case let .binary(bytes):
            buffer.writeBytes(bytes)
            return WebSocketFrame(fin: true, opcode: .binary, data: buffer)
        }
    }
}

/// When the batch being written to a WebSocket started waiting for the socket (0: none is).
final class WriteClock: Sendable {
    let since = Atomic<Int64>(0)
}
