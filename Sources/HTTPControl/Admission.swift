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
/// It decides when the connection becomes active. A peer outside `osc.allow` is refused, and a
/// peer over a connection cap (in all, or from its address), or one that comes when the process
/// is short of descriptors (`DescriptorBudget.isShort`), is turned away: either gets a fixed
/// short answer (403 or 503) written at once, without its request being waited for or read, and
/// the connection is closed as soon as that is written; it holds no slot and no timer. Anyone
/// else is admitted and holds a slot in the `ConnectionBook` until the connection closes,
/// whether it stays HTTP or becomes a WebSocket. It owns an admitted connection's deadline:
/// `arm` (re)starts it, `disarm` stops it when the connection becomes a WebSocket (which keeps
/// itself alive with pings instead).
/// Passes an admitted connection's bytes through untouched, and drops any other's.
///
/// Event loop only: the connection gate and the WebSocket upgrade find it in the pipeline.
final class Admission: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum Verdict: Equatable {
        case undecided
        case admitted
        /// Outside `osc.allow`.
        case refused
        /// Over a connection cap.
        case overloaded
    }

    struct Rules: Sendable {
        var allow: [NetworkRange]
        /// Addresses that may take the slots kept beyond the total cap (`osc.admin`; a
        /// `host:port` entry grants UDP only, so it counts for nothing here).
        var admin: [NetworkRange] = []
        var exchangeTimeout: TimeAmount
    }

    let rules: Rules
    private let book: ConnectionBook
    private(set) var verdict = Verdict.undecided
    /// The host the slot this connection holds is counted under (`ConnectionBook.admit`), while
    /// it holds one.
    private var slot: String?
    private var isWebSocket = false
    private var deadline: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    /// Why an admitted peer's WebSocket upgrade was refused: the connection gate answers with
    /// this instead of Hummingbird's bare 400.
    var refusedUpgrade: (status: HTTPResponse.Status, reason: String)?

    init(rules: Rules, book: ConnectionBook) {
        self.rules = rules
        self.book = book
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

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard verdict == .admitted else { return }
        context.fireChannelRead(data)
    }

    private func decide(_ context: ChannelHandlerContext) {
        guard case .undecided = verdict else { return }
        let peer = context.channel.remoteAddress
        let address = peer?.ipAddress ?? "unknown"
        guard let peer, let parsed = Self.address(of: peer), rules.allow.contains(where: { $0.contains(parsed.bytes, port: parsed.port) }) else {
            verdict = .refused
            book.refused(address)
            return answer(context, Self.forbidden)
        }
        // The last descriptors are the process's own, admins' connections or not (DescriptorBudget).
        if DescriptorBudget.isShort() {
            verdict = .overloaded
            book.shortOfDescriptors(address)
            return answer(context, Self.short)
        }
        let admin = rules.admin.contains { $0.port == nil && $0.contains(parsed.bytes, port: parsed.port) }
        switch book.admit(parsed.countedHostName, admin: admin, from: address) {
        case .admitted:
            slot = parsed.countedHostName
            verdict = .admitted
            arm(rules.exchangeTimeout)
        case .overTotal, .overAddress:
            verdict = .overloaded
            answer(context, Self.unavailable)
        }
    }

    /// Writes `bytes` straight to the socket and closes the connection once they are written.
    private func answer(_ context: ChannelHandlerContext, _ bytes: ByteBuffer) {
        context.writeAndFlush(wrapOutboundOut(bytes)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    private func release() {
        deadline?.cancel()
        deadline = nil
        if let host = slot {
            slot = nil
            book.release(host, webSocket: isWebSocket)
        }
    }

    /// Closes the connection `timeout` from now unless re-armed or disarmed first.
    func arm(_ timeout: TimeAmount) {
        deadline?.cancel()
        guard let context else { return }
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [book] in
            book.closedAtDeadline()
            context.close(promise: nil)
        }
    }

    /// The connection became a WebSocket: no deadline from now on (its pings find a dead peer),
    /// and it is counted as one.
    func disarm() {
        deadline?.cancel()
        deadline = nil
        if slot != nil, !isWebSocket {
            isWebSocket = true
            book.upgraded()
        }
    }

    static func isAllowed(_ peer: NIOCore.SocketAddress, by allow: [NetworkRange]) -> Bool {
        guard let address = address(of: peer) else { return false }
        return allow.contains { $0.contains(address.bytes, port: address.port) }
    }

    /// The peer's address as the allow lists read it (an IPv4-mapped IPv6 address is IPv4).
    static func address(of peer: NIOCore.SocketAddress) -> OSCTransport.SocketAddress? {
        guard let host = peer.ipAddress, let port = peer.port else { return nil }
        return OSCTransport.SocketAddress(host: host, port: UInt16(clamping: port))
    }

    /// The whole answer to a refused peer, and to one over a cap: written before its request is
    /// read, so the same for every method (a HEAD gets the body too).
    static let forbidden = fixedAnswer("403 Forbidden", "this address is not allowed to control this router (osc.allow)")
    static let unavailable = fixedAnswer("503 Service Unavailable", "too many HTTP connections; try again")
    static let short = fixedAnswer("503 Service Unavailable", DescriptorBudget.shortMessage)

    private static func fixedAnswer(_ status: String, _ reason: String) -> ByteBuffer {
        let body = reason + "\n"
        return ByteBuffer(string: "HTTP/1.1 \(status)\r\nContent-Type: text/plain; charset=utf-8\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
    }
}
