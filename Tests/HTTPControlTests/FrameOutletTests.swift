@testable import HTTPControl
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Synchronization
import Testing

/// The WebSocket's writer on a channel of NIO's own (EmbeddedChannel: its writes complete when
/// flushed), behind NIO's real frame encoder, as after an upgrade.
@Suite("A WebSocket's frame outlet")
struct FrameOutletTests {
    /// A channel with the encoder and an outlet for a new queue, and the queue.
    private func outletChannel(loop: EmbeddedEventLoop = EmbeddedEventLoop(), waker: OutletWaker? = nil) throws
        -> (EmbeddedChannel, OutboundQueue, StallCount) {
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
        let queue = OutboundQueue(limit: 1 << 20)
        let clock = StallCount()
        let installed = FrameOutlet.install(on: channel, queue: queue, stallTime: .seconds(10), onStall: { clock.stalls.add(1, ordering: .relaxed) },
                                            waker: waker)
        channel.embeddedEventLoop.run()
        try installed.wait()
        return (channel, queue, clock)
    }

    /// The frames written to the socket, in order, as (first byte, payload): unmasked frames
    /// read back from the bytes, whichever buffers the encoder wrote them in.
    private func written(_ channel: EmbeddedChannel) throws -> [Frame] {
        var bytes: [UInt8] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { bytes += buffer.readableBytesView }
        var frames: [Frame] = []
        var at = 0
        while at + 2 <= bytes.count {
            var length = Int(bytes[at + 1] & 0x7F)
            var start = at + 2
            if length == 126 {
                length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
                start = at + 4
            } else if length == 127 {
                length = bytes[(at + 2)..<(at + 10)].reduce(0) { $0 << 8 | Int($1) }
                start = at + 10
            }
            frames.append(Frame(bytes[at], Array(bytes[start..<(start + length)])))
            at = start + length
        }
        #expect(at == bytes.count, "whole frames")
        return frames
    }

    private struct Frame: Equatable, CustomStringConvertible {
        var first: UInt8
        var payload: [UInt8]
        init(_ first: UInt8, _ payload: [UInt8]) { (self.first, self.payload) = (first, payload) }
        var description: String { "\(String(first, radix: 16)):\(payload.count) bytes \(payload.prefix(8))" }
    }

    /// A whole unmasked frame.
    private func frame(_ opcode: UInt8, _ payload: [UInt8]) -> Frame {
        Frame(0x80 | opcode, payload)
    }

    @Test("what waits is written when the loop runs, in order, the latest meter last; later pushes wake it again")
    func writes() throws {
        let (channel, queue, clock) = try outletChannel()
        defer { _ = try? channel.finish() }
        queue.push(.text("a"))
        queue.push(.binary([1, 2]), conflatable: true)
        queue.push(.binary([3]), conflatable: true)
        queue.push(.binary([4, 5, 6]))
        #expect(try written(channel).isEmpty, "nothing before the loop runs")
        channel.embeddedEventLoop.run()
        #expect(try written(channel) == [frame(0x1, [0x61]), frame(0x2, [4, 5, 6]), frame(0x2, [3])])
        channel.embeddedEventLoop.advanceTime(by: .seconds(11))
        #expect(clock.stalls.load(ordering: .relaxed) == 0, "the batch was taken: no clock runs")
        queue.push(.text("b"))
        channel.embeddedEventLoop.run()
        #expect(try written(channel) == [frame(0x1, [0x62])])
    }

