#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// Why the OSC server could not start.
public struct OSCServerError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// OSC over UDP and TCP on one port, bound to one address, run by one thread.
///
/// liblo 0.31's own servers always bind to every interface and send on blocking sockets, so the
/// sockets are ours (bound where `bind` says, never blocking) and liblo decodes and encodes every
/// packet (`OSCCodec`). Everything (receiving, handlers, replies, notifications, timers) runs on
/// the server's thread; other threads hand it work with `execute` (a pipe wakes the thread).
///
/// TCP streams are framed as OSC 1.0 (a 32-bit big-endian length before each packet, liblo's
/// default) or OSC 1.1 (SLIP, python-osc's default); the first byte of a connection tells which,
/// and replies use the same framing.
public final class OSCServer: @unchecked Sendable {
    // @unchecked: all mutable state is touched only on the server thread, except `tasks` (under
    // `tasksLock`) and the wake-up pipe (written from any thread).

    public struct Configuration: Sendable {
        /// The address to listen on ("127.0.0.1", "0.0.0.0", "::", "::1").
        public var bind = "127.0.0.1"
        /// UDP and TCP port; 0 picks a free one (the same number for both).
        public var port: UInt16 = 9951
        /// TCP peers admitted at once, in all (fewer when the descriptor limit leaves less beyond
        /// its reserve: `DescriptorBudget`) and from one address (`SocketAddress.countedHost`)
        /// (OSCServer+Admission.swift).
        public var maximumConnections = 64
        public var maximumConnectionsPerAddress = 32
        /// Slots beyond `maximumConnections` that only peers `isAdmin` accepts may take, so that
        /// allowed peers holding every other slot never lock an admin out.
        public var adminReserve = 8
        /// Seconds a TCP peer has to send its first complete packet, and to finish each packet it
        /// begins; past it the connection is closed.
        public var packetTimeout = 10.0
        /// The largest packet a TCP peer may send; a larger one closes its connection.
        public var maximumStreamPacket = 1 << 20
        /// Bytes a TCP peer may leave unread before sends to it fail (it is too slow).
        public var maximumPendingOutput = 1 << 20
        public init() {}
    }

    /// Where a packet came from; replies go back the same way.
    public struct Peer: Hashable, Sendable, CustomStringConvertible {
        public enum Transport: String, Sendable { case udp, tcp }
        public var transport: Transport
        public var address: SocketAddress
        /// The TCP connection it arrived on (0 for UDP).
        public var connection: Int

        public var description: String {
            transport == .udp ? "udp \(address)" : "tcp \(address) (connection \(connection))"
        }

        /// The URL notifications to this peer are sent to (UDP: its address; TCP: this connection).
        public var url: String {
            let host = address.isIPv6 ? "[\(address.host)]" : address.host
            return "osc.\(transport.rawValue)://\(host):\(address.port)/"
        }
    }

    /// A place notifications go: a UDP address (a connected socket, so an unreachable port is
    /// reported), an outgoing TCP connection, or a peer's incoming TCP connection.
    public final class Destination: @unchecked Sendable, CustomStringConvertible {
        // Used on the server thread only.
        enum Kind { case udp(Int32), connection(Int) }
        let kind: Kind
        public let url: String
        init(kind: Kind, url: String) { self.kind = kind; self.url = url }
        public var description: String { url }
    }

    public typealias Handler = (_ packet: [UInt8], _ from: Peer) -> Void

