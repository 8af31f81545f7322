#if canImport(Glibc)
import Glibc
#endif

/// Who may hold a TCP connection, and for how long (docs/OSC.md, "Limits").
///
/// The allow list decides at accept: a refused peer is closed at once, after at most one short
/// answer, and never holds a slot. An admitted peer takes one of `maximumConnections` slots (fewer
/// when the descriptor limit leaves less beyond the reserve, `DescriptorBudget`), at most
/// `maximumConnectionsPerAddress` of them from its address; over either it is turned away the same
/// way. Beyond these, `adminReserve` slots are kept for peers `isAdmin` accepts (osc.admin), so
/// that allowed peers holding every other slot never lock an admin out. A host is counted by its
/// address (`SocketAddress.countedHost`). A connection must deliver a complete packet within `packetTimeout` of its accept, and
/// finish each packet it begins within `packetTimeout`, or it is closed; one that has sent a
/// packet and holds no partial one is kept however long it is quiet (a surface that only listens
/// to notifications), and TCP keep-alive finds one whose host has gone. Each closing is logged
/// at a bounded rate (`RefusalBudget`): refused peers' on one budget, allowed peers' on another,
/// so that a refused flood never silences what an allowed peer is told.
///
/// When accept finds no descriptor (EMFILE, ENFILE) or no kernel memory, the connection stays in
/// the backlog and the listening socket stays readable: the loop stops polling it for
/// `acceptPause` instead of trying again at once, so it never spins.
extension OSCServer {
    /// Why a TCP peer was closed at accept.
    public enum Rejection: Equatable, Sendable {
        /// Its address is outside the allow list.
        case notAllowed
        /// `limit` connections from its address are open.
        case tooManyFromAddress(limit: Int)
        /// `limit` connections are open (`maximumConnections`, or fewer under the descriptor limit).
        case tooMany(limit: Int)
        /// Fewer descriptors than the reserve are left.
        case outOfDescriptors
    }

    /// The TCP listener's limits and what they did since start (server thread only).
    public struct TCPStatus: Sendable, Equatable {
        /// Peers' connections open now, and the most admitted in all and from one address;
        /// and the slots beyond `limit` kept for admins.
        public var connections: Int
        public var limit: Int
        public var limitPerAddress: Int
        public var adminReserve: Int
        /// Closed at accept: outside the allow list; over a limit (or the descriptor reserve).
        public var refused: Int
        public var turnedAway: Int
        /// Closed because no complete packet came within `packetTimeout`.
        public var closedAtDeadline: Int
        /// Times accept found no descriptor (or no memory) and the listener paused.
        public var acceptPauses: Int
    }

    /// How long the listener is left alone after accept found no descriptor, ms.
    static let acceptPause: Int64 = 100
    /// Connections accepted per turn of the loop (more wait for the next turn).
    static let acceptsPerTurn = 64

    public var tcpStatus: TCPStatus {
        let soft = DescriptorBudget.limits().soft
        return TCPStatus(connections: inboundCount,
                         limit: DescriptorBudget.peerLimit(configured: configuration.maximumConnections, soft: soft),
                         limitPerAddress: configuration.maximumConnectionsPerAddress,
                         adminReserve: max(0, configuration.adminReserve),
                         refused: admissionCounts.refused, turnedAway: admissionCounts.turnedAway,
                         closedAtDeadline: admissionCounts.closedAtDeadline, acceptPauses: admissionCounts.acceptPauses)
    }

    /// Whether the listener is polled in this turn (not while accept waits for descriptors).
    func isListening(now: Int64) -> Bool { now >= listenerPausedUntil }

