import Foundation
import Logging
import OSCTransport
import SessionStore

/// Watches the far end of a one-way remote route (zita-njbridge, which tells nothing of its
/// receiver): asks the far host's duckrouter `/ping` over UDP every `interval` and says whether it
/// answers. It answers from its first reply; it stops answering when `silence` has gone by since
/// the last (checked at each ask), so a far end that goes is seen `silence` to `silence +
/// interval` after its last answer, and one that comes back within `interval` of answering.
///
/// Owns: its thread and its UDP socket (an `OSCClient`, not connected: the far duckrouter answers
/// from another socket than the one it was asked on). Only a `/reply` carrying the token each
/// `/ping` carries counts. Tells only `onChange`, from its thread, and never after `stop` has
/// returned.
public final class FarEndWatch: @unchecked Sendable {
    // @unchecked: `stopping` is read and written only under `lock`; `thread` is set by start,
    // before stop; the rest is set in init.
    public let route: String
    private let host: String
    private let port: UInt16
    private let interval: Double
    private let silence: Double
    private let logger: Logger
    private let onChange: @Sendable (Bool) -> Void
    private let lock = NSLock()
    private var stopping = false
    private let finished = DispatchSemaphore(value: 0)
    private var thread: Thread?

    public init(route: String, host: String, port: Int, interval: Double = Session.Remote.Bridge.pingInterval,
                silence: Double = Session.Remote.Bridge.silenceLimit, logger: Logger,
                onChange: @escaping @Sendable (_ answers: Bool) -> Void) {
        self.route = route
        self.host = host
        self.port = UInt16(clamping: port)
        self.interval = interval
        self.silence = silence
        self.logger = logger
        self.onChange = onChange
    }

    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "duckrouter.watch"
        self.thread = thread
        thread.start()
    }

    /// Stops asking; returns once the thread has ended, or one `interval` and a second later at
    /// most (a name lookup under way, with no DNS answering, may take longer: the thread ends on
    /// its own after it, telling nothing). `onChange` is never called once this has returned: it
    /// is called under the same lock, so never call `stop` from where `onChange` leads (the
    /// router's control queue). Once: a second call returns at once.
    public func stop() {
        guard requestStop() else { return }
        awaitStop(until: .now() + interval + 1)
    }

    /// The first half of `stop`: nothing is told from now on. Whether this was the first request.
    func requestStop() -> Bool {
        lock.withLock {
            defer { stopping = true }
            return !stopping && thread != nil
        }
    }

    /// The second half: waits for the thread until `deadline`.
    func awaitStop(until deadline: DispatchTime) {
        if finished.wait(timeout: deadline) == .timedOut {
            logger.warning("the far end's watch is still looking up \(host); not waiting for it", metadata: ["route": "\(route)"])
        }
    }

    private var isStopping: Bool { lock.withLock { stopping } }

    private func run() {
        defer { finished.signal() }
        let url = OSCURL(transport: .udp, host: host, port: port)
        var client: OSCClient?
        var unreachable: String?
        var refused: String?
        var lastAnswer: Date?
        var answers = false
        // The far end sends the token back: a reply without it is not an answer to this watch
        // (the far host may answer from another of its addresses than the one asked).
        let token = Int32.random(in: 1...999_999_999)
        let ping = OSCCodec.encode(OSCMessage("/ping", [.int32(token)]))
        while !isStopping {
            let tick = Date()
            if client == nil {
                // A name is looked up here (it may block): on this thread, again each interval
                // until it resolves.
                do throws(OSCServerError) {
                    client = try OSCClient(url)
                    unreachable = nil
                } catch {
                    if unreachable != error.description {
                        logger.error("cannot watch the far end at \(host):\(port): \(error)", metadata: ["route": "\(route)"])
                        unreachable = error.description
                    }
                }
            }
            if let client {
                do throws(OSCServerError) {
                    try client.send(packet: ping)
                    while true {
                        let wait = interval - Date().timeIntervalSince(tick)
                        guard wait > 0, let packet = try client.receive(timeout: wait) else { break }
                        for message in OSCClient.messages(in: packet) where message.arguments.first == .string("/ping") {
                            if message.path == "/reply", message.arguments.last == .int32(token) {
                                lastAnswer = Date()
                                refused = nil
                            } else if message.path == "/error", refused == nil {
                                // Its osc.allow leaves this host out (-5), most likely: said once.
                                refused = message.arguments.dropFirst().map { argument -> String in
                                    switch argument {
                                    case let .int32(code): "\(code)"
                                    case let .string(text): text
                                    default: "\(argument)"
                                    }
                                }.joined(separator: " ")
                                logger.error("the far end refuses to answer: \(refused ?? "")", metadata: ["route": "\(route)", "at": "\(host):\(port)"])
                            }
                        }
                    }
                } catch {
                    // A send refused (no route to the host: the link is down) is an unanswered ask.
                    logger.debug("ping: \(error)", metadata: ["route": "\(route)"])
                }
            }
            let now = Date()
            let answering = lastAnswer.map { now.timeIntervalSince($0) <= silence } ?? false
            if answering != answers {
                answers = answering
                if answering {
                    logger.notice("the far end answers", metadata: ["route": "\(route)", "at": "\(host):\(port)"])
                } else {
                    logger.warning("the far end stopped answering", metadata: ["route": "\(route)", "at": "\(host):\(port)",
                                                                              "silentFor": "\(String(format: "%.2f", now.timeIntervalSince(lastAnswer ?? now))) s"])
                }
                lock.withLock { if !stopping { onChange(answering) } }
            }
            let rest = interval - Date().timeIntervalSince(tick)
            if rest > 0 { Thread.sleep(forTimeInterval: rest) }
        }
    }
}