    public let configuration: Configuration
    /// The port bound (for UDP and TCP).
    public let port: UInt16
    let udp: Int32
    let listener: Int32
    private let wake: Int32
    private let wakeWriter: Int32
    /// Not Synchronization's `Mutex`: TSan cannot see it on Linux (see JackHost's `Locked`).
    private let tasksLock = NSLock()
    /// Work handed in by other threads, with what to do instead if the server stops first.
    private var tasks: [(work: @Sendable () -> Void, ifStopped: @Sendable () -> Void)] = []
    /// False once `stop()` began: `execute` then refuses work instead of queueing it.
    private var acceptsTasks = true
    var connections: [Int: Connection] = [:]
    /// Peers' connections open (not those the server opened), in all and per address
    /// (OSCServer+Admission.swift).
    var inboundCount = 0
    var inboundByHost: [[UInt8]: Int] = [:]
    var admissionCounts = (refused: 0, turnedAway: 0, closedAtDeadline: 0, acceptPauses: 0)
    /// Connections closed by the limits, logged at a bounded rate: refused peers', and allowed
    /// peers' (turned away, or closed at the packet deadline) apart, so that a flood of refused
    /// connections never silences what an allowed peer is told.
    var closings = RefusalBudget()
    var allowedClosings = RefusalBudget()
    /// While accept found no descriptor: the listener is not polled until then (ms).
    var listenerPausedUntil: Int64 = 0
    var lastPauseReport: Int64 = -1_000_000
    var pausesUnreported = 0
    /// Stream connections carried by another front end (WebSockets), by connection id
    /// (OSCServer+Streams.swift).
    var streams: [Int: Stream] = [:]
    /// Packets in streams' inboxes, all streams together (the loop looks at the streams only
    /// when some wait).
    var streamPacketsWaiting = 0
    /// Some stream's outlet was given packets in this turn of the loop.
    var streamsSentThisTurn = false
    /// Connection ids, sockets' and streams' alike, handed out from any thread.
    private let nextConnection = Atomic<Int>(1)
    private var thread: Thread?
    private let running = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    var handler: Handler = { _, _ in }
    var onClose: (Peer) -> Void = { _ in }
    private var onTick: () -> Void = {}
    private var nextTickWanted: () -> Double? = { 0 }
    private var onBurstEnd: () -> Void = {}
    private var tickMilliseconds: Int32 = 10
    var receiveBuffer = [UInt8](repeating: 0, count: 65_536)
    /// Problems worth a log line, handed to whoever watches (the control layer logs them).
    public var onProblem: (String) -> Void = { _ in }
    /// Whether a TCP peer at this address may connect, asked at accept (set before `start`).
    public var admits: (SocketAddress) -> Bool = { _ in true }
    /// Whether a TCP peer at this address may take a slot of `adminReserve`, asked at accept of
    /// an admitted peer when the other slots are taken (set before `start`).
    public var isAdmin: (SocketAddress) -> Bool = { _ in false }
    /// What a TCP peer closed at accept is told before it is closed (one packet, framed by the
    /// server; nil: nothing). Set before `start`.
    public var answerAtAccept: (SocketAddress, Rejection) -> [UInt8]? = { _, _ in nil }

    public init(configuration: Configuration = Configuration()) throws(OSCServerError) {
        self.configuration = configuration
        guard let bindAddress = SocketAddress(host: configuration.bind, port: configuration.port) else {
            throw OSCServerError("cannot listen on '\(configuration.bind)': not an address of this machine")
        }
        let family = bindAddress.family
        var udpSocket: Int32 = -1
        var tcpSocket: Int32 = -1
        var bound: UInt16 = configuration.port
        // With port 0 the kernel picks the UDP port; TCP must get the same number, so retry a few.
        for attempt in 0..<20 {
            udpSocket = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard udpSocket >= 0 else { throw OSCServerError("cannot create a UDP socket: \(errorText())") }
            if family == AF_INET6 { setOption(udpSocket, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0) }
            let wanted = SocketAddress(host: bindAddress.host, port: bound)!
            guard wanted.withSockaddr(family: family, { bind(udpSocket, $0, $1) }) == 0 else {
                let text = errorText()
                Glibc.close(udpSocket)
                throw OSCServerError("cannot listen for OSC on UDP \(wanted): \(text)")
            }
            bound = OSCServer.localPort(udpSocket)
            tcpSocket = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard tcpSocket >= 0 else { Glibc.close(udpSocket); throw OSCServerError("cannot create a TCP socket: \(errorText())") }
            setOption(tcpSocket, SOL_SOCKET, SO_REUSEADDR, 1)
            if family == AF_INET6 { setOption(tcpSocket, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0) }
            let tcpAddress = SocketAddress(host: bindAddress.host, port: bound)!
            if tcpAddress.withSockaddr(family: family, { bind(tcpSocket, $0, $1) }) == 0, listen(tcpSocket, SOMAXCONN) == 0 {
                break
            }
            let text = errorText()
            Glibc.close(tcpSocket)
            Glibc.close(udpSocket)
            if configuration.port != 0 || attempt == 19 {
                throw OSCServerError("cannot listen for OSC on TCP \(tcpAddress): \(text)")
            }
            bound = 0
        }
        udp = udpSocket
        listener = tcpSocket
        port = bound
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else {
            Glibc.close(udpSocket)
            Glibc.close(tcpSocket)
            throw OSCServerError("cannot create the OSC thread's wake-up pipe: \(errorText())")
        }
        for end in pipeEnds { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK); _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        wake = pipeEnds[0]
        wakeWriter = pipeEnds[1]
        setOption(udp, SOL_SOCKET, SO_RCVBUF, udpReceiveBuffer)
    }

