import NIOCore

/// WebSocket frames from the server as bytes ready for the socket (RFC 6455 §5.2: FIN, the
/// opcode, the length, no mask), written by `FrameOutlet` below NIO's frame encoder.
///
/// Frames of the same bytes are encoded once per event loop: a meter tick pushes one packet (one
/// `[UInt8]`, shared) to every page listening, and every page's outlet then writes the same
/// `ByteBuffer`, without a copy of its own or an encoder pass. Event loop only (one per loop,
/// from its `OutletWaker`).
final class EncodedFrames: @unchecked Sendable {
    // @unchecked: used only on the event loop whose outlets share it (its `OutletWaker`'s).
    /// The last two binary payloads encoded, newest last, each kept so its storage cannot be
    /// reused by another array while it is compared by address, and its frame. Two: a page
    /// whose batch holds a reply of its own before the meter bundle does not evict the bundle
    /// the next page writes.
    private var recent: [(source: [UInt8], encoded: ByteBuffer)] = []
    /// Binary frames written from a kept encoding (for tests).
    private(set) var reused = 0

    /// The frame for `frame`: for a binary payload whose storage is a kept one's, the same buffer.
    func buffer(for frame: OutboundQueue.Frame, allocator: ByteBufferAllocator) -> ByteBuffer {
        guard case let .binary(bytes) = frame else { return Self.encode(frame, allocator: allocator) }
        if let kept = recent.first(where: { Self.sameStorage($0.source, bytes) }) {
            reused += 1
            return kept.encoded
        }
        let buffer = Self.encode(frame, allocator: allocator)
        if recent.count == 2 { recent.removeFirst() }
        recent.append((bytes, buffer))
        return buffer
    }

    private static func sameStorage(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
    }

    /// One whole frame (header and payload) in a buffer of its own.
    static func encode(_ frame: OutboundQueue.Frame, allocator: ByteBufferAllocator) -> ByteBuffer {
        let size = frame.size
        var buffer = allocator.buffer(capacity: 10 + size)
        switch frame {
        case let .text(text):
            writeHeader(opcode: 0x1, length: size, into: &buffer)
            buffer.writeString(text)
        case let .binary(bytes):
            writeHeader(opcode: 0x2, length: size, into: &buffer)
            buffer.writeBytes(bytes)
        }
        return buffer
    }

    /// FIN and the opcode, then the payload length in 7 bits, or 126 and 16 bits, or 127 and 64
    /// bits, big-endian; a server's frames carry no mask.
    static func writeHeader(opcode: UInt8, length: Int, into buffer: inout ByteBuffer) {
        buffer.writeInteger(0x80 | opcode)
        if length < 126 {
            buffer.writeInteger(UInt8(length))
        } else if length <= Int(UInt16.max) {
            buffer.writeInteger(UInt8(126))
            buffer.writeInteger(UInt16(length), endianness: .big)
        } else {
            buffer.writeInteger(UInt8(127))
            buffer.writeInteger(UInt64(length), endianness: .big)
        }
    }
}

/// Where `FrameOutlet` writes its encoded frames: a handler just below NIO's frame encoder (toward
/// the socket), through whose context bytes go on to the socket without passing the encoder. It
/// passes everything else on untouched.
final class EncodedFrameDoor: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny
    private(set) var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }
}
