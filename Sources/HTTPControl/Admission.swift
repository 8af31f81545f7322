import HTTPTypes
import Logging
import NIOCore
import OSCTransport
import SessionStore

/// The verdict on one connection and the clock it runs on, from the moment it is accepted
/// (docs/HTTP.md, "Limits"): the first handler of every connection's pipeline, before HTTP is
/// decoded, so a connection that never sends a byte, or that asks for a WebSocket, is judged and
/// timed like any other.
///
/// It decides when the connection becomes active: a peer outside `osc.allow` is refused, a peer
/// over the connection limit is turned away (neither holds a slot; the connection gate answers
/// their first request with 403 or 503 and closes), anyone else is admitted and holds one of the
/// `maximumConnections` slots until the connection closes, whether it stays HTTP or becomes a
/// WebSocket. It owns the connection's deadline: `arm` (re)starts it, `disarm` stops it (a
/// WebSocket keeps itself alive with pings instead). Passes every byte through untouched.
///
/// Event loop only: the connection gate and the WebSocket upgrade find it in the pipeline.
final class Admission: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    enum Verdict: Equatable {
        case undecided
        case admitted
        /// Outside `osc.allow`; the peer's address, for the answer.
        case refused(String)
        case overloaded
    }

    struct Rules: Sendable {
        var allow: [NetworkRange]
        var maximumConnections: Int
        var exchangeTimeout: TimeAmount
        var refusalTimeout: TimeAmount
        var logger: Logger
    }

    let rules: Rules
    private let slots: ConnectionSlots
    private(set) var verdict = Verdict.undecided
    private var holdsSlot = false
    private var deadline: Scheduled<Void>?
    private var context: ChannelHandlerContext?
    /// The answer to a peer that is not admitted: 403 outside `osc.allow`, 503 over the limit.
    var refusal: (status: HTTPResponse.Status, reason: String)? {
        switch verdict {
        case .admitted, .undecided: nil
        case let .refused(name): (.forbidden, "\(name) is not allowed to control this router (osc.allow)")
        case .overloaded: (.serviceUnavailable, "too many HTTP connections (at most \(rules.maximumConnections)); try again")
        }
    }

    /// Why an admitted peer's WebSocket upgrade was refused: the connection gate answers with
    /// this instead of Hummingbird's bare 400.
    var refusedUpgrade: (status: HTTPResponse.Status, reason: String)?

    init(rules: Rules, slots: ConnectionSlots) {
        self.rules = rules
        self.slots = slots
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { decide(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
        self.context = nil
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
                arm(rules.exchangeTimeout)
            } else {
                verdict = .overloaded
                rules.logger.notice("HTTP connection limit reached: answering 503",
                                    metadata: ["peer": "\(peer)", "limit": "\(rules.maximumConnections)"])
                arm(rules.refusalTimeout)
            }
        } else {
            verdict = .refused(peer?.ipAddress ?? "this address")
            rules.logger.notice("refused HTTP from a sender outside osc.allow", metadata: ["peer": "\(peer.map { "\($0)" } ?? "unknown")"])
            arm(rules.refusalTimeout)
        }
    }

    private func release() {
        disarm()
        if holdsSlot {
            holdsSlot = false
            slots.give()
        }
    }

    /// Closes the connection `timeout` from now unless re-armed or disarmed first.
    func arm(_ timeout: TimeAmount) {
        deadline?.cancel()
        guard let context else { return }
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            context.close(promise: nil)
        }
    }

    /// No deadline from now on (an upgraded WebSocket: its pings find a dead peer).
    func disarm() {
        deadline?.cancel()
        deadline = nil
    }

    static func isAllowed(_ peer: NIOCore.SocketAddress, by allow: [NetworkRange]) -> Bool {
        guard let host = peer.ipAddress, let port = peer.port,
              let address = OSCTransport.SocketAddress(host: host, port: UInt16(clamping: port)) else { return false }
        return allow.contains { $0.contains(address.bytes, port: address.port) }
    }
}
