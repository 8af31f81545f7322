import OSCTransport

/// The command layer as a front end other than OSC uses it (HTTPControl: OSCQuery, its WebSocket
/// and the page): readings of the control plane, and OSC streams run exactly as OSC over TCP.
/// The OSC server (`OSCControl.ControlServer`) is the one there is; a front end holds it through
/// this, and so depends on the vocabulary, not on the OSC server.
public protocol ControlService: AnyObject, Sendable {
    /// Runs `body` on the OSC server's thread with a fresh reading and returns what it returns,
    /// or nil when the OSC server has stopped (or stops before `body` runs): a caller is never
    /// left waiting at shutdown, and waits without holding a thread.
    func read<T: Sendable>(_ body: @escaping @Sendable (ControlReading) -> T) async -> T?

    /// What OSCQuery's HOST_INFO names: the JACK client name and the OSC port (nil: stopped).
    func hostInfo() async -> (client: String, oscPort: UInt16)?

    /// Opens a stream for a peer at `address` (`OSCServer.openStream`). `key`: the page's key
    /// as the peer presented it (nil: none); while it is the page's key, the peer has a person's
    /// rights, as an `osc.admin` address.
    func openStream(from address: SocketAddress, key: String?, outlet: @escaping OSCServer.Outlet,
                    turnEnd: (@Sendable () -> Void)?) -> OSCServer.StreamHandle

    /// One OSC packet from the stream's peer, handled as if it came over TCP.
    func receive(_ packet: [UInt8], on stream: OSCServer.StreamHandle)

    /// The stream has ended (its apps become unowned, its subscriptions end).
    func closeStream(_ stream: OSCServer.StreamHandle)

    /// Calls `observer` (on the OSC server's thread; it must not block) after anything that may
    /// have changed what a read sees.
    func observeChanges(_ observer: @escaping @Sendable () -> Void)

    /// Sends the stream the OSCQuery meter paths in `paths` at 20 Hz; an empty set stops them.
    func listenMeters(on stream: OSCServer.StreamHandle, paths: Set<String>)

    /// Has `/state` show the HTTP server's connections, read from `provider` (any thread).
    func showInState(http provider: @escaping @Sendable () -> HTTPConnectionState)
}

extension ControlService {
    /// A stream with no end-of-turn callback.
    public func openStream(from address: SocketAddress, key: String?, outlet: @escaping OSCServer.Outlet) -> OSCServer.StreamHandle {
        openStream(from: address, key: key, outlet: outlet, turnEnd: nil)
    }
}