    @Test("each frame leaves as one buffer, header and payload, written below NIO's encoder: one entry of the writev per frame", arguments: [0, 125, 126, 904, 65_535, 65_536])
    func oneBufferPerFrame(size: Int) throws {
        let (channel, queue, _) = try outletChannel()
        defer { _ = try? channel.finish() }
        let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0) }
        queue.push(.binary(payload), conflatable: true)
        queue.push(.text("x"))
        channel.embeddedEventLoop.run()
        var buffers: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { buffers.append(buffer) }
        let header = size < 126 ? 2 : size < 65_536 ? 4 : 10
        #expect(buffers.map(\.readableBytes) == [3, header + size], "the buffers written: \(buffers.map(\.readableBytes))")
        let lengthField: [UInt8] = size < 126 ? [UInt8(size)] : size < 65_536 ? [126, UInt8(size >> 8), UInt8(size & 0xFF)]
            : [127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: size >> ($0 * 8)) }
        #expect(buffers.last.map { Array($0.readableBytesView.prefix(header)) } == [0x82] + lengthField, "FIN, binary, the length, no mask")
        let sent = buffers.last.map { Array($0.readableBytesView.dropFirst(header)) }
        #expect(sent == payload, "the payload after the header: \(sent?.count ?? 0) bytes, \(size) sent")
        #expect(buffers.first.map { Array($0.readableBytesView) } == [0x81, 1, 0x78])
    }

    @Test("one packet pushed to every page of a loop is encoded once: each outlet writes the same buffer; another packet of equal bytes is encoded anew")
    func sharedEncoding() throws {
        let (loop, waker, outlets) = try outletsOfOneLoop()
        defer { for (channel, _, _) in outlets { _ = try? channel.finish() } }
        let bundle: [UInt8] = Array(repeating: 7, count: 904)
        for (_, queue, _) in outlets { queue.push(.binary(bundle), conflatable: true) }
        loop.run()
        #expect(waker.encodedFrames.reused == 2, "encoded for the first outlet, reused by the other two")
        for (channel, _, _) in outlets { #expect(try written(channel) == [frame(0x2, bundle)]) }
        // Equal bytes in other storage (the next tick's bundle): encoded again, never mistaken.
        let next = bundle.map { $0 }
        for (_, queue, _) in outlets { queue.push(.binary(next), conflatable: true) }
        loop.run()
        #expect(waker.encodedFrames.reused == 4)
        for (channel, _, _) in outlets { #expect(try written(channel) == [frame(0x2, next)]) }
        // A reply of its own before the bundle in one page's batch does not make the next page
        // encode the bundle again.
        let third = bundle.map { $0 &+ 1 }
        for (_, queue, _) in outlets { queue.push(.binary(third), conflatable: true) }
        outlets[1].1.push(.binary([42]))   // written before the bundle, after the first page's
        loop.run()
        #expect(waker.encodedFrames.reused == 6, "the bundle encoded once for the three pages")
        #expect(try written(outlets[1].0) == [frame(0x2, [42]), frame(0x2, third)])
        for index in [0, 2] { #expect(try written(outlets[index].0) == [frame(0x2, third)]) }
    }

    /// Three outlets on channels of one loop, woken through one waker.
    private func outletsOfOneLoop() throws -> (EmbeddedEventLoop, OutletWaker, [(EmbeddedChannel, OutboundQueue, StallCount)]) {
        let loop = EmbeddedEventLoop()
        let waker = OutletWaker(eventLoop: loop)
        return (loop, waker, try (0..<3).map { _ in try outletChannel(loop: loop, waker: waker) })
    }

    @Test("outlets of one loop woken together share one task; each writes its own frames; woken again later, again one task")
    func wokenTogether() throws {
        let (loop, waker, outlets) = try outletsOfOneLoop()
        defer { for (channel, _, _) in outlets { _ = try? channel.finish() } }
        for round in 0..<2 {
            for (index, (_, queue, _)) in outlets.enumerated() { queue.push(.binary([UInt8(round), UInt8(index)]), conflatable: true) }
            #expect(waker.tasks == round + 1, "one task for the three wakes")
            loop.run()
            for (index, (channel, _, _)) in outlets.enumerated() {
                #expect(try written(channel) == [frame(0x2, [UInt8(round), UInt8(index)])])
            }
        }
        // A waker of another loop is not used: the outlet wakes itself.
        let other = OutletWaker(eventLoop: EmbeddedEventLoop())
        let (channel, queue, _) = try outletChannel(waker: other)
        defer { _ = try? channel.finish() }
        queue.push(.text("x"))
        channel.embeddedEventLoop.run()
        #expect(other.tasks == 0)
        #expect(try written(channel) == [frame(0x1, [0x78])])
    }

    @Test("pushes that wake later are held until the waker is flushed: then one task writes them all; a flush with nothing held gives no task")
    func heldUntilFlushed() throws {
        let (loop, waker, outlets) = try outletsOfOneLoop()
        defer { for (channel, _, _) in outlets { _ = try? channel.finish() } }
        waker.flush()
        #expect(waker.tasks == 0)
        for (index, (_, queue, _)) in outlets.enumerated() { queue.push(.binary([UInt8(index)]), conflatable: true, wakingLater: true) }
        loop.run()
        #expect(waker.tasks == 0, "held: no task yet")
        for (channel, _, _) in outlets { #expect(try written(channel).isEmpty) }
        waker.flush()
        waker.flush()
        #expect(waker.tasks == 1)
        loop.run()
        for (index, (channel, _, _)) in outlets.enumerated() { #expect(try written(channel) == [frame(0x2, [UInt8(index)])]) }
    }

    /// An outlet with a 10 s stall time on a channel whose socket takes nothing until told.
    private func heldOutletChannel() throws -> (EmbeddedEventLoop, EmbeddedChannel, OutboundQueue, HeldWrites, StallCount) {
        let loop = EmbeddedEventLoop()
        let held = HeldWrites()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(held)
        try channel.pipeline.syncOperations.addHandler(WebSocketFrameEncoder())
        let queue = OutboundQueue(limit: 1 << 20)
        let stalls = StallCount()
        let installed = FrameOutlet.install(on: channel, queue: queue, stallTime: .seconds(10), onStall: { stalls.stalls.add(1, ordering: .relaxed) })
        loop.run()
        try installed.wait()
        return (loop, channel, queue, held, stalls)
    }

    @Test("a batch the socket has not taken within the stall time closes the connection; one taken in time stops the clock")
    func stall() throws {
        let (loop, channel, queue, held, stalls) = try heldOutletChannel()
        defer { _ = try? channel.finish() }
        let closed = StallCount()
        channel.closeFuture.whenComplete { _ in closed.stalls.add(1, ordering: .relaxed) }
        queue.push(.text("a"))
        loop.run()
        loop.advanceTime(by: .seconds(9))
        held.takeAll()
        loop.advanceTime(by: .seconds(5))
        #expect(stalls.stalls.load(ordering: .relaxed) == 0 && closed.stalls.load(ordering: .relaxed) == 0, "taken in time")
        queue.push(.text("b"))
        loop.run()
        loop.advanceTime(by: .seconds(9))
        #expect(stalls.stalls.load(ordering: .relaxed) == 0)
        loop.advanceTime(by: .seconds(1))
        #expect(stalls.stalls.load(ordering: .relaxed) == 1)
        #expect(closed.stalls.load(ordering: .relaxed) == 1, "closed")
    }

    @Test("an outlet removed while its batch waits for the socket stops its clock: the stall time passes and nothing is closed")
    func removedWhileWaiting() throws {
        let (loop, channel, queue, _, stalls) = try heldOutletChannel()
        defer { _ = try? channel.finish() }
        let closed = StallCount()
        channel.closeFuture.whenComplete { _ in closed.stalls.add(1, ordering: .relaxed) }
        queue.push(.text("a"))
        loop.run()
        let outlet = try channel.pipeline.syncOperations.handler(type: FrameOutlet.self)
        try channel.pipeline.syncOperations.removeHandler(outlet).wait()
        loop.advanceTime(by: .seconds(11))
        #expect(stalls.stalls.load(ordering: .relaxed) == 0, "no stall is reported for a removed outlet")
        #expect(closed.stalls.load(ordering: .relaxed) == 0, "a removed outlet closes nothing")
    }

    @Test("more than a batch waiting is written in batches in one turn")
    func batches() throws {
        let (channel, queue, _) = try outletChannel()
        defer { _ = try? channel.finish() }
        let big = [UInt8](repeating: 7, count: FrameOutlet.batchBytes / 2 + 1)
        for _ in 0..<3 { queue.push(.binary(big)) }
        queue.push(.text("end"))
        channel.embeddedEventLoop.run()
        let frames = try written(channel)
        #expect(frames == [frame(0x2, big), frame(0x2, big), frame(0x2, big), frame(0x1, Array("end".utf8))])
        #expect(queue.queuedBytes == 0)
    }

    @Test("a socket that has not taken a batch gets no more than one: at most batchBytes (or one frame) wait in NIO's buffer at a time")
    func oneBatchAtATime() throws {
        let (loop, channel, queue, held, _) = try heldOutletChannel()
        defer {
            held.takeAll()
            _ = try? channel.finish()
        }
        let big = [UInt8](repeating: 7, count: FrameOutlet.batchBytes / 2 + 1)
        let small = [UInt8](repeating: 1, count: FrameOutlet.batchBytes / 4)
        for _ in 0..<2 { queue.push(.binary(big)) }
        for _ in 0..<4 { queue.push(.binary(small)) }
        queue.push(.text("end"))
        loop.run()
        // One batch at a time, each as much as fits in batchBytes: the next waits for the socket.
        let batches = [[big.count], [big.count, small.count], [small.count, small.count, small.count, 3]]
        for (index, batch) in batches.enumerated() {
            #expect(held.payloadSizes == Array(batches[...index]), "batch \(index + 1) written, no more: \(held.payloadSizes)")
            #expect(batch.reduce(0, +) <= FrameOutlet.batchBytes)
            held.takeAll()
        }
        #expect(held.payloadSizes == batches, "nothing after the last batch")
        #expect(queue.queuedBytes == 0)
    }

    @Test("after a close frame, no data frame is written: neither the queue's nor another writer's; control frames pass")
    func nothingAfterClose() throws {
        let (channel, queue, _) = try outletChannel()
        defer { _ = try? channel.finish() }
        try channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: ByteBuffer(bytes: [0x03, 0xE8]))).wait()
        #expect(try written(channel) == [frame(0x8, [0x03, 0xE8])])
        queue.push(.text("late"))
        channel.embeddedEventLoop.run()
        let late = channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .binary, data: ByteBuffer(bytes: [1])))
        #expect(throws: ChannelError.outputClosed) { try late.wait() }
        try channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .pong, data: ByteBuffer())).wait()
        #expect(try written(channel) == [frame(0xA, [])])
    }
}

