import OSCTransport
import Policy
import SessionStore

/// Rights and the control page's key (docs/HTTP.md, "Who may do what"; OSC server thread only).
///
/// A peer's rights come from who it is, never from what it says: its address (`osc.allow` may
/// talk; `osc.admin` has a person's rights over every app), and, for a WebSocket, the page's key
/// presented when it opened. `/rights` tells a peer which it has; `/page` where the page is and
/// where its key is kept (never the key); `/page/key/rotate` changes the key.
extension ControlServer {
    /// A stream's peer presented `key` when it opened: a person's rights if it is the page's.
    func admit(_ key: String, on id: Int, from address: SocketAddress) {
        if let page = configuration.page, page.holds(key) {
            adminStreams.insert(id)
            logger.info("a WebSocket opened with the page's key: a person's rights over every app", metadata: ["peer": "\(address)"])
        } else if let count = configuration.page?.noteWrongKey(now: OSCServer.clockSeconds()) {
            logger.notice("a WebSocket opened with a key that is not the page's (wrong, or changed since): its address's rights only",
                          metadata: ["peer": "\(address)", "wrong keys since the last report": "\(count)"])
        }
    }

    /// Whether `osc.admin` names the peer's address. An entry with a port names a UDP surface by
    /// the port it sends from and is answered at; it grants no TCP or WebSocket peer, whose source
    /// port any program on that host may take.
    func isAdminAddress(_ peer: OSCServer.Peer) -> Bool {
        configuration.admin.contains { range in
            peer.transport == .udp ? range.contains(peer.address.bytes, port: peer.address.port)
                : range.port == nil && range.contains(peer.address.bytes, port: peer.address.port)
        }
    }

    /// `/rights`: `admin` (every app) or `owner` (the apps it registered, and the router's shared
    /// controls), and why: `osc.admin`, `key` or `osc.allow`.
    func rights(of peer: OSCServer.Peer) -> [OSCArgument] {
        if isAdminAddress(peer) { return [.string("admin"), .string("osc.admin")] }
        if peer.transport == .tcp && adminStreams.contains(peer.connection) { return [.string("admin"), .string("key")] }
        return [.string("owner"), .string("osc.allow")]
    }

    /// `/page`: the page's address without its key, and the file that keeps the key: to a peer on
    /// this machine (loopback, where duckctl asks) or an `osc.admin` address only; the path tells
    /// where the router's user keeps its files, which other peers need not know.
    func pageLocation(to peer: OSCServer.Peer) throws(PolicyError) -> [OSCArgument] {
        guard let page = configuration.page else { throw Self.noPage }
        guard peer.address.isLoopback || isAdminAddress(peer) else { return [.string(page.address)] }
        return [.string(page.address), .string(page.file.path)]
    }

    /// `/page/key/rotate`: from an `osc.admin` address, a WebSocket opened with the key, or a
    /// sender that gives the current key. WebSockets opened with the old key keep their
    /// address's rights only, from the next message on.
    func rotatePageKey(presented: String?, by peer: OSCServer.Peer) throws(PolicyError) -> [OSCArgument] {
        guard let page = configuration.page else { throw Self.noPage }
        let holder = isAdminAddress(peer) || (peer.transport == .tcp && adminStreams.contains(peer.connection))
            || presented.map(page.holds) == true
        guard holder else {
            throw PolicyError(.notPermitted, "only an osc.admin address or a holder of the page's key may change the key")
        }
        do throws(PageKeyFile.Failure) {
            try page.rotate()
        } catch {
            throw PolicyError(.general, "the page's key was not changed (it could not be kept): \(error)")
        }
        let revoked = adminStreams.count
        adminStreams.removeAll()
        logger.notice("the page's key was changed: the old one grants nothing from now on",
                      metadata: ["by": "\(peer)", "WebSockets back to their address's rights": "\(revoked)"])
        return [.string(page.file.path)]
    }

    static let noPage = PolicyError(.general, "the control page is off (HTTP is off: http.port 0, or its port could not be opened)")
}
