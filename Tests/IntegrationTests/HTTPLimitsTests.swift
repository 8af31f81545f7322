import Foundation
import JackRig
import OSCTransport
import Testing

/// Issue 36: the HTTP server's connections are bounded before and after admission (docs/HTTP.md,
/// "Limits"), against the running daemon bound to every interface, admitting 127.0.0.1 (refused
/// clients come from 127.0.0.2).
@Suite("HTTP connection limits of the running daemon", .serialized)
struct HTTPLimitsTests {
    static let refusing = #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32"]"#

    /// The daemon's connections on `port` that have received bytes and left none of them
    /// unread (`ss -ti`: Recv-Q 0, `bytes_received` above 0): requests it has read. A connection
    /// whose peer has sent nothing yet does not count.
    static func requestsRead(port: UInt16) -> Int {
        guard let output = try? Tool.output("/usr/bin/ss", ["-tinH", "state", "established", "( sport = :\(port) )"]) else { return -1 }
        var count = 0
        var unread: Int?
        for line in output.text.split(separator: "\n") {
            if line.first == " " || line.first == "\t" {
                // The socket's details, under its line.
                let received = line.split(separator: " ").first { $0.hasPrefix("bytes_received:") }
                    .flatMap { Int($0.dropFirst("bytes_received:".count)) } ?? 0
                if unread == 0 && received > 0 { count += 1 }
                unread = nil
            } else {
                unread = line.split(separator: " ").first.flatMap { Int($0) }
            }
        }
        return count
    }

    /// `/state`'s `http` object.
    static func httpState(_ rig: OSCRig, transport: OSCURL.Transport = .tcp) throws -> [String: Int] {
        let reply = try #require(try rig.query("/state", transport: transport))
        guard case let .string(json) = reply.arguments[1],
              let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let http = object["http"] as? [String: Int] else { throw Unexpected(description: "no http object in /state: \(reply)") }
        return http
    }

