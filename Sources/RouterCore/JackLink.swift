import Dispatch
import Foundation
import JackHost
import SessionStore

/// The router's link to the JACK server: opening a client, telling events of the current client
/// from those of one closed since, losing the server, and joining it again with backoff.
///
/// Owns: the client, its epoch, the reconnect schedule and its counters. Must not touch: ports,
/// plans or the policy (the router attaches a client it is handed). Control queue only, except
/// `jack_client_open`, which runs on the `connector` queue with nothing but the immutable
/// `Parameters`, and the closing of every client (given up on, dropped, or opened for a reconnect
/// no longer wanted), which runs on the `closer` queue with nothing but that client, so a slow or
/// hung server never holds the control queue and no control state is read off it.
final class JackLink: @unchecked Sendable {
    // @unchecked: every mutable field is touched only on the control queue `queue`; the
    // connector queue reads only `parameters` (immutable) through values captured before it runs.
    /// What opening a client needs, fixed at start (routes cannot change without a restart).
    struct Parameters: Sendable {
        var clientName: String
        var server: String?
        /// Whether some route has a look-ahead or a far end JACK cannot see (zita-njbridge), so the
        /// client reports its own latencies.
        var reportsLatency: Bool
        /// netjack2's master side (`netmanager`) to load into the server when a route is remote
        /// over netjack2; nil when none is.
        var netManager: NetManager?
        var reconnectDelays: (first: Double, maximum: Double)
    }

    /// netmanager's load arguments, and the routes that need it (for messages).
    struct NetManager: Sendable {
        var arguments: String
        var routes: [String]

        /// netmanager where the session's `netjack2` says: its address (`-a`) and port (`-p`).
        init(_ settings: Session.NetJack2Settings, routes: [String]) {
            arguments = "-a \(settings.address) -p \(settings.port)"
            self.routes = routes
        }
    }

    /// Receives a JACK event and the epoch of the client that sent it, on the control queue.
    typealias EventSink = @Sendable (JackEvent, Int) -> Void

    let parameters: Parameters
    private let queue: DispatchQueue
    private let connector = DispatchQueue(label: "duckrouter.reconnect")
    /// Closes clients off the control queue (`close`).
    private let closer = DispatchQueue(label: "duckrouter.jack-close")
    /// The JACK client; nil while the server is away.
    private(set) var client: JackClient?
    /// The epoch of `client`; every client opened gets the next one.
    private var epoch = 0
    private var lastEpoch = 0
    private(set) var disconnectedSince: Date?
    private(set) var reconnects = 0
    private(set) var attempts = 0
    private var reconnectScheduled = false
    /// Clients dropped or given up whose close has not returned yet: no new client is opened
    /// meanwhile (it would get another name, and both could run the engine's cycles).
    private var closing = 0
    /// A reconnect asked for while a close was pending: scheduled once the last one returns.
    private var reconnectAfterClose: (events: EventSink, stillWanted: () -> Bool,
                                      completion: (Result<(client: JackClient, epoch: Int), JackError>) -> Void)?

    init(parameters: Parameters, queue: DispatchQueue) {
        self.parameters = parameters
        self.queue = queue
    }

    /// Opens a client now, on the calling thread (at start, before anything else runs).
    func open(events: @escaping EventSink) throws(JackError) -> (client: JackClient, epoch: Int) {
        lastEpoch += 1
        let epoch = lastEpoch
        return (try Self.open(parameters, epoch: epoch, events: events), epoch)
    }

    private static func open(_ parameters: Parameters, epoch: Int, events: @escaping EventSink) throws(JackError) -> JackClient {
        try JackClient(name: parameters.clientName, server: parameters.server, reportsLatency: parameters.reportsLatency,
                       events: { event in events(event, epoch) })
    }

    /// The router runs on `client` from now on.
    func adopt(_ client: JackClient, epoch: Int) {
        self.client = client
        self.epoch = epoch
    }

    /// Whether an event of that epoch comes from the current client.
    func isCurrent(epoch: Int) -> Bool { client != nil && epoch == self.epoch }

    /// The epoch of the current client (of the last one while none runs).
    var currentEpoch: Int { epoch }

    /// The server went away, or stopped running the client's cycles (`CycleWatchdog`): the
    /// client is given up without waiting for the server, which may never answer again, and the
    /// time away starts. It is closed on the `closer` queue (jack_client_close asks the server
    /// first); `closed` runs on the control queue once it is, when no cycle of it can run any
    /// more. Until then `keepAlive` (what its process callback points into) is held, and it is
    /// let go on the control queue. `backOff`: keep lengthening the waits between attempts (a
    /// client given up that never ran a cycle), rather than start again from the first.
    func abandon(keepingAlive keepAlive: AnyObject, backOff: Bool, closed: @escaping () -> Void) {
        guard let client else { return }
        self.client = nil
        disconnectedSince = Date()
        if !backOff { attempts = 0 }
        _ = close(client, keepingAlive: keepAlive, waitSeconds: nil, closed: closed)
    }

