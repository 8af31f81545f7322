import Logging
import OSCTransport
import Policy

/// Peers the listeners turn down (docs/OSC.md, "Limits"), and the figures `/state` shows of them.
///
/// A packet from outside `osc.allow` (UDP: its source address may be forged) is counted; the
/// first few from each address in an interval (`RefusalBudget`) get one short `/error` (-5, for
/// the packet's first message) and a log line each; the rest get nothing, and one summary line
/// per interval counts them. TCP peers are judged at accept, by the OSC server
/// (OSCServer+Admission.swift), and told why in the same words.
extension ControlServer {
    /// What a refused sender's message gets: short, so an answer to a forged address carries
    /// little more than the packet that asked for it.
    static let outsideAllowList = "outside osc.allow"

    /// A packet from a peer outside `osc.allow`.
    func refuse(_ bytes: [UInt8], from peer: OSCServer.Peer) {
        refusedPackets += 1
        let (answer, ended) = refusals.note(peer.address.host, now: OSCServer.clockSeconds())
        if let ended { logRefusals(ended) }
        guard answer else { return }
        let first = (try? OSCCodec.decode(bytes)).flatMap { OSCClient.messages(in: $0).first }
        logger.notice("refused OSC from a sender outside osc.allow", metadata: ["peer": "\(peer)", "path": "\(first?.path ?? "(not OSC)")"])
        if let first {
            sendError(to: peer, path: first.path, PolicyError(.notPermitted, "\(peer.address.host) is \(Self.outsideAllowList)"))
        }
    }

    /// Logs the summary of an interval of refusals once it has ended (the server's tick asks).
    func flushRefusals(now: Double) {
        guard let due = refusals.due, now >= due, let ended = refusals.summary(now: now) else { return }
        logRefusals(ended)
    }

    private func logRefusals(_ summary: RefusalBudget.Summary) {
        logger.notice("refused more OSC packets from senders outside osc.allow, unanswered and without a line each: \(summary)")
    }

    /// The `/error` a TCP peer closed at accept is told (path `/`: the connection itself).
    static func answer(closing address: SocketAddress, _ rejection: OSCServer.Rejection) -> [UInt8]? {
        let error = switch rejection {
        case .notAllowed:
            PolicyError(.notPermitted, "\(address.host) is \(outsideAllowList)")
        case let .tooManyFromAddress(limit):
            PolicyError(.general, "too many connections from \(address.host) (at most \(limit)); try again")
        case let .tooMany(limit):
            PolicyError(.general, "too many connections (at most \(limit)); try again")
        case .outOfDescriptors:
            PolicyError(.general, DescriptorBudget.shortMessage)
        }
        return OSCCodec.encode(OSCMessage("/error", [.string("/"), .int32(error.code.rawValue), .string(error.message)]))
    }

    /// `/state`'s `osc` object: the TCP listener's limits and use, and every refusal counted.
    func limitsState() -> StateDocument.OSCLimits {
        let tcp = server.tcpStatus
        return StateDocument.OSCLimits(port: Int(port), tcpConnections: tcp.connections, tcpLimit: tcp.limit, tcpLimitPerAddress: tcp.limitPerAddress,
                                       tcpAdminReserve: tcp.adminReserve,
                                       refusedConnections: tcp.refused, turnedAway: tcp.turnedAway,
                                       closedAtDeadline: tcp.closedAtDeadline, acceptPauses: tcp.acceptPauses,
                                       refusedPackets: refusedPackets)
    }
}