    deinit {
        stop()
        for connection in connections.values { Glibc.close(connection.fd) }
        Glibc.close(udp)
        Glibc.close(listener)
        Glibc.close(wake)
        Glibc.close(wakeWriter)
    }

    /// Starts the server thread. `handler` gets every packet; `onClose` every TCP peer that went
    /// away; `onTick` runs at the time `nextTickWanted` gives (seconds on `clockSeconds`' clock;
    /// asked on the server thread at every turn of its loop), on the first tick of the grid of
    /// `tickMilliseconds` at or after it and at most once a tick (timers: meters at 20 Hz wake the
    /// thread 20 times a second, not at every tick); when it gives nil, the thread sleeps in poll
    /// until a packet, a connection or a task comes; `onBurstEnd` runs after the
    /// packets that arrived together (one wake-up of the thread) have been handled, so work they
    /// share can be done once per burst.
    public func start(tickMilliseconds: Int = 10, onTick: @escaping () -> Void = {},
                      nextTickWanted: @escaping () -> Double? = { 0 },
                      onClose: @escaping (Peer) -> Void = { _ in }, onBurstEnd: @escaping () -> Void = {},
                      handler: @escaping Handler) {
        self.handler = handler
        self.onClose = onClose
        self.onTick = onTick
        self.nextTickWanted = nextTickWanted
        self.onBurstEnd = onBurstEnd
        self.tickMilliseconds = Int32(max(1, tickMilliseconds))
        running.store(true, ordering: .releasing)
        let thread = Thread { [self] in
            // Foundation's name is not the kernel's on Linux: this one shows in top -H, ps and
            // /proc/<pid>/task/*/comm (make bench's per-thread figures read it there).
            // (pthread_setname_np is a GNU extension Glibc's module does not show; this is what it does.)
            let comm = open("/proc/thread-self/comm", O_WRONLY)
            if comm >= 0 {
                _ = write(comm, "duckrouter.osc", 14)
                Glibc.close(comm)
            }
            run()
            finished.store(true, ordering: .releasing)
        }
        thread.name = "duckrouter.osc"
        thread.qualityOfService = .userInitiated
        self.thread = thread
        thread.start()
    }

    /// Stops the thread and waits for it. Safe to call twice.
    /// Work that was queued and never ran is told so (its `ifStopped` runs on the caller's thread).
    public func stop() {
        if running.exchange(false, ordering: .acquiringAndReleasing) {
            signalWake()
            while !finished.load(ordering: .acquiring) { usleep(1000) }
            // The thread has finished: its state is ours now.
            releaseStreams()
        }
        let abandoned = tasksLock.withLock {
            acceptsTasks = false
            defer { tasks.removeAll() }
            return tasks
        }
        for task in abandoned { task.ifStopped() }
    }

    /// Runs `work` on the server thread, soon. Callable from any thread. If the server has
    /// stopped, or stops before `work` runs, `work` never runs and `ifStopped` runs instead (on
    /// this thread or the one that stops it), so a caller waiting for `work` is never left waiting.
    public func execute(_ work: @escaping @Sendable () -> Void, ifStopped: @escaping @Sendable () -> Void = {}) {
        let queued = tasksLock.withLock {
            guard acceptsTasks else { return false }
            tasks.append((work, ifStopped))
            return true
        }
        if queued { signalWake() } else { ifStopped() }
    }

    private func signalWake() {
        var one: UInt8 = 1
        _ = write(wakeWriter, &one, 1)
    }

    // MARK: The loop

