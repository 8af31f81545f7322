import Foundation
import JackRig
import OSCTransport
import Testing

/// What the OSC listeners let a peer hold (docs/OSC.md, "Limits"): a daemon bound to every
/// interface admitting 127.0.0.1 only, driven by clients whose source address is chosen (bound
/// before they connect or send): 127.0.0.2 is outside `osc.allow`.
@Suite("OSC limits")
struct OSCLimitsTests {
    static let openToLoopback = #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32"]"#

    @Test("80 idle TCP connections from a host outside osc.allow do not lock an allowed client out: each is closed at accept, after at most a short -5")
    func refusedConnectionsHoldNothing() throws {
        let rig = try OSCRig(osc: Self.openToLoopback)
        defer { rig.close() }
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        for _ in 0..<80 { held.append(try HTTPClient.connection(port: rig.port, Data(), source: "127.0.0.2", timeout: 2)) }

        let state = try? rig.query("/state", transport: .tcp)
        #expect(state?.path == "/reply", "an allowed client's /state over TCP: \(String(describing: state))")

        let ends = TCPPeers.readUntilClosed(held, timeout: 3)
        #expect(ends.filter(\.closed).count == held.count, "\(ends.filter(\.closed).count) of \(held.count) refused connections closed by the router")
        for end in ends where !end.bytes.isEmpty {
            #expect(end.bytes.count <= 160, "a refused peer gets a short answer, not \(end.bytes.count) bytes")
            let answer = TCPPeers.firstMessage(end.bytes)
            #expect(answer?.path == "/error" && answer?.arguments.dropFirst().first == .int32(-5), "\(String(describing: answer))")
        }
        let lines = rig.log.split(separator: "\n").filter { $0.contains("127.0.0.2") }
        #expect(lines.count <= 8, "log lines about the refused host: \(lines.count)\n\(lines.prefix(12).joined(separator: "\n"))")
        #expect(rig.daemon.isRunning)
    }

    @Test("2,000 datagrams from a host outside osc.allow get a few -5 answers and log lines, counted in /state; an allowed sender is answered")
    func refusedDatagramsAreAnsweredAtABoundedRate() throws {
        let rig = try OSCRig(osc: Self.openToLoopback)
        defer { rig.close() }
        let outsider = try UDPPeer(source: "127.0.0.2")
        defer { outsider.close() }
        let packet = OSCCodec.encode(OSCMessage("/app/music/volume", [.float(1)]))
        for _ in 0..<2000 { outsider.send(packet, to: rig.port) }
        let answers = outsider.receiveAll(quietFor: 1, timeout: 5)
        let errors = answers.compactMap(TCPPeers.decodeMessage).filter { $0.path == "/error" }
        #expect(errors.count >= 1 && errors.count <= 8, "\(errors.count) /error answers (and \(answers.count) datagrams) for 2000 refused messages")
        #expect(errors.allSatisfy { $0.arguments.dropFirst().first == .int32(-5) }, "\(errors.prefix(3))")

        let allowed = try? rig.query("/app/music/volume")
        #expect(allowed?.arguments == [.string("/app/music/volume"), .float(1)], "an allowed sender: \(String(describing: allowed))")
        let lines = rig.log.split(separator: "\n").filter { $0.contains("127.0.0.2") }
        #expect(lines.count <= 8, "log lines about the refused host: \(lines.count)\n\(lines.prefix(12).joined(separator: "\n"))")
        let osc = try Self.oscState(rig)
        #expect((osc?["refusedPackets"] as? Int ?? 0) >= 1000, "/state osc: \(String(describing: osc))")
        #expect(rig.daemon.isRunning)
    }

