import OSCTransport

/// `/state`'s `osc` and `descriptors` objects (docs/OSC.md, "/state" and "Limits").
extension StateDocument {
    /// The OSC listeners' limits, and what they turned down since start.
    struct OSCLimits: Encodable {
        /// The port it listens on, UDP and TCP.
        var port: Int
        /// TCP peers connected now; the most admitted in all (fewer than `osc.tcpConnections`
        /// when the descriptor limit leaves less beyond its reserve) and from one address; the
        /// slots beyond `tcpLimit` kept for `osc.admin` addresses.
        var tcpConnections: Int
        var tcpLimit: Int
        var tcpLimitPerAddress: Int
        var tcpAdminReserve: Int
        /// TCP connections closed at accept: from outside `osc.allow`; over a limit.
        var refusedConnections: Int
        var turnedAway: Int
        /// TCP connections closed because no complete packet came within `osc.tcpPacketTimeout`.
        var closedAtDeadline: Int
        /// Times accept found no descriptor free and the listener paused.
        var acceptPauses: Int
        /// Packets (UDP, and any other way in) from senders outside `osc.allow`.
        var refusedPackets: Int
    }

    /// The process's file descriptors: open now (absent when /proc cannot say), and the limit.
    struct Descriptors: Encodable {
        var open: Int?
        var limit: Int

        static func now() -> Descriptors {
            Descriptors(open: DescriptorBudget.openCount(), limit: DescriptorBudget.limits().soft)
        }
    }
}