    func acceptConnections() {
        let soft = DescriptorBudget.limits().soft
        let limit = DescriptorBudget.peerLimit(configured: configuration.maximumConnections, soft: soft)
        for _ in 0..<Self.acceptsPerTurn {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(listener, $0, &length)
                }
            }
            if fd < 0 {
                let failure = errno
                switch failure {
                case EAGAIN, EWOULDBLOCK: return
                case EINTR, ECONNABORTED, EPROTO: continue
                default:
                    pauseAccepting(failure, soft: soft)
                    return
                }
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            guard let address = withUnsafePointer(to: &storage, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0) } }) else {
                Glibc.close(fd)
                continue
            }
            if let rejection = rejection(of: address, fd: fd, soft: soft, limit: limit) {
                turnAway(fd, address, rejection)
                continue
            }
            setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            // A surface whose host vanished (Wi-Fi gone) without closing is found in about 90 s.
            setOption(fd, SOL_SOCKET, SO_KEEPALIVE, 1)
            setOption(fd, Int32(IPPROTO_TCP), TCP_KEEPIDLE, 60)
            setOption(fd, Int32(IPPROTO_TCP), TCP_KEEPINTVL, 10)
            setOption(fd, Int32(IPPROTO_TCP), TCP_KEEPCNT, 3)
            let id = newConnectionID()
            let connection = Connection(fd: fd, id: id, address: address, inbound: true)
            connection.deadline = OSCServer.nowMilliseconds() + packetTimeoutMilliseconds
            connections[id] = connection
            inboundByHost[address.countedHost, default: 0] += 1
            inboundCount += 1
        }
    }

    /// Why a peer at `address` may not connect now (nil: it may).
    private func rejection(of address: SocketAddress, fd: Int32, soft: Int, limit: Int) -> Rejection? {
        if !admits(address) { return .notAllowed }
        if DescriptorBudget.isInReserve(fd, soft: soft) { return .outOfDescriptors }
        if inboundCount >= limit + (isAdmin(address) ? max(0, configuration.adminReserve) : 0) { return .tooMany(limit: limit) }
        let perAddress = configuration.maximumConnectionsPerAddress
        if inboundByHost[address.countedHost, default: 0] >= perAddress { return .tooManyFromAddress(limit: perAddress) }
        return nil
    }

    /// Closes a connection just accepted, with the answer `answerAtAccept` gives, and a log line,
    /// while the rate allows.
    private func turnAway(_ fd: Int32, _ address: SocketAddress, _ rejection: Rejection) {
        if rejection == .notAllowed { admissionCounts.refused += 1 } else { admissionCounts.turnedAway += 1 }
        let told = noteClosing(address, allowed: rejection != .notAllowed)
        if told {
            let why = switch rejection {
            case .notAllowed: "outside osc.allow"
            case let .tooManyFromAddress(limit): "\(limit) connections from \(address.host) are open (osc.tcpConnectionsPerAddress)"
            case let .tooMany(limit): "\(limit) connections are open (osc.tcpConnections, or fewer under the descriptor limit)"
            case .outOfDescriptors: "fewer than \(DescriptorBudget.reserve(soft: DescriptorBudget.limits().soft)) descriptors are left"
            }
            onProblem("\(rejection == .notAllowed ? "refused" : "turned away") an OSC TCP connection from \(address): \(why)")
        }
        // What the peer already sent is read first: closing a socket with unread bytes resets
        // the connection, and a reset can take the answer with it.
        let waiting = receiveBuffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if told, let answer = answerAtAccept(address, rejection) {
            let framing: Connection.Framing = waiting > 0 && receiveBuffer[0] == Connection.slipEnd ? .slip : .lengthPrefixed
            let framed = Connection.frame(answer, framing)
            _ = framed.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        }
        Glibc.close(fd)
    }

    /// Counts a connection closed by the limits; true when its log line (and answer) is within the
    /// rate. Logs the summary of an interval that has ended.
    private func noteClosing(_ address: SocketAddress, allowed: Bool) -> Bool {
        let now = OSCServer.clockSeconds()
        let (told, ended) = allowed ? allowedClosings.note(address.host, now: now) : closings.note(address.host, now: now)
        if let ended { logClosings(ended, allowed: allowed) }
        return told
    }

    func logClosings(_ summary: RefusalBudget.Summary, allowed: Bool) {
        let which = allowed ? "from allowed peers (over a limit, or at the packet deadline)" : "from peers outside osc.allow"
        onProblem("closed more OSC TCP connections \(which) without a line each: \(summary)")
    }

    private func pauseAccepting(_ failure: Int32, soft: Int) {
        admissionCounts.acceptPauses += 1
        let now = OSCServer.nowMilliseconds()
        listenerPausedUntil = now + Self.acceptPause
        pausesUnreported += 1
        // One line at the first pause and then at most one every 10 s, with the count.
        guard now - lastPauseReport >= 10_000 else { return }
        let open = DescriptorBudget.openCount().map { "\($0) open" } ?? "none left to count them"
        onProblem("cannot accept OSC TCP connections: \(String(cString: strerror(failure))) (descriptors: limit \(soft), \(open)); "
                  + "not accepting for \(Self.acceptPause) ms at a time (\(pausesUnreported) times since the last report)")
        lastPauseReport = now
        pausesUnreported = 0
    }

    /// Closes every connection whose packet deadline has passed.
    func closeOverdue(now: Int64) {
        for (id, c) in connections {
            guard let deadline = c.deadline, deadline <= now else { continue }
            admissionCounts.closedAtDeadline += 1
            if noteClosing(c.address, allowed: true) {
                let what = c.spoke ? "a packet it began was not finished" : "no complete packet came"
                onProblem("closed OSC TCP \(c.address): \(what) within \(configuration.packetTimeout) s (osc.tcpPacketTimeout)")
            }
            drop(id, reason: nil)
        }
        if let due = closings.due, Double(now) / 1000 >= due, let ended = closings.summary(now: OSCServer.clockSeconds()) {
            logClosings(ended, allowed: false)
        }
        if let due = allowedClosings.due, Double(now) / 1000 >= due, let ended = allowedClosings.summary(now: OSCServer.clockSeconds()) {
            logClosings(ended, allowed: true)
        }
    }

    /// The next time, ms, the loop must wake for the limits: a packet deadline, the end of an
    /// accept pause, a summary due; nil when none.
    func nextLimitEvent(now: Int64) -> Int64? {
        var next = Int64.max
        for c in connections.values { if let deadline = c.deadline { next = min(next, deadline) } }
        if listenerPausedUntil > now { next = min(next, listenerPausedUntil) }
        for due in [closings.due, allowedClosings.due].compactMap({ $0 }) { next = min(next, Int64((due * 1000).rounded(.up))) }
        return next == Int64.max ? nil : next
    }

    var packetTimeoutMilliseconds: Int64 { Int64((configuration.packetTimeout * 1000).rounded()) }
}