    @Test("one allowed address over its share of TCP connections leaves room for another allowed address")
    func perAddressShare() throws {
        let rig = try OSCRig(osc: #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32", "127.0.0.3/32"]"#)
        defer { rig.close() }
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        // Surfaces that have sent a complete packet each (held as established, quiet connections).
        let ping = OSCCodec.lengthPrefixed(OSCCodec.encode(OSCMessage("/route/select")))
        for _ in 0..<64 { held.append(try HTTPClient.connection(port: rig.port, Data(ping), source: "127.0.0.1", timeout: 2)) }

        let other = try HTTPClient.connection(port: rig.port, Data(OSCCodec.lengthPrefixed(OSCCodec.encode(OSCMessage("/state")))),
                                              source: "127.0.0.3", timeout: 3)
        defer { close(other) }
        let answer = TCPPeers.readMessages(other, until: { $0.path == "/reply" || $0.path == "/error" }, timeout: 3)
        #expect(answer?.path == "/reply" && answer?.arguments.first == .string("/state"), "127.0.0.3's /state: \(String(describing: answer))")

        // 127.0.0.1 kept its share; the connections over it were closed at once, with -1 saying why.
        let ends = TCPPeers.readUntilClosed(held, timeout: 1)
        let turnedAway = ends.filter(\.closed)
        #expect(turnedAway.count == 32, "\(turnedAway.count) of 64 connections from 127.0.0.1 turned away (its share is 32)")
        let reason = turnedAway.lazy.compactMap { end in TCPPeers.messages(end.bytes).first { $0.path == "/error" } }.first
        #expect(reason?.arguments.dropFirst().first == .int32(-1) && "\(reason!)".contains("127.0.0.1"), "\(String(describing: reason))")
        // Its own share back (this test's /state comes from 127.0.0.1 too) once the router has seen them go.
        for fd in held { close(fd) }
        held.removeAll()
        var osc: [String: Any]?
        try waitFor("127.0.0.1's connections to be seen closed") {
            osc = try? Self.oscState(rig)
            return osc != nil
        }
        #expect((osc?["turnedAway"] as? Int ?? 0) >= 32, "/state osc: \(String(describing: osc))")
    }

    @Test("two allowed addresses holding every TCP slot do not lock out an osc.admin address: its /state is answered")
    func adminGetsIn() throws {
        let rig = try OSCRig(osc: #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32", "127.0.0.3/32", "127.0.0.4/32"], "admin": ["127.0.0.4/32"]"#)
        defer { rig.close() }
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        // 32 quiet surfaces (each has sent a complete packet, so no deadline) from each of two addresses.
        let ping = OSCCodec.lengthPrefixed(OSCCodec.encode(OSCMessage("/route/select")))
        for source in ["127.0.0.1", "127.0.0.3"] {
            for _ in 0..<32 { held.append(try HTTPClient.connection(port: rig.port, Data(ping), source: source, timeout: 2)) }
        }
        try waitFor("the 64 connections to be admitted") { (try? Self.oscState(rig, transport: .udp))?["tcpConnections"] as? Int == 64 }
        let limits = try #require(try Self.oscState(rig, transport: .udp))
        #expect(limits["tcpLimit"] as? Int == 64 && limits["tcpLimitPerAddress"] as? Int == 32 && limits["tcpAdminReserve"] as? Int == 8, "\(limits)")
        let turnedAway = try HTTPClient.connection(port: rig.port, Data(), source: "127.0.0.1", timeout: 2)
        defer { close(turnedAway) }
        #expect(TCPPeers.readUntilClosed([turnedAway], timeout: 2).first?.closed == true, "every slot is taken")

        let admin = try HTTPClient.connection(port: rig.port, Data(OSCCodec.lengthPrefixed(OSCCodec.encode(OSCMessage("/state")))),
                                              source: "127.0.0.4", timeout: 3)
        defer { close(admin) }
        let answer = TCPPeers.readMessages(admin, until: { $0.path == "/reply" || $0.path == "/error" }, timeout: 3)
        #expect(answer?.path == "/reply" && answer?.arguments.first == .string("/state"), "the osc.admin address's /state: \(String(describing: answer))")
    }

    @Test("a TCP connection that never sends a complete packet is closed at the deadline (osc.tcpPacketTimeout); a quiet surface that has spoken is kept")
    func packetDeadline() throws {
        let rig = try OSCRig(osc: #", "tcpPacketTimeout": 1"#)
        defer { rig.close() }
        // Before the connects: neither deadline can pass earlier than a second from here.
        let started = Date()
        let silent = try HTTPClient.connection(port: rig.port, Data(), source: "127.0.0.1", timeout: 4)
        defer { close(silent) }
        // Half a packet: the length says 64 bytes, 8 come.
        let stalled = try HTTPClient.connection(port: rig.port, Data([0, 0, 0, 64] + [UInt8](repeating: 0x2f, count: 8)),
                                                source: "127.0.0.1", timeout: 4)
        defer { close(stalled) }
        let surface = try OSCClient(OSCURL(transport: .tcp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(surface, OSCMessage("/subscribe"))?.path == "/reply")

        let ends = TCPPeers.readUntilClosed([silent, stalled], timeout: 4)
        let waited = Date().timeIntervalSince(started)
        let closed = ends.map(\.closed)
        #expect(closed == [true, true], "closed at the deadline: \(ends.map(\.closed))")
        #expect(waited >= 0.99 && waited < 3.5, "closed \(waited) s after they connected (the deadline is 1 s)")

        // The subscriber, quiet for longer than the deadline, still hears notifications.
        Thread.sleep(forTimeInterval: 0.6)
        _ = try rig.query("/system/silent", [.int32(1)])
        let notice = try surface.receive(timeout: 2) { $0.path == "/duckrouter/silent" }
        #expect(notice?.arguments == [.int32(1)], "a quiet subscriber is kept: \(String(describing: notice))")
        let osc = try Self.oscState(rig)
        #expect((osc?["closedAtDeadline"] as? Int ?? 0) >= 2, "/state osc: \(String(describing: osc))")
    }

    @Test("out of descriptors, the OSC thread stops accepting for a while instead of spinning, and accepts again once they are back")
    func backsOffAtTheDescriptorLimit() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let pid = rig.daemon.processIdentifier
        let limit = try #require(ProcessLimits.openFiles(pid))
        let thread = try #require(ProcessLimits.thread(named: "duckrouter.osc", of: pid))
        // No new descriptor for the daemon: every number under 3 is taken.
        try ProcessLimits.setOpenFiles(pid, soft: 3)
        var restored = false
        defer { if !restored { try? ProcessLimits.setOpenFiles(pid, soft: limit.soft) } }

        let waiting = try HTTPClient.connection(port: rig.port, Data(OSCCodec.lengthPrefixed(OSCCodec.encode(OSCMessage("/state")))),
                                                source: "127.0.0.1", timeout: 4)
        defer { close(waiting) }
        Thread.sleep(forTimeInterval: 0.2)
        let before = try #require(ProcessLimits.cpuNanoseconds(pid, thread), "the OSC thread's CPU time (schedstat)")
        Thread.sleep(forTimeInterval: 1)
        let after = try #require(ProcessLimits.cpuNanoseconds(pid, thread), "the OSC thread's CPU time (schedstat)")
        let spent = Double(after - before) / 1e9
        #expect(spent < 0.1, "the OSC thread ran \(spent) s of the second it could not accept in")

        try ProcessLimits.setOpenFiles(pid, soft: limit.soft)
        restored = true
        let answer = TCPPeers.readMessages(waiting, until: { $0.path == "/reply" || $0.path == "/error" }, timeout: 3)
        #expect(answer?.path == "/reply" && answer?.arguments.first == .string("/state"), "the waiting connection, once descriptors are back: \(String(describing: answer))")
        #expect(rig.log.contains("cannot accept OSC TCP connections: Too many open files"), "the log says why it stopped accepting")
        #expect(rig.daemon.isRunning)
    }

    @Test("with its descriptor limit lowered to 4 above what it holds, /subscribe to new addresses, /subscribe and /meters to the asker over UDP, and a UDP registration are refused (short of descriptors) instead of opening sockets the daemon cannot spare; once the limit is back, they are taken")
    func subscriptionsKeepTheReserve() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let pid = rig.daemon.processIdentifier
        let limit = try #require(ProcessLimits.openFiles(pid))
        let held = openDescriptors(pid) ?? -1
        try ProcessLimits.setOpenFiles(pid, soft: held + 4)
        var restored = false
        defer { if !restored { try? ProcessLimits.setOpenFiles(pid, soft: limit.soft) } }

        func isShortOfDescriptors(_ answer: OSCMessage?) -> Bool {
            answer?.path == "/error" && answer?.arguments.last == .string(DescriptorBudget.shortMessage)
        }
        for port in 40001...40006 {
            let answer = try rig.query("/subscribe", [.string("osc.udp://127.0.0.1:\(port)/")])
            #expect(isShortOfDescriptors(answer), "/subscribe to port \(port): \(String(describing: answer))")
        }
        // With no address, over UDP: the asker's own socket would be opened; and a registration,
        // which opens one for its notifications (an app whose sends fail would lose its owner).
        for (path, arguments) in [("/subscribe", []), ("/meters", [OSCArgument.float(10)]),
                                  ("/app/register", [.string("synth"), .string("ambient")])] {
            let answer = try rig.query(path, arguments)
            #expect(isShortOfDescriptors(answer), "\(path): \(String(describing: answer))")
        }
        #expect((openDescriptors(pid) ?? -1) <= held + 1, "no socket opened for them: \(openDescriptors(pid) ?? -1) held, \(held) before")
        #expect(rig.daemon.isRunning)

        try ProcessLimits.setOpenFiles(pid, soft: limit.soft)
        restored = true
        #expect(try rig.query("/subscribe", [.string("osc.udp://127.0.0.1:40001/")])?.path == "/reply")
        #expect(try rig.query("/app/register", [.string("synth"), .string("ambient")])?.path == "/reply")
    }

    /// `/state`'s `osc` object.
    static func oscState(_ rig: OSCRig, transport: OSCURL.Transport = .tcp) throws -> [String: Any]? {
        guard case let .string(json)? = try rig.query("/state", transport: transport)?.arguments.last,
              let document = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return nil }
        return document["osc"] as? [String: Any]
    }
}

/// Raw TCP peers of the OSC port (OSC 1.0 framing: a 32-bit big-endian length before each packet).
enum TCPPeers {
    struct End {
        var bytes: [UInt8] = []
        /// The router closed it (end of stream or reset) within the time given.
        var closed = false
    }

