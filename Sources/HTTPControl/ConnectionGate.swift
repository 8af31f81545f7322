import HTTPTypes
import Logging
import NIOCore
import NIOHTTPTypes

/// The HTTP half of an admitted connection (docs/HTTP.md, "Limits"): keeps its deadline and mends
/// responses. Connections `Admission` did not admit were answered and closed there; none of their
/// bytes reach this far.
///
/// One gate per HTTP connection, in the pipeline between the HTTP codec and Hummingbird, on that
/// connection's event loop. It
/// - re-arms the admitted connection's deadline (kept by `Admission`) at each request's head and
///   at the end of each response: `exchangeTimeout` to get to the next of those points, or the
///   connection is closed. That bounds slow headers (a head that never completes is closed at
///   the deadline from acceptance or from the last response's end), slow or endless bodies
///   (Hummingbird discards an unread body after answering, with no limit of its own), a peer that
///   never reads its response, and idle keep-alive connections;
/// - turns the answer to a refused WebSocket upgrade (Hummingbird's 400) into 403 or 503 with
///   the reason;
/// - closes after a 413 (the body was not read to its end, so the stream is out of step);
/// - strips the body of every answer to HEAD, whoever wrote it.
final class ConnectionGate: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var admission: Admission?
    private var answered = false
    /// Per request read and not yet answered, oldest first: whether it is a HEAD (its response
    /// goes out without a body). Pipelined requests are all read before the first is answered,
    /// so one flag for "the last head read" would strip the wrong response.
    private var heads: [Bool] = []
    private var closeAfterResponse = false

    init() {}

    func handlerAdded(context: ChannelHandlerContext) {
        admission = try? context.pipeline.syncOperations.handler(type: Admission.self)
    }

    private var verdict: Admission.Verdict { admission?.verdict ?? .refused }

    // MARK: Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if case .admitted = verdict {
            if case let .head(request) = part {
                heads.append(request.method == .head)
                if let admission { admission.arm(admission.rules.exchangeTimeout) }
            }
            context.fireChannelRead(data)
        }
    }

    /// Writes a refusal (`status`, `message` as the body unless `body` is false) and closes the
    /// connection once it is out; nothing else is written after it.
    private func writeRefusal(_ context: ChannelHandlerContext, _ status: HTTPResponse.Status, _ message: String, body: Bool) {
        answered = true
        let text = ByteBuffer(string: message + "\n")
        var response = HTTPResponse(status: status)
        response.headerFields[.contentType] = "text/plain; charset=utf-8"
        response.headerFields[.contentLength] = "\(text.readableBytes)"
        response.headerFields[.connection] = "close"
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        if body { context.write(wrapOutboundOut(.body(text)), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    // MARK: Responses

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // A refusal was written in place of a refused upgrade's answer: nothing else goes out.
        if answered {
            promise?.succeed()
            return
        }
        if case .head = unwrapOutboundIn(data), let (status, reason) = admission?.refusedUpgrade {
            // Hummingbird answers a refused WebSocket upgrade with a bare 400 and closes; the
            // request itself did not come through here.
            writeRefusal(context, status, reason, body: true)
            promise?.succeed()
            return
        }
        guard case .admitted = verdict else { return context.write(data, promise: promise) }
        switch unwrapOutboundIn(data) {
        case var .head(response):
            if response.status == .contentTooLarge {
                closeAfterResponse = true
                response.headerFields[.connection] = "close"
                return context.write(wrapOutboundOut(.head(response)), promise: promise)
            }
            context.write(data, promise: promise)
        case .body:
            if heads.first == true {
                promise?.succeed()
            } else {
                context.write(data, promise: promise)
            }
        case .end:
            if !heads.isEmpty { heads.removeFirst() }
            let written = promise ?? context.eventLoop.makePromise()
            context.write(data, promise: written)
            // The response has reached the socket: a new deadline for the next request (or the
            // end of this one's unread body, which Hummingbird reads and discards).
            written.futureResult.assumeIsolated().whenSuccess { [self] in
                if closeAfterResponse {
                    context.close(promise: nil)
                } else if let admission {
                    admission.arm(admission.rules.exchangeTimeout)
                }
            }
        }
    }
}