    /// Closes `client` on the `closer` queue, holding `keepAlive` until it has closed. With
    /// `waitSeconds`, waits that long for the close; returns whether it closed by then, having run
    /// `closed`. Otherwise (or when it did not close in time) `closed` runs later on the control
    /// queue, once the close returns, and no client is opened meanwhile (`closing`).
    private func close(_ client: JackClient, keepingAlive keepAlive: AnyObject?, waitSeconds: Double?,
                       closed: (() -> Void)?) -> Bool {
        let waiter = AbandonableResult<Void>()
        // Nobody waits: the closer does the rest whenever it is done.
        if waitSeconds == nil { _ = waiter.abandon() }
        let kept = keepAlive.map { Handover(Unmanaged.passRetained($0)) }
        let handover = Handover((client: client, closed: closed))
        let queue = self.queue
        closing += 1
        closer.async {
            handover.value.client.close()
            // Waited for and seen closed: the waiter goes on. Otherwise the rest on the control queue.
            guard waiter.finish(()) else {
                kept?.value.release()
                return
            }
            queue.async { [weak self] in
                self?.closeReturned()
                handover.value.closed?()
                kept?.value.release()
            }
        }
        // Closed in time, or just after the wait (then nobody is told it was abandoned).
        guard let waitSeconds, waiter.wait(seconds: waitSeconds) || !waiter.abandon() else { return false }
        closing -= 1
        closed?()
        return true
    }

    /// A close given to the `closer` queue has returned (control queue): a reconnect asked for
    /// meanwhile is scheduled once none is pending.
    private func closeReturned() {
        closing -= 1
        guard closing == 0, let pending = reconnectAfterClose else { return }
        reconnectAfterClose = nil
        scheduleReconnect(events: pending.events, stillWanted: pending.stillWanted, completion: pending.completion)
    }

    /// Loads netjack2's `netmanager` into the server of the client just adopted, when the session
    /// needs it and the server has none yet (a server joined again after a restart has lost it).
    /// nil when no route is remote over netjack2. A round trip to the server.
    func startNetManager() -> JackClient.InternalClientOutcome? {
        guard let netManager = parameters.netManager, let client else { return nil }
        return client.ensureInternalClient(name: Self.netManagerName, object: "netmanager", arguments: netManager.arguments)
    }

    static let netManagerName = "netmanager"

    /// Forgets the client without counting a loss (stop, or a failed start on it). A `netmanager`
    /// it loaded stays in the server: unloading it is a request jackd2 serves inside its engine,
    /// and a test run once found a server that no longer answered anyone after a router stopped
    /// (and unloaded it) just after a far end died; the next router finds it running.
    ///
    /// The client is closed on the `closer` queue, and waited for up to `waitSeconds`: a server
    /// that answers closes it in milliseconds, and the caller goes on as if closed here; a frozen
    /// one may never answer (a request still waiting holds the close too), and the control queue
    /// must not wait for it. Returns whether it closed in time. `keepAlive` (what its process
    /// callback points into) is held until it has closed; `closed` runs once it has: before this
    /// returns when it closed in time, else later on the control queue.
    @discardableResult
    func drop(keepingAlive keepAlive: AnyObject? = nil, waitSeconds: Double = 2, closed: (() -> Void)? = nil) -> Bool {
        guard let client else {
            closed?()
            return true
        }
        self.client = nil
        return close(client, keepingAlive: keepAlive, waitSeconds: waitSeconds, closed: closed)
    }

    /// Tries to open a client again after the next backoff delay (doubling from the first to the
    /// maximum). `completion` runs on the control queue with the outcome; it does not run when
    /// `stillWanted()` says no by then.
    func scheduleReconnect(events: @escaping EventSink, stillWanted: @escaping () -> Bool,
                           completion: @escaping (Result<(client: JackClient, epoch: Int), JackError>) -> Void) {
        guard client == nil, !reconnectScheduled else { return }
        guard closing == 0 else {
            reconnectAfterClose = (events, stillWanted, completion)
            return
        }
        reconnectScheduled = true
        let delays = parameters.reconnectDelays
        let delay = min(delays.first * pow(2, Double(min(attempts, 16))), delays.maximum)
        attempts += 1
        let parameters = self.parameters
        let queue = self.queue
        let closer = self.closer
        let send = Handover((stillWanted, completion))
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self else { return }
            reconnectScheduled = false
            guard client == nil, send.value.0() else { return }
            lastEpoch += 1
            let epoch = lastEpoch
            connector.async {
                let outcome: Result<JackClient, JackError>
                do throws(JackError) { outcome = .success(try Self.open(parameters, epoch: epoch, events: events)) } catch {
                    outcome = .failure(error)
                }
                let handover = Handover(outcome)
                queue.async { [weak self] in
                    guard let self else {
                        // The router is gone: nothing waits for this close.
                        closer.async { if case let .success(opened) = handover.value { opened.close() } }
                        return
                    }
                    guard client == nil, send.value.0() else {
                        // Not wanted any more: closed off the control queue, as every close is.
                        if case let .success(opened) = handover.value {
                            _ = close(opened, keepingAlive: nil, waitSeconds: nil, closed: nil)
                        }
                        return
                    }
                    send.value.1(handover.value.map { ($0, epoch) })
                }
            }
        }
    }

    /// The router runs again on a new client: returns how long the server was away, in seconds.
    func noteReconnected() -> Double {
        let away = disconnectedSince.map { Date().timeIntervalSince($0) } ?? 0
        disconnectedSince = nil
        reconnects += 1
        return away
    }
}

/// Carries a value made on one queue to another that takes it over (a JACK client opened on the
/// connector queue, used only on the control queue from then on; closures that run only on the
/// control queue). Safe because the sender never touches the value after handing it over.
final class Handover<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

