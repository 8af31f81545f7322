import OSCTransport

/// OSC carried by another front end (the WebSocket of HTTPControl, docs/HTTP.md): each stream is
/// a connection of the OSC server, so its packets are handled exactly as OSC over TCP, and what
/// is sent to it (replies, errors, notifications, meters) leaves through its outlet.
extension ControlServer {
    /// Opens a stream for a peer at `address` (see `OSCServer.openStream`); returns its id.
    /// - Parameter admin: the peer has a person's rights, as an `osc.admin` address: it may
    ///   control any app, whoever registered it (the control page).
    public func openStream(from address: SocketAddress, admin: Bool, outlet: @escaping OSCServer.Outlet) -> OSCServer.StreamHandle {
        let handle = server.openStream(from: address, outlet: outlet)
        if admin { server.execute { [self] in adminStreams.insert(handle.id) } }
        return handle
    }

    /// One OSC packet from the stream's peer, handled as if it came over TCP.
    public func receive(_ packet: [UInt8], on stream: OSCServer.StreamHandle) {
        server.receive(packet, on: stream)
    }

    /// The stream has ended (its apps become unowned, its subscriptions end).
    public func closeStream(_ stream: OSCServer.StreamHandle) {
        server.closeStream(stream)
    }

    /// Calls `observer` (on the OSC server's thread; it must not block) after anything that may
    /// have changed what a read sees: a burst of packets handled, a notification from the router.
    /// Changes that send no notification and come from elsewhere are not seen: a front end that
    /// must see everything also reads now and then.
    public func observeChanges(_ observer: @escaping @Sendable () -> Void) {
        server.execute { [self] in changeObservers.append(observer) }
    }
}