    /// Raises this process's soft descriptor limit to at least `count` (as far as the hard one
    /// allows): the test holds many sockets at once.
    static func allowDescriptors(_ count: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(count) else { return }
        limit.rlim_cur = min(limit.rlim_max, rlim_t(count))
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// What each of many requests on other threads got, and how long it took.
    final class Waits: @unchecked Sendable {
        // @unchecked: `items` is read and written only under `lock`.
        private let lock = NSLock()
        private var items: [(status: Int, seconds: Double)] = []
        func add(_ status: Int, _ seconds: Double) { lock.withLock { items.append((status, seconds)) } }
        var summary: (statuses: [Int], slowest: Double) { lock.withLock { (items.map(\.status), items.map(\.seconds).max() ?? 0) } }
    }

    /// Counts how many descriptors a process holds, many times a second, until stopped: the most
    /// it saw.
    final class DescriptorWatch: @unchecked Sendable {
        // @unchecked: `most` and `running` are read and written only under `lock`.
        private let lock = NSLock()
        private var most = 0
        private var running = true
        private let done = DispatchSemaphore(value: 0)

        init(_ pid: Int32) {
            Thread.detachNewThread { [self] in
                while lock.withLock({ running }) {
                    let count = openDescriptors(pid) ?? -1
                    lock.withLock { most = max(most, count) }
                    usleep(2000)
                }
                done.signal()
            }
        }

        func stop() -> Int {
            lock.withLock { running = false }
            done.wait()
            return lock.withLock { most }
        }
    }

    @Test("1,500 connections held open by a refused host grow the daemon's descriptors by a bounded amount; an allowed GET, OSC TCP /state and a state save still succeed")
    func refusedFlood() throws {
        Self.allowDescriptors(4096)
        let rig = try OSCRig(osc: Self.refusing, http: true)
        defer { rig.close() }
        let pid = rig.daemon.processIdentifier
        let before = openDescriptors(pid) ?? -1
        let watch = DescriptorWatch(pid)
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        let started = Date()
        for _ in 0..<1500 { held.append(try HTTPClient.connection(port: rig.httpPort, Data(), source: "127.0.0.2", timeout: 5)) }
        let opening = Date().timeIntervalSince(started)
        // While they are held: the daemon still serves an allowed peer on every surface.
        let answered = try HTTPClient.get(port: rig.httpPort, "/app/music/volume?VALUE", source: "127.0.0.1", timeout: 3)
        #expect(answered.status == 200, "\(answered.status) \(answered.text)")
        #expect(try rig.settings()["apps"] != nil, "OSC TCP /state answers")
        #expect(try rig.query("/app/music/volume", [.float(0.3)])?.path == "/reply")
        try waitFor("the change to be saved", timeout: 5) {
            rig.savedState()?.appVolumes["music"].map { abs($0 - 0.3) < 1e-6 } == true
        }
        let most = watch.stop()
        // Every refused peer was answered 403 and closed: its end reads the answer, then the end.
        var answers = 0
        for fd in held.prefix(50) {
            var buffer = [UInt8](repeating: 0, count: 512)
            var text = Data()
            while true {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { break }
                text.append(contentsOf: buffer[0..<n])
            }
            if String(decoding: text, as: UTF8.self).hasPrefix("HTTP/1.1 403") { answers += 1 }
        }
        print("HTTPLimitsTests: 1500 refused connections opened in \(String(format: "%.2f", opening)) s; daemon descriptors \(before) before, at most \(most) meanwhile")
        #expect(most - before < 100, "the daemon's descriptors grew from \(before) to \(most)")
        #expect(answers == 50, "\(answers) of the first 50 refused connections read a 403 before the end")
        let http = try Self.httpState(rig)
        #expect(http["refused"] == 1500 && http["open"] == 0, "\(http)")
    }

    @Test("refusals are logged at a bounded rate: 300 refused connections give at most 3 lines")
    func refusalLogBounded() throws {
        let rig = try OSCRig(osc: Self.refusing, http: true)
        defer { rig.close() }
        let linesBefore = rig.log.components(separatedBy: "\n").count
        for _ in 0..<300 {
            let refused = try HTTPClient.get(port: rig.httpPort, "/", source: "127.0.0.2", timeout: 3)
            #expect(refused.status == 403 && refused.text.contains("osc.allow"))
        }
        let lines = rig.log.components(separatedBy: "\n").filter { $0.contains("refused HTTP") }
        #expect((1...3).contains(lines.count), "\(lines.count) lines: \(lines.prefix(5))")
        // Every line the daemon wrote meanwhile, but the router's own (an xrun notice on a
        // loaded machine is no refusal).
        let added = rig.log.components(separatedBy: "\n").dropFirst(linesBefore - 1).filter { !$0.contains("[RouterCore]") }
        #expect(added.count <= 4, "\(added.count) lines in all: \(added.prefix(8).joined(separator: "\n"))")
        #expect(try Self.httpState(rig)["refused"] == 300)
    }

    @Test("a header sent one byte a second by an allowed host is closed at the deadline (10 s from acceptance)")
    func slowLoris() throws {
        let rig = try OSCRig(osc: Self.refusing, http: true)
        defer { rig.close() }
        let header = Data("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: \(String(repeating: "a", count: 64))".utf8)
        let started = Date()
        let fd = try HTTPClient.connection(port: rig.httpPort, Data(), source: "127.0.0.1", timeout: 1)
        defer { close(fd) }
        var closedAfter: Double?
        var sent = 0
        while closedAfter == nil, Date().timeIntervalSince(started) < 20, sent < header.count {
            let byte = [header[sent]]
            if send(fd, byte, 1, Int32(MSG_NOSIGNAL)) != 1 {
                closedAfter = Date().timeIntervalSince(started)
                break
            }
            sent += 1
            // A second, or until the server closes (recv: 0, or a reset).
            var buffer = [UInt8](repeating: 0, count: 256)
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 1000) > 0, recv(fd, &buffer, buffer.count, 0) <= 0 {
                closedAfter = Date().timeIntervalSince(started)
            }
        }
        print("HTTPLimitsTests: a slow header was closed after \(closedAfter.map { String(format: "%.1f", $0) } ?? "never") s, \(sent) bytes sent")
        let seconds = try #require(closedAfter, "the slow header was never closed (\(sent) bytes sent)")
        #expect(seconds > 9 && seconds < 13, "closed after \(seconds) s")
        #expect(try Self.httpState(rig)["closedAtDeadline"] == 1)
        #expect(try HTTPClient.get(port: rig.httpPort, "/?HOST_INFO", source: "127.0.0.1", timeout: 3).status == 200)
    }

