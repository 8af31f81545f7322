import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import OSCTransport

/// Every connection of the HTTP server: `Admission` first, before any byte is decoded, then
/// Hummingbird's HTTP/1.1 with the WebSocket upgrade (the connection gate rides on the HTTP
/// side). The upgrade is granted only to an admitted peer whose request passes `OriginCheck`;
/// what the WebSocket may do is its address's rights, or a person's with the page's key.
struct HTTPControlChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value

    let inner: HTTP1WebSocketUpgradeChannel
    let rules: Admission.Rules
    let book: ConnectionBook

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(Admission(rules: rules, book: book), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        // Hummingbird's upgrade pipeline leaves HTTP errors unanswered (a malformed request,
        // headers over the limit): NIO's handler answers them 400 and closes, as on a plain
        // HTTP/1.1 pipeline.
        return inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let decoder = try channel.pipeline.syncOperations.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self)
            let answer = HTTPServerProtocolErrorHandler()
            try channel.pipeline.syncOperations.addHandler(answer, position: .after(decoder.handler))
            try channel.pipeline.syncOperations.addHandler(CloseOnHTTPError(), position: .after(answer))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        // Hummingbird logs a request that could not be decoded as an error of its own, once per
        // connection: a peer's garbage is not the router's error (it was answered 400), and a
        // flood of it must not flood the log.
        var quiet = logger
        quiet.logLevel = .critical
        await inner.handle(value: value, logger: quiet)
    }

    /// Whether a WebSocket upgrade is granted, and what serves it: on the connection's event loop.
    static func shouldUpgrade(_ request: HTTPRequest, _ channel: any Channel, control: AttachedControl, hub: ListenHub,
                              waker: OutletWaker?, configuration: HTTPControlServer.Configuration, logger: Logger)
        -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        // A peer that is not admitted gets the gate's 403 or 503 (it answers the request).
        guard let admission = try? channel.pipeline.syncOperations.handler(type: Admission.self),
              admission.verdict == .admitted else { return .dontUpgrade }
        if let refusal = OriginCheck.refusal(host: request.authority, origin: request.headerFields[.origin],
                                                 machineNames: OriginCheck.machineNames) {
            logger.notice("refused a WebSocket", metadata: ["peer": "\(channel.remoteAddress.map { "\($0)" } ?? "unknown")", "why": "\(refusal)"])
            admission.refusedUpgrade = (.forbidden, refusal)
            return .dontUpgrade
        }
        guard let control = control.get(), let remote = channel.remoteAddress, let host = remote.ipAddress,
              let peer = OSCTransport.SocketAddress(host: host, port: UInt16(clamping: remote.port ?? 0)) else {
            admission.refusedUpgrade = (.serviceUnavailable, "the router is starting or stopping; try again")
            return .dontUpgrade
        }
        // From here the connection lives as long as its pings are answered, and speaks no HTTP:
        // the handlers this channel added for HTTP errors go (NIO removes its own).
        admission.disarm()
        for context in [try? channel.pipeline.syncOperations.context(handlerType: CloseOnHTTPError.self),
                        try? channel.pipeline.syncOperations.context(handlerType: HTTPServerProtocolErrorHandler.self)] {
            if let context { channel.pipeline.syncOperations.removeHandler(context: context, promise: nil) }
        }
        // Rights come from the peer's address, and from the page's key if it presents one
        // (checked by the control server); never from a header such as Origin, which any
        // program may write.
        let session = WebSocketSession(control: control, hub: hub, channel: channel, peer: peer,
                                       key: WebSocketSession.presentedKey(in: request.path ?? ""),
                                       queueLimit: configuration.webSocketQueueBytes,
                                       maximumMessageBytes: configuration.maximumWebSocketMessageBytes,
                                       stallSeconds: configuration.webSocketPingSeconds, waker: waker, logger: logger)
        return .upgrade([:], { inbound, _, _ in await session.run(inbound: inbound) })
    }
}

/// Closes a connection whose request could not be decoded, once NIO's handler has answered it
/// (the stream is out of step: nothing after the error can be read as HTTP).
final class CloseOnHTTPError: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError {
            context.close(promise: nil)
        } else {
            context.fireErrorCaught(error)
        }
    }
}
