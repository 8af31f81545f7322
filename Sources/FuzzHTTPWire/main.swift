import CFuzzerDriver
import Foundation
import HTTPControl
import HummingbirdCore
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOWebSocket
import OSCTransport

/// libFuzzer target: arbitrary bytes on the HTTP port's wire, through the decoders the server
/// puts in front of our code and on into what of ours reads their output. The first byte chooses:
/// - even: an HTTP/1.1 request stream (SwiftNIO's request decoder, with its error handler that
///   answers 400): each request head's Host and Origin go through `OriginCheck`, its target
///   through Hummingbird's `URI` as `OSCQueryResponder` reads it;
/// - odd: WebSocket frames from a client (SwiftNIO's frame decoder at the server's frame limit,
///   `HTTPControlServer.Configuration().maximumWebSocketMessageBytes`, with its protocol error
///   handler): binary frames are OSC packets (`OSCCodec`), text frames OSCQuery commands
///   (`OSCQueryCommand`), as `WebSocketSession` takes them.
/// Bad input is an error value or a closed connection, never a crash; a decoded frame is never
/// over the limit.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzHTTPWire(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let bytes = UnsafeBufferPointer(start: data + 1, count: size - 1)
    if data[0] % 2 == 0 {
        feed(bytes, through: [ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)),
                              HTTPServerProtocolErrorHandler(), RequestHeads()])
    } else {
        let limit = HTTPControlServer.Configuration().maximumWebSocketMessageBytes
        feed(bytes, through: [ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: limit)),
                              WebSocketProtocolErrorHandler(), Frames(limit: limit)])
    }
    return 0
}

/// Writes `bytes` into a channel with `handlers`, in two pieces (a request split across reads),
/// then closes it.
private func feed(_ bytes: UnsafeBufferPointer<UInt8>, through handlers: [any ChannelHandler]) {
    let channel = EmbeddedChannel()
    try! channel.pipeline.syncOperations.addHandlers(handlers)
    let split = bytes.count / 2
    for piece in [bytes[..<split], bytes[split...]] where channel.isActive {
        var buffer = channel.allocator.buffer(capacity: piece.count)
        buffer.writeBytes(Array(piece))
        _ = try? channel.writeInbound(buffer)
    }
    _ = try? channel.finish()
}

/// What our code makes of each request head.
private final class RequestHeads: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case let .head(head) = unwrapInboundIn(data) else { return }
        _ = OriginCheck.refusal(host: head.headers.first(name: "host"), origin: head.headers.first(name: "origin"), machineNames: ["rig"])
        // The target as the responder reads it: Hummingbird's URI, the path percent-decoded, the
        // query naming HOST_INFO or an attribute.
        let uri = URI(head.uri)
        _ = uri.path.removingPercentEncoding
        _ = uri.query?.utf8.count
    }
}

/// What our code makes of each frame.
private final class Frames: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    let limit: Int

    init(limit: Int) { self.limit = limit }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        precondition(frame.length <= limit, "a frame over the limit was decoded")
        let payload = Array(frame.unmaskedData.readableBytesView)
        switch frame.opcode {
        case .binary: _ = try? OSCCodec.decode(payload)
        case .text: _ = OSCQueryCommand.decode(String(decoding: payload, as: UTF8.self))
        default: break
        }
    }
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzHTTPWire($0, $1) })
