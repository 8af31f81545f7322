import OSCTransport

/// OSC carried by another front end (the WebSocket of HTTPControl, docs/HTTP.md): each stream is
/// a connection of the OSC server, so its packets are handled exactly as OSC over TCP, and what
/// is sent to it (replies, errors, notifications, meters) leaves through its outlet.
extension ControlServer {
    /// Opens a stream for a peer at `address` (see `OSCServer.openStream`); returns its id.
    /// - Parameter key: the page's key as the peer presented it (nil: none). If it is the
    ///   page's key when the stream opens, the peer has a person's rights, as an `osc.admin`
    ///   address, until the key changes: it may control any app, whoever registered it. Checked
    ///   on the server's thread, in order with `/page/key/rotate`, so an old key never slips in.
    public func openStream(from address: SocketAddress, key: String?, outlet: @escaping OSCServer.Outlet,
                           turnEnd: (@Sendable () -> Void)? = nil) -> OSCServer.StreamHandle {
        let handle = server.openStream(from: address, outlet: outlet, turnEnd: turnEnd)
        if let key { server.execute { [self] in admit(key, on: handle.id, from: address) } }
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

    /// Sends the stream the OSCQuery meter paths in `paths` (`/app/<app>/meter`,
    /// `/route/<route>/meter`) at 20 Hz, each as a message of its own path with the peak per
    /// channel in dBFS since the last one; an empty set stops them. Meters are conflatable: a
    /// stream that reads slowly gets fewer, never a backlog.
    public func listenMeters(on stream: OSCServer.StreamHandle, paths: Set<String>) {
        server.execute { [self] in
            let id = stream.id
            if let existing = meterTargets.first(where: { $0.connection == id && $0.meterPaths != nil }) {
                if paths.isEmpty {
                    meterTargets.removeAll { $0 === existing }
                } else {
                    existing.meterPaths = paths
                }
                return
            }
            guard !paths.isEmpty, let peer = server.streamPeer(id) else { return }
            let target = Target(url: peer.url, destination: server.destination(peer), connection: id)
            target.meterPaths = paths
            addMeterTarget(target, rate: 20)
        }
    }
}
