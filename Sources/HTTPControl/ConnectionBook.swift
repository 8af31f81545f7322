import Foundation
import Logging
import ControlVocabulary
import Synchronization

/// The HTTP server's connections across its event loops (docs/HTTP.md, "Limits"): the admitted
/// ones, in all and per address, against their caps; the counts `/state` shows; and the log of
/// connections that were not served, at a bounded rate (`RefusalLog`).
///
/// Refused and turned-away connections are answered and closed at once by `Admission`: they never
/// hold a slot, so no number of them can take the place of an allowed peer. The per-address
/// table holds only addresses with admitted connections open (at most `limits.total` plus the
/// admin reserve entries).
final class ConnectionBook: Sendable {
    struct Limits: Equatable, Sendable {
        /// Admitted connections at once, and from one address; slots beyond `total` that only
        /// osc.admin addresses may take.
        var total: Int
        var perAddress: Int
        var adminReserve: Int

        /// The caps in force: the configured ones, lowered so that admitted connections can never
        /// take the descriptors the rest of the daemon needs (`reserve` of the soft
        /// `RLIMIT_NOFILE` limit, or half of a limit under twice that, stay free for the state
        /// file, JACK, OSC and the log), and one address never takes more than half of the total.
        /// The admin reserve takes at most a quarter of the descriptors the total leaves.
        init(total: Int, perAddress: Int, descriptorLimit: Int?, reserve: Int, adminReserve: Int = 8) {
            var total = max(1, total)
            var adminReserve = max(0, adminReserve)
            if let descriptorLimit {
                total = min(total, max(1, descriptorLimit - min(reserve, descriptorLimit / 2)))
                adminReserve = min(adminReserve, max(0, descriptorLimit - total) / 4)
            }
            self.total = total
            self.adminReserve = adminReserve
            self.perAddress = max(1, min(perAddress, total > 1 ? total / 2 : 1))
        }

        /// The soft `RLIMIT_NOFILE` limit of this process (nil: unlimited (`RLIM_INFINITY`, all ones), or unknown).
        static func descriptorLimit() -> Int? {
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return nil }
            return Int(clamping: limit.rlim_cur)
        }
    }

    enum Admitted: Equatable {
        case admitted
        /// Over the total or the address's cap: the reason, for the log.
        case overTotal, overAddress
    }

    private struct State {
        var byAddress: [String: Int] = [:]
        var open = 0
        var webSockets = 0
        var refused = 0
        var turnedAway = 0
        var closedAtDeadline = 0
        var log = RefusalLog()
    }

    let limits: Limits
    private let logger: Logger
    private let state = Mutex(State())

    init(limits: Limits, logger: Logger) {
        self.limits = limits
        self.logger = logger
    }

    /// Takes a slot for an allowed peer counted as `host` (`SocketAddress.countedHostName`; at
    /// `address`, for the log), if both caps leave one; an admin may take one of the reserve
    /// beyond the total.
    func admit(_ host: String, admin: Bool, from address: String) -> Admitted {
        let (verdict, line) = state.withLock { state -> (Admitted, RefusalLog.Line?) in
            let mine = state.byAddress[host, default: 0]
            let total = limits.total + (admin ? limits.adminReserve : 0)
            let verdict: Admitted = state.open >= total ? .overTotal : mine >= limits.perAddress ? .overAddress : .admitted
            guard verdict != .admitted else {
                state.open += 1
                state.byAddress[host] = mine + 1
                return (verdict, nil)
            }
            state.turnedAway += 1
            let detail = verdict == .overTotal ? "at most \(limits.total) connections" : "at most \(limits.perAddress) connections from one address"
            return (verdict, state.log.note(.turnedAway, from: address, detail: detail))
        }
        if let line { log(line) }
        return verdict
    }

    /// An admitted connection counted as `host` closed.
    func release(_ host: String, webSocket: Bool) {
        state.withLock { state in
            state.open -= 1
            if webSocket { state.webSockets -= 1 }
            if let mine = state.byAddress[host], mine > 1 {
                state.byAddress[host] = mine - 1
            } else {
                state.byAddress[host] = nil
            }
        }
    }

    /// An admitted connection became a WebSocket.
    func upgraded() {
        state.withLock { $0.webSockets += 1 }
    }

    /// An allowed peer was turned away because the process is short of descriptors
    /// (`DescriptorBudget.isShort`).
    func shortOfDescriptors(_ address: String) {
        let line = state.withLock { state in
            state.turnedAway += 1
            return state.log.note(.turnedAway, from: address, detail: "short of descriptors")
        }
        if let line { log(line) }
    }

    /// A peer outside `osc.allow` was refused.
    func refused(_ address: String) {
        let line = state.withLock { state in
            state.refused += 1
            return state.log.note(.refused, from: address)
        }
        if let line { log(line) }
    }

    func closedAtDeadline() {
        state.withLock { $0.closedAtDeadline += 1 }
    }

    /// Ends the log's interval: a summary line per address with connections not logged one by one.
    func flushLog() {
        for line in state.withLock({ $0.log.flush() }) { log(line) }
    }

    var counts: HTTPConnectionState {
        state.withLock { state in
            HTTPConnectionState(open: state.open, webSockets: state.webSockets, refused: state.refused, turnedAway: state.turnedAway,
                                closedAtDeadline: state.closedAtDeadline, limit: limits.total, perAddressLimit: limits.perAddress,
                                adminReserve: limits.adminReserve)
        }
    }

    private func log(_ line: RefusalLog.Line) {
        var metadata: Logger.Metadata = ["peer": "\(line.address ?? "other addresses")"]
        if let detail = line.detail { metadata["limit"] = "\(detail)" }
        if line.summary {
            metadata["connections"] = "\(line.count)"
            logger.notice("\(line.kind.rawValue): more connections in the last \(Int(ConnectionBook.logInterval)) s than logged",
                          metadata: metadata)
        } else {
            logger.notice("\(line.kind.rawValue)", metadata: metadata)
        }
    }

    /// How often the refusal log sums up (seconds).
    static let logInterval: Int64 = 60
}