    /// Reads every socket until the router closes it or `timeout` passes: what each received.
    static func readUntilClosed(_ fds: [Int32], timeout: Double) -> [End] {
        var ends = [End](repeating: End(), count: fds.count)
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline, ends.contains(where: { !$0.closed }) {
            let polled = fds.enumerated().filter { !ends[$0.offset].closed }.map { (index: $0.offset, fd: pollfd(fd: $0.element, events: Int16(POLLIN), revents: 0)) }
            var set = polled.map(\.fd)
            let left = max(1, Int32(deadline.timeIntervalSinceNow * 1000))
            guard poll(&set, nfds_t(set.count), left) > 0 else { continue }
            for k in set.indices where set[k].revents != 0 {
                let index = polled[k].index
                let n = recv(fds[index], &chunk, chunk.count, Int32(MSG_DONTWAIT))
                if n > 0 { ends[index].bytes += chunk[0..<n] } else if n == 0 || (errno != EAGAIN && errno != EINTR) { ends[index].closed = true }
            }
        }
        return ends
    }

    /// The packets in a stream of framed bytes, decoded as messages (bundles' messages in order).
    static func messages(_ bytes: [UInt8]) -> [OSCMessage] {
        var rest = bytes[...]
        var found: [OSCMessage] = []
        while rest.count >= 4 {
            let start = rest.startIndex
            let size = Int(UInt32(rest[start]) << 24 | UInt32(rest[start + 1]) << 16 | UInt32(rest[start + 2]) << 8 | UInt32(rest[start + 3]))
            guard rest.count >= 4 + size, let packet = try? OSCCodec.decode(Array(rest[(start + 4)..<(start + 4 + size)])) else { break }
            found += OSCClient.messages(in: packet)
            rest = rest.dropFirst(4 + size)
        }
        return found
    }

