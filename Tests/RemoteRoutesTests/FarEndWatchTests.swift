import Foundation
import InMemoryLogging
import Logging
import OSCTransport
@testable import RemoteRoutes
import Testing

/// The far-end watch against a real UDP responder that answers `/ping` as duckrouter does (from
/// a socket of its own, not the one asked). The watch across namespaces against a real far
/// duckrouter: IntegrationTests.RemoteRouteTests.
@Suite("Watching a far end", .serialized)
struct FarEndWatchTests {
    /// Answers `/ping <token>` with `/reply "/ping" "far" <token>` while `answering`, from another
    /// socket, as duckrouter does.
    final class Responder: @unchecked Sendable {
        // @unchecked: `answering` and `stopping` under `lock`; the sockets are the thread's.
        let port: UInt16
        private let fd: Int32, replies: Int32
        private let lock = NSLock()
        private var answering = true, stopping = false
        private let done = DispatchSemaphore(value: 0)

        /// `answerFrom`: the address its replies come from (another of the host's, or another
        /// host's); `echoesToken` false: it answers without the token (a stray or forged reply).
        let echoesToken: Bool
        init(answerFrom: String = "127.0.0.1", echoesToken: Bool = true) throws {
            self.echoesToken = echoesToken
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            self.fd = fd
            let replies = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            self.replies = replies
            var source = sockaddr_in()
            source.sin_family = sa_family_t(AF_INET)
            source.sin_addr.s_addr = inet_addr(answerFrom)
            let sourceBound = withUnsafePointer(to: &source) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(replies, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            guard sourceBound else { throw POSIXError(.EADDRNOTAVAIL) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            guard bound else { throw POSIXError(.EADDRINUSE) }
            port = UInt16(bigEndian: address.sin_port)
            let thread = Thread { [self] in serve() }
            thread.start()
        }

        func answer(_ yes: Bool) { lock.withLock { answering = yes } }

        func stop() {
            lock.withLock { stopping = true }
            done.wait()
            close(fd)
            close(replies)
        }

        private func serve() {
            defer { done.signal() }
            var buffer = [UInt8](repeating: 0, count: 2048)
            while !lock.withLock({ stopping }) {
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 20) > 0 else { continue }
                var from = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let count = withUnsafeMutablePointer(to: &from) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &length) }
                }
                guard count > 0, lock.withLock({ answering }),
                      case let .message(message)? = try? OSCCodec.decode(Array(buffer[0..<count])), message.path == "/ping" else { continue }
                let reply = OSCCodec.encode(OSCMessage("/reply", [.string("/ping"), .string("far")] + (echoesToken ? message.arguments : [])))
                _ = withUnsafePointer(to: &from) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(replies, reply, reply.count, 0, $0, length) }
                }
            }
        }
    }

    final class Changes: @unchecked Sendable {
        // @unchecked: under `lock`.
        private let lock = NSLock()
        private var seen: [(Bool, Date)] = []
        func add(_ answers: Bool) { lock.withLock { seen.append((answers, Date())) } }
        var all: [(answers: Bool, at: Date)] { lock.withLock { seen } }
    }

    func waitFor(_ what: String, timeout: Double = 10, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { throw POSIXError(.ETIMEDOUT, userInfo: [NSLocalizedDescriptionKey: what]) }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    @Test("unanswered at first; answers from the first reply; silent once a second has gone by without one; answers again; nothing after stop")
    func followsTheFarEnd() throws {
        let responder = try Responder()
        defer { responder.stop() }
        responder.answer(false)
        let changes = Changes()
        let log = InMemoryLogHandler()
        let watch = FarEndWatch(route: "stage", host: "127.0.0.1", port: Int(responder.port), logger: Logger(label: "test") { _ in log }) {
            changes.add($0)
        }
        watch.start()
        // Unanswered asks say nothing: the route starts unavailable and stays so.
        Thread.sleep(forTimeInterval: 0.6)   // paced: two asks or more go unanswered in it
        #expect(changes.all.isEmpty)
        responder.answer(true)
        try waitFor("an answer") { changes.all.count == 1 }
        #expect(changes.all.map(\.answers) == [true])
        let quiet = Date()
        responder.answer(false)
        try waitFor("silence") { changes.all.count == 2 }
        let noticed = changes.all[1].at.timeIntervalSince(quiet)
        // The last answer came at most one interval before `quiet`: silence is noticed a second
        // after it, at the next ask.
        #expect(noticed >= 1.0 - 0.25 - 0.05 && noticed <= 1.25 + 0.5, "noticed \(noticed) s after the far end fell silent (documented: 1.0-1.25 s after its last answer)")
        responder.answer(true)
        try waitFor("an answer again") { changes.all.count == 3 }
        #expect(changes.all.map(\.answers) == [true, false, true])
        #expect(log.entries.map { "\($0.message)" }.filter { $0.hasPrefix("the far end") } == ["the far end answers", "the far end stopped answering", "the far end answers"])
        watch.stop()
        responder.answer(false)
        Thread.sleep(forTimeInterval: 1.5)   // paced: nothing may happen in it
        #expect(changes.all.count == 3, "nothing told after stop")
    }

    @Test("only a reply carrying the watch's token is the far end answering: a stray /reply to /ping without it is not; the far end answering from another of its addresses is")
    func answersCarryTheToken() throws {
        let stray = try Responder(echoesToken: false)
        defer { stray.stop() }
        let changes = Changes()
        let watch = FarEndWatch(route: "stage", host: "127.0.0.1", port: Int(stray.port), logger: Logger(label: "test") { _ in InMemoryLogHandler() }) {
            changes.add($0)
        }
        watch.start()
        Thread.sleep(forTimeInterval: 1.0)   // paced: four asks, each answered without the token, in it
        watch.stop()
        #expect(changes.all.isEmpty, "a reply without the token taken for the far end: \(changes.all)")
        // Asked at 127.0.0.1, answering from 127.0.0.2 (a far host with two addresses), with the token.
        let elsewhere = try Responder(answerFrom: "127.0.0.2")
        defer { elsewhere.stop() }
        let heard = Changes()
        let second = FarEndWatch(route: "stage", host: "127.0.0.1", port: Int(elsewhere.port), logger: Logger(label: "test") { _ in InMemoryLogHandler() }) {
            heard.add($0)
        }
        second.start()
        defer { second.stop() }
        try waitFor("an answer") { heard.all.count == 1 }
    }

    @Test("a far host that cannot be resolved is logged once and asked again; nothing is told")
    func unresolvable() throws {
        let changes = Changes()
        let log = InMemoryLogHandler()
        let watch = FarEndWatch(route: "stage", host: "no-such-host.invalid", port: 9951, logger: Logger(label: "test") { _ in log }) {
            changes.add($0)
        }
        watch.start()
        try waitFor("the error") { !log.entries.isEmpty }
        Thread.sleep(forTimeInterval: 0.6)   // paced: more tries in it
        watch.stop()
        let errors = log.entries.filter { $0.level == .error }
        #expect(errors.count == 1 && "\(errors[0].message)".hasPrefix("cannot watch the far end at no-such-host.invalid:9951"), "\(log.entries)")
        #expect(changes.all.isEmpty)
    }
}
