/// The HTTP server's connections as `/state` shows them (its `http` object; docs/HTTP.md,
/// "Limits"): counted by the HTTP server, read when `/state` is asked.
public struct HTTPConnectionState: Encodable, Equatable, Sendable {
    /// The port it listens on.
    public var port: Int
    /// Admitted connections open now, WebSockets included.
    public var open: Int
    /// Of those, the WebSockets.
    public var webSockets: Int
    /// Since start: connections refused (outside `osc.allow`), turned away (over a limit), and
    /// closed because they did not get to their next request or response in time.
    public var refused: Int
    public var turnedAway: Int
    public var closedAtDeadline: Int
    /// The caps in force: admitted connections in all, and from one address; and the slots
    /// beyond `limit` kept for `osc.admin` addresses.
    public var limit: Int
    public var perAddressLimit: Int
    public var adminReserve: Int

    public init(port: Int = 0, open: Int, webSockets: Int, refused: Int, turnedAway: Int, closedAtDeadline: Int, limit: Int,
                perAddressLimit: Int, adminReserve: Int) {
        self.port = port
        self.open = open
        self.webSockets = webSockets
        self.refused = refused
        self.turnedAway = turnedAway
        self.closedAtDeadline = closedAtDeadline
        self.limit = limit
        self.perAddressLimit = perAddressLimit
        self.adminReserve = adminReserve
    }
}
