import Dispatch
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
        if let page = configuration.page, let generation = page.generation(holding: key) {
            adminStreams[id] = generation
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
        if peer.transport == .tcp && adminStreams[peer.connection] != nil { return [.string("admin"), .string("key")] }
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
    /// sender that gives the current key. The new key is written on a queue of its own (two
    /// fsyncs: UDP, TCP and meters on this thread do not wait for the disk), then, back on this
    /// thread, WebSockets admitted with an older key keep their address's rights only, and the
    /// sender is answered: from the answer on, the old key grants nothing. A stream admitted with
    /// the old key while the write was under way is among those revoked; one admitted with the
    /// new key is not. A write that fails leaves the old key in force and answers -1.
    func rotatePageKey(presented: String?, by peer: OSCServer.Peer, path: String) throws(PolicyError) {
        guard let page = configuration.page else { throw Self.noPage }
        let holder = isAdminAddress(peer) || (peer.transport == .tcp && adminStreams[peer.connection] != nil)
            || presented.map(page.holds) == true
        guard holder else {
            throw PolicyError(.notPermitted, "only an osc.admin address or a holder of the page's key may change the key")
        }
        // One write at a time: a flood of requests (UDP from an osc.admin address can be forged)
        // queues no writes.
        guard !rotatingPageKey else {
            throw PolicyError(.general, "the page's key is being changed already; ask again once that is answered")
        }
        rotatingPageKey = true
        Self.keyWriter.async { [self] in
            let written: Result<Int, PageKeyFile.Failure>
            do throws(PageKeyFile.Failure) { written = .success(try page.rotate()) } catch { written = .failure(error) }
            server.execute { [self] in finishRotation(written, page: page, by: peer, path: path) }
        }
    }

    private func finishRotation(_ written: Result<Int, PageKeyFile.Failure>, page: PageAccess, by peer: OSCServer.Peer, path: String) {
        rotatingPageKey = false
        switch written {
        case let .success(generation):
            let revoked = Set(adminStreams.filter { $0.value < generation }.keys)
            adminStreams = adminStreams.filter { $0.value >= generation }
            // Timed bundles only an old key allowed would otherwise still apply at their moment,
            // whether or not the WebSocket that sent them is still open.
            router.withdrawTimedChanges(allowedByKeysBefore: generation, refusal: Self.keyRevoked)
            logger.notice("the page's key was changed: the old one grants nothing from now on",
                          metadata: ["by": "\(peer)", "WebSockets back to their address's rights": "\(revoked.count)"])
            sendReply(to: peer, path: path, [.string(page.file.path)])
        case let .failure(error):
            sendError(to: peer, path: path, PolicyError(.general, "the page's key was not changed (it could not be kept): \(error)"))
        }
    }

    /// Where new keys are written, in the order they were asked for.
    private static let keyWriter = DispatchQueue(label: "duckrouter.page-key")

    static let keyRevoked = PolicyError(.notPermitted, "not applied: the page's key that allowed it was changed before its moment")

    static let noPage = PolicyError(.general, "the control page is off (HTTP is off: http.port 0, or its port could not be opened)")
}
