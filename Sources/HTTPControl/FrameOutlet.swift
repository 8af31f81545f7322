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

    /// Writes everything waiting (event loop only); again when the socket has taken it.
    private func drain() {
        // Closing or removed: the queue stays marked busy and is never woken again; the
        // connection is going.
        guard let context, !closing else { return }
        let frames = queue.take()
        guard !frames.isEmpty else { return }
        clock.since.store(Int64(DispatchTime.now().uptimeNanoseconds), ordering: .relaxed)
        let written = context.eventLoop.makePromise(of: Void.self)
        for (index, frame) in frames.enumerated() {
            var buffer = context.channel.allocator.buffer(capacity: frame.size)
            let opcode: WebSocketOpcode
            switch frame {
            case let .text(text):
                buffer.writeString(text)
                opcode = .text
            case let .binary(bytes):
                buffer.writeBytes(bytes)
                opcode = .binary
            }
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: opcode, data: buffer)),
                          promise: index == frames.count - 1 ? written : nil)
        }
        context.flush()
        // NIO completes writes in order: the last one done, the whole batch is in the socket.
        written.futureResult.assumeIsolated().whenComplete { [self] result in
            clock.since.store(0, ordering: .relaxed)
            if case .success = result { drain() }
        }
    }
}

/// When the batch being written to a WebSocket started waiting for the socket (0: none is).
final class WriteClock: Sendable {
    let since = Atomic<Int64>(0)
}
