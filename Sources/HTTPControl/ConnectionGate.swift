import HTTPTypes
import Logging
import NIOCore
import NIOHTTPTypes
import OSCControl
import SessionStore
import OSCTransport
import Synchronization

/// Decides, per connection and before Hummingbird sees a request, whether it is served, and
/// bounds how long any connection can hold a slot (docs/HTTP.md, "Limits").
///
/// One gate per connection, in the connection's pipeline between the HTTP codec and Hummingbird,
/// on that connection's event loop (NIO calls it on no other thread). It owns:
/// - the verdict, taken when the connection is accepted: a peer outside `osc.allow` is refused,
///   a peer over the connection limit is turned away; both get one answer (403 or 503) to their
///   first request and the connection is closed, and are closed unanswered if no request comes
///   within `refusalTimeout`. Neither holds one of the `maximumConnections` slots.
/// - the deadline of an admitted connection: from acceptance, and again from each request's
///   head and from the end of each response, `exchangeTimeout` to get to the next of those
///   points, or the connection is closed. That bounds slow headers, slow or endless bodies
///   (Hummingbird discards an unread body after answering, with no limit of its own), a peer
///   that never reads its response, and idle keep-alive connections.
/// - closing after a 413 (the body was not read to its end, so the stream is out of step).
/// - stripping the body of every answer to HEAD, whoever wrote it.
final class ConnectionGate: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    struct Rules: Sendable {
        var allow: [NetworkRange]
        var maximumConnections: Int
        var exchangeTimeout: TimeAmount
        var refusalTimeout: TimeAmount
        var logger: Logger
    }

    private enum Verdict {
        case undecided
        case admitted
        case refused(String)
        case overloaded
    }

    private let rules: Rules
    private let slots: ConnectionSlots
    private var verdict = Verdict.undecided
    private var holdsSlot = false
    private var answered = false
    private var deadline: Scheduled<Void>?
    /// Per request read and not yet answered, oldest first: whether it is a HEAD (its response
    /// goes out without a body). Pipelined requests are all read before the first is answered,
    /// so one flag for "the last head read" would strip the wrong response.
    private var heads: [Bool] = []
    private var closeAfterResponse = false

    init(rules: Rules, slots: ConnectionSlots) {
        self.rules = rules
        self.slots = slots
    }

    // MARK: Life of the connection

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { decide(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
    }

    func channelActive(context: ChannelHandlerContext) {
        decide(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    private func decide(_ context: ChannelHandlerContext) {
        guard case .undecided = verdict else { return }
        let peer = context.channel.remoteAddress
        if let peer, Self.isAllowed(peer, by: rules.allow) {
            if slots.take(limit: rules.maximumConnections) {
                holdsSlot = true
                verdict = .admitted
                arm(context, rules.exchangeTimeout)
            } else {
                verdict = .overloaded
                rules.logger.notice("HTTP connection limit reached: answering 503",
                                    metadata: ["peer": "\(peer)", "limit": "\(rules.maximumConnections)"])
                arm(context, rules.refusalTimeout)
            }
        } else {
            let name = peer?.ipAddress ?? "this address"
            verdict = .refused(name)
            rules.logger.notice("refused HTTP from a sender outside osc.allow", metadata: ["peer": "\(peer.map { "\($0)" } ?? "unknown")"])
            arm(context, rules.refusalTimeout)
        }
    }

    private func release() {
        deadline?.cancel()
        deadline = nil
        if holdsSlot {
            holdsSlot = false
            slots.give()
        }
    }

    /// Closes the connection `timeout` from now unless re-armed first.
    private func arm(_ context: ChannelHandlerContext, _ timeout: TimeAmount) {
        deadline?.cancel()
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            context.close(promise: nil)
        }
    }

    // MARK: Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch verdict {
        case .admitted:
            if case let .head(request) = part {
                heads.append(request.method == .head)
                arm(context, rules.exchangeTimeout)
            }
            context.fireChannelRead(data)
        case let .refused(name):
            if case let .head(request) = part {
                refuse(context, request, .forbidden, "\(name) is not allowed to control this router (osc.allow)")
            }
        case .overloaded:
            if case let .head(request) = part {
                refuse(context, request, .serviceUnavailable,
                       "too many HTTP connections (at most \(rules.maximumConnections)); try again")
            }
        case .undecided:
            break
        }
    }

    /// Answers the first request of a connection that is not served, and closes it.
    private func refuse(_ context: ChannelHandlerContext, _ request: HTTPRequest, _ status: HTTPResponse.Status, _ message: String) {
        guard !answered else { return }
        answered = true
        let body = ByteBuffer(string: message + "\n")
        var response = HTTPResponse(status: status)
        response.headerFields[.contentType] = "text/plain; charset=utf-8"
        response.headerFields[.contentLength] = "\(body.readableBytes)"
        response.headerFields[.connection] = "close"
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        if request.method != .head { context.write(wrapOutboundOut(.body(body)), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    // MARK: Responses of admitted connections (a refusal is written by `refuse`, from here down)

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
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
                } else {
                    arm(context, rules.exchangeTimeout)
                }
            }
        }
    }

    // MARK: Who may

    static func isAllowed(_ peer: NIOCore.SocketAddress, by allow: [NetworkRange]) -> Bool {
        guard let host = peer.ipAddress, let port = peer.port,
              let address = OSCTransport.SocketAddress(host: host, port: UInt16(clamping: port)) else { return false }
        return allow.contains { $0.contains(address.bytes, port: address.port) }
    }
}

/// The admitted connections of one server, counted across its event loops.
final class ConnectionSlots: Sendable {
    private let taken = Atomic<Int>(0)

    /// Takes a slot if fewer than `limit` are taken.
    func take(limit: Int) -> Bool {
        var current = taken.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = taken.compareExchange(expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func give() {
        taken.subtract(1, ordering: .acquiringAndReleasing)
    }
}