    private func run() {
        let interval = Int64(tickMilliseconds)
        // The grid point of the last tick: the next is at least one interval later.
        var lastTick: Int64 = 0
        var streamsWaiting = false
        while running.load(ordering: .acquiring) {
            let turnStart = OSCServer.nowMilliseconds()
            // A negative descriptor is skipped by poll: the listener while accept waits for descriptors.
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: udp, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: isListening(now: turnStart) ? listener : -1, events: Int16(POLLIN), revents: 0)]
            let ids = Array(connections.keys)
            for id in ids {
                let c = connections[id]!
                var events = Int16(POLLIN)
                if c.connecting || !c.output.isEmpty { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: c.fd, events: events, revents: 0))
            }
            // Packets of streams still waiting: look at the sockets and come straight back. No
            // tick wanted (no meter subscriber): sleep until something comes (-1), so an idle
            // router's OSC thread costs nothing; else until the tick that is wanted.
            // A packet deadline, the end of an accept pause or a summary due wakes it too.
            let nextTick = nextTickWanted().map { OSCServer.tick(for: $0, after: lastTick, every: interval) }
            let wakeAt = [nextTick, nextLimitEvent(now: turnStart)].compactMap { $0 }.min()
            let timeout = streamsWaiting ? 0
                : wakeAt.map { Int32(clamping: max(0, $0 - OSCServer.nowMilliseconds())) } ?? -1
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0 && errno != EINTR { onProblem("poll failed: \(errorText())") }
            if fds[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 256)
                while read(wake, &drain, drain.count) > 0 {}
            }
            runTasks()
            if fds[1].revents != 0 { receiveDatagrams() }
            if fds[2].revents != 0 { acceptConnections() }
            for (k, id) in ids.enumerated() {
                let revents = fds[3 + k].revents
                if revents != 0, connections[id] != nil { service(id, revents: revents) }
            }
            // Work handed in (packets of streams among it) is part of this burst; work it queues
            // wakes the next turn.
            streamsWaiting = serviceStreams()
            // The burst's changes reach the audio thread before the notifications about them
            // (queued as tasks while the burst was handled) go out.
            onBurstEnd()
            runTasks()
            let now = OSCServer.nowMilliseconds()
            closeOverdue(now: now)
            // A timer the burst started (a new subscriber) is asked for at the next turn.
            if let nextTick, now >= nextTick {
                onTick()
                lastTick = now / interval * interval
            }
            endStreamTurn()
        }
    }

    private func runTasks() {
        let work = tasksLock.withLock {
            let taken = tasks
            tasks.removeAll(keepingCapacity: true)
            return taken
        }
        for task in work { task.work() }
    }

    private func receiveDatagrams() {
        // A bounded batch per wake-up, so TCP peers and timers are never starved by a UDP flood.
        for _ in 0..<256 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = receiveBuffer.withUnsafeMutableBytes { buffer in
                withUnsafeMutablePointer(to: &storage) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(udp, buffer.baseAddress, buffer.count, Int32(MSG_TRUNC), $0, &length)
                    }
                }
            }
            if count < 0 { return }
            let address = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0) } }
            guard let address else { continue }
            if count > receiveBuffer.count {
                onProblem("dropped a \(count)-byte datagram from \(address): larger than 64 KiB")
                continue
            }
            handler(Array(receiveBuffer[0..<count]), Peer(transport: .udp, address: address, connection: 0))
        }
    }

    private func service(_ id: Int, revents: Int16) {
        guard let c = connections[id] else { return }
        if c.connecting {
            if revents & Int16(POLLOUT | POLLERR | POLLHUP) != 0 {
                var error: Int32 = 0
                var length = socklen_t(4)
                getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &length)
                if error != 0 {
                    drop(id, reason: "could not connect: \(String(cString: strerror(error)))")
                    return
                }
                c.connecting = false
            } else {
                return
            }
        }
        if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(c.fd, &chunk, chunk.count)
                if count > 0 {
                    c.input.append(contentsOf: chunk[0..<count])
                    if !c.inbound { c.input.removeAll() }   // outgoing links only carry our notifications
                    if count < chunk.count { break }
                } else if count == 0 {
                    extractPackets(c)
                    drop(id, reason: nil)
                    return
                } else {
                    if errno == EAGAIN || errno == EINTR { break }
                    drop(id, reason: "read failed: \(errorText())")
                    return
                }
            }
            extractPackets(c)
            if connections[id] == nil { return }
            c.updateDeadline(now: OSCServer.nowMilliseconds(), timeout: packetTimeoutMilliseconds)
        }
        if !c.output.isEmpty { flush(c) }
    }

    private func extractPackets(_ c: Connection) {
        let peer = Peer(transport: .tcp, address: c.address, connection: c.id)
        while true {
            if c.framing == .unknown, let first = c.input.first {
                c.framing = first == Connection.slipEnd ? .slip : .lengthPrefixed
            }
            switch c.framing {
            case .unknown:
                return
            case .lengthPrefixed:
                guard c.input.count >= 4 else { return }
                let size = Int(UInt32(c.input[0]) << 24 | UInt32(c.input[1]) << 16 | UInt32(c.input[2]) << 8 | UInt32(c.input[3]))
                guard size <= configuration.maximumStreamPacket else {
                    onProblem("closed TCP \(c.address): it announced a \(size)-byte packet (the limit is \(configuration.maximumStreamPacket))")
                    drop(c.id, reason: nil)
                    return
                }
                guard c.input.count >= 4 + size else { return }
                let packet = Array(c.input[4..<4 + size])
                c.input.removeFirst(4 + size)
                // An empty frame is no packet: it neither meets nor moves the deadline.
                if size > 0 {
                    c.tookPacket = true
                    handler(packet, peer)
                }
            case .slip:
                guard let end = c.input.dropFirst().firstIndex(of: Connection.slipEnd) else {
                    if c.input.count > configuration.maximumStreamPacket * 2 + 2 {
                        onProblem("closed TCP \(c.address): a SLIP packet longer than \(configuration.maximumStreamPacket) bytes")
                        drop(c.id, reason: nil)
                    }
                    return
                }
                let frame = c.input[1..<end]
                c.input.removeFirst(end)
                if let packet = Connection.unslip(frame), !packet.isEmpty {
                    c.tookPacket = true
                    handler(packet, peer)
                }
            }
            if connections[c.id] == nil { return }
        }
    }

    func drop(_ id: Int, reason: String?) {
        guard let c = connections.removeValue(forKey: id) else { return }
        Glibc.close(c.fd)
        if c.inbound {
            inboundCount -= 1
            let left = inboundByHost[c.address.countedHost, default: 1] - 1
            inboundByHost[c.address.countedHost] = left > 0 ? left : nil
        }
        if let reason { onProblem("TCP \(c.address): \(reason)") }
        if c.inbound { onClose(Peer(transport: .tcp, address: c.address, connection: c.id)) }
    }

    func flush(_ c: Connection) {
        while !c.output.isEmpty {
            let sent = c.output.withUnsafeBytes { Glibc.send(c.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
            if sent > 0 {
                c.output.removeFirst(sent)
            } else if sent < 0 && (errno == EAGAIN || errno == EINTR) {
                return
            } else {
                drop(c.id, reason: "send failed: \(errorText())")
                return
            }
        }
    }

    /// A connection id no socket or stream has had.
    func newConnectionID() -> Int { nextConnection.add(1, ordering: .relaxed).oldValue }

    // MARK: Helpers

    /// The tick for a timer due at `wanted` seconds of the clock (`clockSeconds`): the first point
    /// of the grid of `interval` ms at or after it, and at least an interval after the last tick
    /// (`last`, a grid point), so a timer that finds itself not yet due at its tick is asked again
    /// a tick later, not in a loop. Ticks fall on multiples of the interval of the clock, not an
    /// interval after the last one ran, so a late tick does not push every later one back. Timers
    /// on a grid of their own (meters at 20 Hz are due every 50 ms of the clock) then run at the
    /// same point of each interval, and the gaps between them stay even (they wandered by up to a
    /// tick: bundles 32 ms apart were seen under load).
    static func tick(for wanted: Double, after last: Int64, every interval: Int64) -> Int64 {
        // Up, less a µs: a time on the grid (k / 20 s) is a whole number of ms give or take the
        // last bits of a Double, and one just after a grid point is not ticked before it.
        // A time in the past is now; one beyond any clock (or not a number), never.
        guard wanted < 1e12 else { return Int64.max / 2 }
        let milliseconds = wanted > 0 ? Int64((wanted * 1000 - 1e-3).rounded(.up)) : 0
        let onGrid = (milliseconds + interval - 1) / interval * interval
        return max(onGrid, last + interval)
    }

    /// Seconds on the clock the ticks run on (CLOCK_MONOTONIC): timers that want to fall on a
    /// tick (meters due on their grid) count on it, and no change of the wall clock moves them.
    public static func clockSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func nowMilliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }

    private static func localPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0)?.port ?? 0 } }
    }

    static func localFamily(_ fd: Int32) -> Int32 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int32(storage.ss_family)
    }
}

/// The receive buffer asked for on every UDP socket, server's and client's (the kernel caps it at
/// net.core.rmem_max): a datagram that arrives while the buffer is full is dropped unseen, and the
/// default (about 200 small packets) is less than half a second of a 500 message/s stream while
/// the reader is busy with something else.
let udpReceiveBuffer: Int32 = 1 << 21

func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
    var v = value
    setsockopt(fd, level, name, &v, socklen_t(4))
}

func errorText() -> String { String(cString: strerror(errno)) }