    static func firstMessage(_ bytes: [UInt8]) -> OSCMessage? { messages(bytes).first }

    static func decodeMessage(_ packet: [UInt8]) -> OSCMessage? {
        (try? OSCCodec.decode(packet)).flatMap { OSCClient.messages(in: $0).first }
    }

    /// Reads framed packets from `fd` until a message satisfies `wanted` (returned), the
    /// connection ends, or `timeout` passes.
    static func readMessages(_ fd: Int32, until wanted: (OSCMessage) -> Bool, timeout: Double) -> OSCMessage? {
        var bytes: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            if let found = messages(bytes).first(where: wanted) { return found }
            var set = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            guard poll(&set, 1, max(1, Int32(deadline.timeIntervalSinceNow * 1000))) > 0 else { continue }
            let n = recv(fd, &chunk, chunk.count, Int32(MSG_DONTWAIT))
            if n > 0 { bytes += chunk[0..<n] } else if n == 0 || (errno != EAGAIN && errno != EINTR) { break }
        }
        return messages(bytes).first(where: wanted)
    }
}

/// A UDP socket bound to a chosen source address, sending to 127.0.0.1.
final class UDPPeer {
    let fd: Int32

    init(source: String) throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = Self.address(source, 0)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard fd >= 0, bound == 0 else { throw Unexpected(description: "UDP socket on \(source): \(String(cString: strerror(errno)))") }
    }

    static func address(_ host: String, _ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        return address
    }

    func send(_ packet: [UInt8], to port: UInt16) {
        var address = Self.address("127.0.0.1", port)
        _ = packet.withUnsafeBytes { raw in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }

    /// Every datagram that arrives until none has for `quietFor` seconds (or `timeout` passes).
    func receiveAll(quietFor: Double, timeout: Double) -> [[UInt8]] {
        var received: [[UInt8]] = []
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            var set = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            guard poll(&set, 1, Int32(quietFor * 1000)) > 0 else { break }
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { received.append(Array(buffer[0..<n])) }
        }
        return received
    }

    func close() { Glibc.close(fd) }
}