final class StallCount: Sendable {
    let stalls = Atomic<Int>(0)
}

/// A socket that takes nothing until told: writes wait (their promises held) until `takeAll`.
/// Records the payload sizes of the frames of each batch written to it (a batch ends where the
/// writer asked to hear of its last write, the one promise of the batch).
final class HeldWrites: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    private var waiting: [EventLoopPromise<Void>] = []
    private var batch: [Int] = []
    private(set) var payloadSizes: [[Int]] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        batch.append(Self.payloadSize(unwrapOutboundIn(data)))
        if let promise {
            waiting.append(promise)
            payloadSizes.append(batch)
            batch = []
        }
    }

    func takeAll() {
        let taken = waiting
        waiting = []
        for promise in taken { promise.succeed() }
    }

    /// The payload length of one whole unmasked frame in `buffer` (its header read).
    private static func payloadSize(_ buffer: ByteBuffer) -> Int {
        let bytes = Array(buffer.readableBytesView)
        guard bytes.count >= 2 else { return -1 }
        switch bytes[1] & 0x7F {
        case 126: return Int(bytes[2]) << 8 | Int(bytes[3])
        case 127: return bytes[2..<10].reduce(0) { $0 << 8 | Int($1) }
        case let length: return Int(length)
        }
    }
}