    @Test("one allowed address holding its share of connections (16) leaves room for another allowed address; its next is answered 503 at once")
    func perAddressCap() throws {
        let rig = try OSCRig(osc: #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32", "127.0.0.3/32"]"#, http: true)
        defer { rig.close() }
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        let slowBody = Data("POST /app/music/volume HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n0123456789".utf8)
        for _ in 0..<16 { held.append(try HTTPClient.connection(port: rig.httpPort, slowBody, source: "127.0.0.3")) }
        // (Checked below: a wait that runs out lets the verdicts below say what went wrong.)
        try? waitFor("the 16 connections to be admitted") { (try? Self.httpState(rig))?["open"] == 16 }
        let started = Date()
        let over = try HTTPClient.get(port: rig.httpPort, "/?HOST_INFO", source: "127.0.0.3", timeout: 3)
        #expect(over.status == 503 && over.text.contains("too many"), "\(over.status) \(over.text)")
        #expect(Date().timeIntervalSince(started) < 2, "answered at once")
        let other = try HTTPClient.get(port: rig.httpPort, "/?HOST_INFO", source: "127.0.0.1", timeout: 3)
        #expect(other.status == 200, "another allowed address: \(other.status) \(other.text)")
        // The other address's connection is released a moment after its peer saw the close.
        try? waitFor("the other address's connection to be released", timeout: 2) { (try? Self.httpState(rig))?["open"] == 16 }
        let http = try Self.httpState(rig)
        #expect(http["perAddressLimit"] == 16 && http["limit"] == 64 && http["adminReserve"] == 8 && http["turnedAway"] == 1 && http["open"] == 16, "\(http)")
        #expect(rig.log.contains("at most 16 connections from one address"))
    }

    @Test("four allowed addresses holding every HTTP slot do not lock out an osc.admin address: its HOST_INFO is answered and its WebSocket opens")
    func adminGetsIn() throws {
        let rig = try OSCRig(osc: #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32", "127.0.0.4/30", "127.0.0.8/32"], "admin": ["127.0.0.8/32"]"#,
                             http: true)
        defer { rig.close() }
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        let slowBody = Data("POST /app/music/volume HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n0123456789".utf8)
        for source in ["127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7"] {
            for _ in 0..<16 { held.append(try HTTPClient.connection(port: rig.httpPort, slowBody, source: source)) }
        }
        try waitFor("the 64 connections to be admitted", timeout: 5) { (try? Self.httpState(rig))?["open"] == 64 }
        let busy = try HTTPClient.get(port: rig.httpPort, "/?HOST_INFO", source: "127.0.0.1", timeout: 3)
        #expect(busy.status == 503, "every slot is taken: \(busy.status) \(busy.text)")

        let admin = try HTTPClient.get(port: rig.httpPort, "/?HOST_INFO", source: "127.0.0.8", timeout: 3)
        #expect(admin.status == 200, "the osc.admin address's HOST_INFO: \(admin.status) \(admin.text)")
        let upgrade = Data(("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(rig.httpPort)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
        let socket = try HTTPClient.connection(port: rig.httpPort, upgrade, source: "127.0.0.8", timeout: 3)
        defer { close(socket) }
        var line = Data()
        var byte: UInt8 = 0
        while line.last != 10, line.count < 200, recv(socket, &byte, 1, 0) == 1 { line.append(byte) }
        #expect(String(decoding: line, as: UTF8.self).hasPrefix("HTTP/1.1 101"), "the osc.admin address's WebSocket: \(String(decoding: line, as: UTF8.self))")
        #expect(try Self.httpState(rig)["webSockets"] == 1)
    }

    @Test("HOST_INFO waits for the control queue without holding a thread: many of them while the queue is busy leave other requests answered at once")
    func hostInfoHoldsNoThread() throws {
        // Requests from several allowed addresses (16 at most from one).
        let rig = try OSCRig(osc: #", "allow": ["127.0.0.0/26"]"#, http: true)
        defer { rig.close() }
        let oscThread = try #require(ProcessLimits.thread(named: "duckrouter.osc", of: rig.daemon.processIdentifier))
        /// The OSC thread waits on a lock (the futex system call): for the control queue, since it handles a
        /// request there; otherwise it waits in poll.
        func oscThreadWaitsForTheQueue() -> Bool {
            (0..<3).allSatisfy { _ in
                usleep(5000)
                return ProcessLimits.blockedIn(rig.daemon.processIdentifier, oscThread) == ProcessLimits.futexCall
            }
        }
        #expect(!oscThreadWaitsForTheQueue(), "the OSC thread waits for the control queue before the test holds it")
        // A new app while the server is frozen: its ports wait for the server, and hold the
        // control queue until the router gives the server up (2-2.5 s).
        rig.server.suspend()
        defer { rig.server.resume() }
        let registered = DispatchSemaphore(value: 0)
        let (oscPort, httpPort) = (rig.port, rig.httpPort)
        Thread.detachNewThread {
            if let client = try? OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: oscPort)) {
                try? client.send(OSCMessage("/app/register", [.string("synth"), .string("ambient")]))
                _ = try? client.receive(timeout: 8) { $0.arguments.first == .string("/app/register") }
            }
            registered.signal()
        }
        try waitFor("the registration to hold the control queue", timeout: 3) { oscThreadWaitsForTheQueue() }
        // More HOST_INFO requests than Swift's concurrency pool has threads (one per core), 12
        // from each address.
        let count = ProcessInfo.processInfo.activeProcessorCount + 4
        try #require(count <= 60, "more cores (\(count - 4)) than HTTP connections to outnumber them")
        let waits = Waits()
        let asked = DispatchGroup()
        for k in 0..<count {
            asked.enter()
            Thread.detachNewThread {
                let started = Date()
                let status = (try? HTTPClient.get(port: httpPort, "/?HOST_INFO", source: "127.0.0.\(1 + k / 12)", timeout: 8))?.status ?? 0
                waits.add(status, Date().timeIntervalSince(started))
                asked.leave()
            }
        }
        // Every request has reached the daemon and waits: the HTTP connections of all of them are open.
        try waitFor("the HOST_INFO requests to be read", timeout: 3) { Self.requestsRead(port: rig.httpPort) >= count }
        // A request that needs no control queue is answered at once.
        let started = Date()
        let other = try HTTPClient.get(port: rig.httpPort, "/", method: "POST", source: "127.0.0.50", timeout: 8)
        let seconds = Date().timeIntervalSince(started)
        asked.wait()
        registered.wait()
        let (statuses, slowest) = waits.summary
        print(String(format: "HTTPLimitsTests: with the control queue busy, %d HOST_INFO took up to %.2f s; a POST was answered in %.2f s", count, slowest, seconds))
        #expect(other.status == 405)
        #expect(seconds < 1, "a request that needs no control queue waited \(seconds) s behind \(count) HOST_INFO requests")
        #expect(slowest > 1, "the control queue was busy while HOST_INFO was asked (else this test shows nothing)")
        #expect(statuses == Array(repeating: 200, count: count), "\(statuses)")
    }

    @Test("with its descriptor limit lowered under it to 4 above what it holds, the daemon turns allowed peers away at once (503, short of descriptors) instead of running out, which would let libdispatch crash it; its event loop does not spin; once the limit is back, a peer is served")
    func turnedAwayShortOfDescriptors() throws {
        let rig = try OSCRig(osc: #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32", "127.0.0.4/30"]"#, http: true)
        defer { rig.close() }
        let pid = rig.daemon.processIdentifier
        /// CPU time (user and system, seconds) of each of the daemon's threads, by thread id, with
        /// the thread's name.
        func cpuByThread() -> [String: (name: String, seconds: Double)] {
            let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
            var result: [String: (String, Double)] = [:]
            for tid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8),
                      let open = stat.firstIndex(of: "("), let end = stat.lastIndex(of: ")") else { continue }
                let fields = stat[stat.index(after: end)...].split(separator: " ")
                // utime and stime are fields 14 and 15 of the line: the 12th and 13th after the name.
                result[tid] = (String(stat[stat.index(after: open)..<end]), ((Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)) / ticks)
            }
            return result
        }
        /// Over `seconds`: the CPU time of the whole daemon, of its event loop threads (SwiftNIO's,
        /// where HTTP accepts), and the busiest threads.
        func cpuOver(_ seconds: Double) -> (total: Double, eventLoops: Double, busiest: String) {
            let before = cpuByThread()
            Thread.sleep(forTimeInterval: seconds)
            let used = cpuByThread().map { tid, now in (name: now.name, seconds: now.seconds - (before[tid]?.seconds ?? 0)) }
            let busiest = used.sorted { $0.seconds > $1.seconds }.prefix(3).map { String(format: "%@ %.2f s", $0.name, $0.seconds) }
            return (used.reduce(0) { $0 + $1.seconds }, used.filter { $0.name.hasPrefix("NIO-ELT") }.reduce(0) { $0 + $1.seconds },
                    busiest.joined(separator: ", "))
        }
        let eventLoopThreads = cpuByThread().values.filter { $0.name.hasPrefix("NIO-ELT") }.count
        try #require(eventLoopThreads > 0, "no event loop thread (NIO-ELT) among the daemon's threads: \(cpuByThread().values.map(\.name))")
        let quiet = cpuOver(2)
        // Leave the daemon 4 descriptors, then ask for more connections than that.
        // (Set from outside with util-linux's prlimit: Glibc's prlimit(2) is not imported.)
        func setSoftLimit(_ soft: Int) throws {
            let tool = Process()
            tool.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            tool.arguments = ["--pid", "\(pid)", "--nofile=\(soft):"]
            try tool.run()
            tool.waitUntilExit()
            guard tool.terminationStatus == 0 else { throw Unexpected(description: "prlimit --nofile=\(soft): exit \(tool.terminationStatus)") }
        }
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        let line = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let original = try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[3]), "\(line)")
        let lowered = (openDescriptors(pid) ?? -1) + 4
        try setSoftLimit(lowered)
        var restored = false
        defer { if !restored { try? setSoftLimit(original) } }
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        // (They send nothing: a request the daemon leaves unread could turn its answer into a reset.)
        for k in 0..<24 { held.append(try HTTPClient.connection(port: rig.httpPort, Data(), source: "127.0.0.\(4 + k % 4)")) }
        // Each is answered and closed at once: the 24 are turned away, none is left waiting.
        let answers = TCPPeers.readUntilClosed(held, timeout: 5)
        #expect(answers.filter(\.closed).count == 24, "every peer answered and closed: \(answers.map(\.closed))")
        #expect(answers.allSatisfy { String(decoding: $0.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 503") && String(decoding: $0.bytes, as: UTF8.self).contains("short of descriptors") },
                "\(answers.map { String(decoding: $0.bytes.prefix(80), as: UTF8.self) })")
        let atLimit = cpuOver(2)
        print(String(format: "HTTPLimitsTests: daemon CPU over 2 s: %.2f s quiet, %.2f s with its limit 4 above what it holds after 24 peers, of which %.2f s on its event loops (busiest: %@)",
                     quiet.total, atLimit.total, atLimit.eventLoops, atLimit.busiest))
        #expect(atLimit.eventLoops < 0.5, "HTTP's accept loop spins: \(atLimit.eventLoops) s of CPU in 2 s (busiest: \(atLimit.busiest))")
        #expect((openDescriptors(pid) ?? -1) < lowered, "the daemon kept its last descriptors: \(openDescriptors(pid) ?? -1) of \(lowered)")
        #expect(!rig.log.contains("HTTP cannot accept connections"), "it never ran out")
        #expect(rig.log.contains("short of descriptors"), "\(rig.log)")
        // (Over UDP: a TCP connection would be turned away for want of descriptors too.)
        #expect(try Self.httpState(rig, transport: .udp)["turnedAway"] ?? 0 >= 24)
        // The limit back: an allowed peer is served.
        try setSoftLimit(original)
        restored = true
        let served = try HTTPClient.get(port: rig.httpPort, "/?HOST_INFO", source: "127.0.0.1", timeout: 4)
        #expect(served.status == 200, "\(served.status) \(served.text)")
        #expect(rig.daemon.isRunning)
    }
}