/// Another process's descriptor limit and threads, through /proc and prlimit(1).
enum ProcessLimits {
    static func openFiles(_ pid: pid_t) -> (soft: Int, hard: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Max open files") }) else { return nil }
        let numbers = line.split(separator: " ").compactMap { Int($0) }
        return numbers.count >= 2 ? (numbers[0], numbers[1]) : nil
    }

    /// Sets the soft limit only (the hard one stays, so it can be raised again).
    static func setOpenFiles(_ pid: pid_t, soft: Int) throws {
        let output = try Tool.output("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=\(soft):"])
        guard output.status == 0 else { throw Unexpected(description: "prlimit: \(output)") }
    }

    static func thread(named name: String, of pid: pid_t) -> String? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.first { tid in
            (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == name
        }
    }

    /// Time the thread has run on a CPU (schedstat's first field); nil when it cannot be read.
    static func cpuNanoseconds(_ pid: pid_t, _ tid: String) -> Int64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/schedstat", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { Int64($0) }
    }

    /// The system call the thread is blocked in (x86-64 numbering; /proc's `syscall` file's
    /// first field), nil when it runs or cannot be read.
    /// The futex system call's number (Glibc does not export SYS_futex to Swift).
    #if arch(arm64)
    static let futexCall = 98
    #else
    static let futexCall = 202
    #endif

    static func blockedIn(_ pid: pid_t, _ tid: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/syscall", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { Int($0) }
    }
}
