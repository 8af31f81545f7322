import Dispatch
import Engine
import Foundation
import JackHost

/// The router's side of the JACK link: putting the control plane on a client (attach), taking it
/// off (detach, loss), joining the server again, and following what JACK reports (ports coming
/// and going, period and rate changes, xruns); the control queue's periodic housekeeping is in
/// Router+Housekeeping.swift.
///
/// Owns no state of its own: it moves events from `JackLink` and the engine into the inventory,
/// the patchbay, the policy and the publisher. Control queue only.
extension Router {
    /// JACK events reach the control queue tagged with the epoch of the client that sent them.
    func eventSink() -> JackLink.EventSink {
        // Only the queue is held on JACK's thread: the router is reached on the queue, so its last
        // reference never goes (and it never stops) on JACK's own callback thread.
        { [weak self, queue] event, epoch in
            queue.async { [weak self] in self?.handle(event, epoch: epoch) }
        }
    }

    /// Puts the router on a newly opened client: registers every port (the session's and those of
    /// apps registered at run time), points the engine at them, publishes the mix before the first
    /// cycle, activates, and makes every route, input and patchbay connection. On failure the
    /// client is closed and nothing of it is kept.
    func attach(_ opened: JackClient, epoch: Int, selectedRoute: String? = nil) throws(RouterError) {
        link.adopt(opened, epoch: epoch)
        // A server still running the router's cycles is slow, not hung: its answers are waited for longer.
        opened.serverProgress = { [engine] in engine.statistics.cycles }
        lateAnswersSeen = opened.lateAnswers
        clientName = opened.name
        resolvedServerName = opened.serverName
        patchbay.reset()
        do {
            let recording = Set(policy.state.apps.filter { $0.configuration.category.recordsInput }.map(\.name))
            try inventory.registerAll(on: opened, recordingApps: recording)
            engine.setFrameClock(JackClient.cycleStartFrame, argument: opened.rawHandle)
            sampleRate = opened.sampleRate
            bufferSize = opened.bufferSize
            engine.setProcessTimeWindow(cycles: UInt64(10 * sampleRate / max(bufferSize, 1)))
            try opened.setProcessCallback(engineProcessCallback, argument: engine.processArgument)
            // Routes whose device is not there (yet) start unavailable (docs/POLICY.md §5.9);
            // those that are there are taken at once.
            updateRoutePresence(settlingNew: false)
            if let route = selectedRoute {
                if policy.state.availableRoutes.contains(route) {
                    _ = try? performOnQueue([Change(.selectRoute(route))])
                } else {
                    logger.notice("the route selected when the router last ran is not available now", metadata: ["route": "\(route)"])
                }
            }
            guard case .published = try publisher.publish(matrix(), on: engine) else {
                throw RouterError.capacity("the audio thread's plan queue is full before activation")
            }
            afterPublishing()
            willActivate?()
            try opened.activate()
        } catch {
            // The client first (deactivated and closed: its process thread joined), then the
            // plans: jack_activate can fail after JACK started that thread. A client the server
            // does not answer closes later: its plans go then, and the link joins again only
            // after that (JackLink.scheduleReconnect waits for the close).
            link.drop(keepingAlive: engine) { [weak self] in
                guard let self, !stopped else { return }
                detach()
            }
            throw RouterError(error)
        }
        watchdog.arm(cycles: engine.statistics.cycles, now: Engine.monotonicNow)
        reportNetManager(link.startNetManager())
        makeConnections(on: opened)
        // JACK tells an inactive client of no port: a device that came between the look above
        // and the activation is found here (and settles, as a device that just came does).
        updateRoutePresence()
        refreshRouteLatencies()
        // The level timer stops while no server runs the client.
        wakeLevelWatching()
    }

    /// Says what became of netjack2's master side on this server (remote routes need it).
    private func reportNetManager(_ outcome: JackClient.InternalClientOutcome?) {
        guard let outcome, let netManager = link.parameters.netManager else { return }
        let routes = netManager.routes.joined(separator: ", ")
        switch outcome {
        case .loaded:
            logger.notice("netjack2: loaded netmanager into the JACK server; far ends join it for routes \(routes)",
                          metadata: ["arguments": "\(netManager.arguments)"])
        case .alreadyRunning:
            logger.notice("netjack2: the JACK server already runs a netmanager; far ends join it (its own address and port) for routes \(routes)")
        case let .failed(status):
            let why = JackLibrary.loaded == .pipewire
                ? "PipeWire's JACK has no internal clients: run the far ends' netjack2 against jackd, or give the route the ports of the bridge you use"
                : "is jackd2's netmanager plug-in installed (jackd2)?"
            logger.error("netjack2: the JACK server could not load netmanager (\(status)); routes \(routes) stay unavailable: \(why)")
        }
    }

    /// Forgets the client's ports (they died with it), the engine's plans that point at them and
    /// the mix cells on them. Slots, gains and the policy stay. Only when no process cycle can run.
    func detach() {
        inventory.forgetPorts()
        // A route settling on the lost server is looked at afresh on the next one.
        for index in inventory.routes.indices { inventory.routes[index].settlesAt = nil }
        publisher.forgetCells()
        engine.discardPlans(fadeInFrames: rampFrames)
    }

    /// The server shut the client down (jackd stopped or crashed). JACK's notification only flags
    /// it and wakes the client's shutdown queue, which sends `.serverShutDown` here (housekeeping
    /// looks at the flag too); here the client is given up, the router keeps every setting and
    /// keeps answering, and tries to join the server again with backoff.
    func serverLost(_ reason: String) {
        giveUpServer(reason, "the JACK server went away: \(reason)", backOff: false)
    }

    /// The server ran no cycle of the client for the watchdog's time while it was active: it hangs,
    /// or it went away without calling either shutdown callback. The same as a loss; a client
    /// given up that never ran a cycle keeps the waits between attempts growing.
    func serverStalled(quiet: Double) {
        let reason = String(format: "no process cycle for %.1f s", quiet)
        giveUpServer(reason, "the JACK server stopped running the router's cycles (\(reason)): giving this client up",
                     backOff: !watchdog.sawCycle)
    }

    /// Every route, input and source connection the router makes (each a request to the server;
    /// one that exists already is left as it is), and the latencies it reports: on a new client,
    /// and again once a server that did not answer in time answers.
    func makeConnections(on client: JackClient) {
        patchbay.connectRoutes(inventory.routes, on: client)
        patchbay.connectInputs(inventory.input, on: client)
        for app in inventory.apps { patchbay.connectSources(of: app, on: client) }
        updateLatencies(recompute: true)
    }

    /// Runs `body` (a change, on the control queue); when it fails because the server did not
    /// answer in time (`JackError.serverNotAnswering`: a request waited `answerSeconds`) and no
    /// cycle has run for the stall report's time either, the server is hung: it is given up now,
    /// as the watchdog would a moment later, and `body` runs once more without it (an app
    /// registered gets its ports when the router joins the server again). A server that still
    /// runs cycles is not given up for a slow answer: the change is refused.
    func givingUpHungServer<T>(_ body: () throws(RouterError) -> T) throws(RouterError) -> T {
        do throws(RouterError) { return try body() } catch {
            guard case .jack(.serverNotAnswering) = error, link.client != nil, watchdog.timeout > 0 else { throw error }
            let statistics = engine.statistics
            guard let quiet = watchdog.silence(cycles: statistics.cycles, lastCycleAt: statistics.lastCycleStart,
                                               now: Engine.monotonicNow, threshold: stallReportThreshold) else { throw error }
            let reason = String(format: "no answer and no process cycle for %.1f s", quiet)
            giveUpServer(reason, "the JACK server stopped answering and running the router's cycles (\(reason)): giving this client up",
                         backOff: !watchdog.sawCycle)
            return try body()
        }
    }

    /// Gives the client up: it is closed off the control queue (a hung server may never answer
    /// the close, and the control queue must keep answering); once it is closed, its ports and
    /// plans are forgotten and joining the server again starts. Meanwhile everyone is told, and
    /// timed changes apply now.
    private func giveUpServer(_ reason: String, _ message: String, backOff: Bool) {
        guard !stopped, link.client != nil else { return }
        link.abandon(keepingAlive: engine, backOff: backOff) { [weak self] in
            guard let self, !stopped else { return }
            detach()
            scheduleReconnect()
        }
        watchdog.disarm()
        onJackConnection(false)
        logger.error("\(message); keeping the state and waiting for the server", metadata: ["server": "\(resolvedServerName)"])
        // Bundles timed on the lost server's frame clock cannot be placed on the next one.
        for entry in timed.takeAll() {
            do throws(RouterError) { entry.completion(.success(try performOnQueue(entry.changes))) } catch { entry.completion(.failure(error)) }
        }
        tell(.jack(connected: false, reason: reason))
        onServerLost(reason)
    }

    private func scheduleReconnect() {
        guard !stopped else { return }
        link.scheduleReconnect(events: eventSink(), stillWanted: { [weak self] in self.map { !$0.stopped } ?? false }) { [weak self] outcome in
            self?.reconnected(outcome)
        }
    }

    private func reconnected(_ outcome: Result<(client: JackClient, epoch: Int), JackError>) {
        switch outcome {
        case let .failure(error):
            if link.attempts == 1 || link.attempts % 30 == 0 {
                logger.notice("JACK server still away: \(error)", metadata: ["attempts": "\(link.attempts)"])
            }
            scheduleReconnect()
        case let .success(opened):
            do throws(RouterError) {
                try attach(opened.client, epoch: opened.epoch)
            } catch {
                logger.error("joined the JACK server again but could not start on it: \(error); trying again")
                scheduleReconnect()
                return
            }
            let away = String(format: "%.1f", link.noteReconnected())
            logger.notice("running again on the JACK server", metadata: [
                "server": "\(resolvedServerName)", "away": "\(away) s",
                "rate": "\(sampleRate)", "period": "\(bufferSize)", "apps": "\(inventory.apps.count)"])
            tell(.jack(connected: true, reason: "reconnected after \(away) s"))
            onJackConnection(true)
            retryAdditions()
            // A server lost between the open and the attach woke the queue for an epoch not yet
            // current: its flag is read here rather than at the next tick.
            if let reason = opened.client.shutdownReason { serverLost(reason) }
        }
    }

    func handle(_ event: JackEvent, epoch: Int) {
        // Events of a client closed since (the server went away) are stale.
        guard !stopped, link.isCurrent(epoch: epoch), let client = link.client else { return }
        // A server shutting down unregisters its devices' ports first; those are not devices
        // going away, so a loss the shutdown callback has flagged is taken before any event.
        if let reason = client.shutdownReason {
            serverLost(reason)
            return
        }
        switch event {
        case let .portRegistered(name):
            if name.hasPrefix(client.name + ":") { return }
            patchbay.portRegistered(name)
            // Connected first, and the route taken only once the connections carry audio.
            if inventory.routes.contains(where: { $0.destinations.contains(name) }) {
                patchbay.connectRoutes(inventory.routes, on: client, onlyPort: name)
                letRoutesSettle(port: name, epoch: epoch)
            }
            updateRoutePresence(port: name)
            if inventory.input.sources.contains(name) { patchbay.connectInputs(inventory.input, on: client, onlyPort: name) }
            for app in inventory.apps where app.connect.contains(where: { $0.matches(name) }) {
                patchbay.connectSources(of: app, on: client)
            }
        case let .portUnregistered(name):
            if name.hasPrefix(client.name + ":") { return }
            // When JACK could not name the port, every route is checked again a little later.
            if name.isEmpty {
                queue.asyncAfter(deadline: .now() + .milliseconds(50)) { [weak self] in
                    guard let self, !stopped, link.isCurrent(epoch: epoch) else { return }
                    updateRoutePresence()
                }
            } else {
                patchbay.portUnregistered(name)
            }
            updateRoutePresence()
        case let .sampleRateChanged(rate):
            guard rate != sampleRate else { return }
            logger.info("JACK sample rate changed", metadata: ["from": "\(sampleRate)", "to": "\(rate)"])
            sampleRate = rate
            republish()
            // Look-ahead and far ends are in milliseconds: other frame counts now.
            updateLatencies(recompute: true)
            refreshRouteLatencies()
        case let .portsConnected(source, destination):
            // Someone connected to an exclusive app: only its own sources stay.
            for app in inventory.apps where app.exclusive && app.ports.contains(where: { $0.name == destination }) {
                patchbay.connectSources(of: app, on: client)
            }
            refreshRouteLatencies(port: source)
        case let .portsDisconnected(source, _):
            refreshRouteLatencies(port: source)
        case .latenciesChanged:
            refreshRouteLatencies()
        case .serverShutDown:
            // Taken above, from the flag the callback set before it woke this.
            return
        }
    }

    /// Works out again how long until what a route's ports carry is heard (`RouteState.latencyFrames`,
    /// shown in `/state`): the playback latency of what they feed, as JACK has it, plus a bridge's
    /// far end. On the graph's events (a route port connected or disconnected, JACK's latencies
    /// worked out again, a new client), not on every status: reading the graph may wait for a
    /// pending graph change. `port`: only the route with that port of the router's.
    func refreshRouteLatencies(port: String? = nil) {
        guard let client = link.client else { return }
        for index in inventory.routes.indices {
            let route = inventory.routes[index]
            if let port, !route.ports.contains(where: { $0.name == port }) { continue }
            guard !route.ports.isEmpty else {
                inventory.routes[index].latencyFrames = nil
                continue
            }
            let beyond = route.beyondFrames(sampleRate: sampleRate)
            let ranges = route.ports.map { client.downstreamPlaybackLatency(of: $0) }
            let low = ranges.map(\.lowerBound).min()!, high = ranges.map(\.upperBound).max()!
            let (sumLow, overLow) = low.addingReportingOverflow(beyond), (sumHigh, overHigh) = high.addingReportingOverflow(beyond)
            inventory.routes[index].latencyFrames = (overLow ? .max : sumLow)...(overHigh ? .max : sumHigh)
        }
    }

    /// Follows the JACK graph: a route is present while all its destination ports exist. When
    /// that changes (a device's ports appeared or vanished, or a remote route's far end began or
    /// stopped answering) the policy hears that the route became available or unavailable
    /// (docs/POLICY.md §5.9): last in wins, private routes stop what played through them.
    /// `port`: only routes with that destination; nil: every route.
    ///
    /// A route whose ports are there before JACK's word of them has reached the control queue
    /// (JACK updates the graph first, and tells clients on a thread of its own) settles from now,
    /// as if that word had come: taken at once, a device plugged later would win over one that
    /// came first and is still settling. `settlingNew: false` takes such routes at once (the
    /// look at the graph as the router joins it).
    func updateRoutePresence(port: String? = nil, settlingNew: Bool = true) {
        // While the server is away nothing is known of the graph: routes stay as they were.
        guard let client = link.client else { return }
        let presence = patchbay.routePresence(inventory.routes, on: client)
        let now = DispatchTime.now().uptimeNanoseconds
        for (index, present) in presence.enumerated() where port.map(inventory.routes[index].destinations.contains) ?? true {
            if present, !inventory.routes[index].present {
                if let settles = inventory.routes[index].settlesAt, now < settles { continue }
                if settlingNew, inventory.routes[index].settlesAt == nil {
                    letRouteSettle(index)
                    continue
                }
            }
            inventory.routes[index].settlesAt = nil
            inventory.routes[index].present = present
            let name = inventory.routes[index].name
            let available = inventory.routes[index].reachable && inventory.routes[index].enabled
            guard available != policy.state.availableRoutes.contains(name) else { continue }
            logger.info(!present ? "a route's device is missing" : inventory.routes[index].reachable ? "a route's device is there" : "a remote route's far end does not answer",
                        metadata: ["route": "\(name)"])
            do throws(RouterError) {
                _ = try performOnQueue([Change(.setRouteAvailable(route: name, available))], fromGraph: true)
            } catch {
                logger.error("could not update the availability of route '\(name)': \(error)")
            }
        }
    }

    /// A device's ports exist before its client runs, and a connection made to them may carry
    /// audio only a cycle or two later (PipeWire makes a link live after `jack_connect` has
    /// returned): moved there at once, the first milliseconds of the fade in would be lost, and
    /// the route would start with a step. So a route whose destination port just appeared is
    /// taken as present after `routeSettleTime` (3 periods, at least 30 ms), looked at again then.
    private func letRoutesSettle(port: String, epoch: Int) {
        let settle = routeSettleTime
        let settlesAt = DispatchTime.now().uptimeNanoseconds + UInt64(settle * 1e9)
        for index in inventory.routes.indices where inventory.routes[index].destinations.contains(port) && !inventory.routes[index].present {
            inventory.routes[index].settlesAt = settlesAt
        }
        lookAgain(after: settle, epoch: epoch)
    }

    /// One route settles from now (`updateRoutePresence`); its ports are connected now, as they
    /// would be on JACK's word of them.
    private func letRouteSettle(_ index: Int) {
        if let client = link.client { patchbay.connectRoutes([inventory.routes[index]], on: client) }
        let settle = routeSettleTime
        inventory.routes[index].settlesAt = DispatchTime.now().uptimeNanoseconds + UInt64(settle * 1e9)
        lookAgain(after: settle, epoch: link.currentEpoch)
    }

    /// Looks at every route's presence again once `seconds` have gone, on the same client.
    private func lookAgain(after seconds: Double, epoch: Int) {
        queue.asyncAfter(deadline: .now() + seconds) { [weak self] in
            guard let self, !stopped, link.isCurrent(epoch: epoch) else { return }
            updateRoutePresence()
        }
    }

    /// How long a route whose device appeared waits before audio moves there (`letRoutesSettle`).
    var routeSettleTime: Double { max(3 * periodSeconds, 0.030) }

    /// Tells JACK (through the client's latency callback) that look-ahead routes carry some inputs
    /// (the voices) that many frames late, so latency-aware recorders know, and that a bridged
    /// route's far end adds its `remote.latency` after the sender's ports (which report none).
    /// Only with a look-ahead or a zita-njbridge route (`reportsLatency`). Called whenever the router's
    /// ports change; a port leaves the plan before it is unregistered.
    ///
    /// JACK is asked to recompute only with `recompute` (a new client): a server round trip that
    /// calls every client, far too slow to make for every app that comes or goes (ports being
    /// connected make JACK recompute anyway).
    func updateLatencies(leavingOut gone: Set<JackPort> = [], recompute: Bool = false) {
        guard let client = link.client, link.parameters.reportsLatency else { return }
        let added = UInt32(lookaheadFrames)
        let inputs = inventory.allInputPorts.filter { !gone.contains($0) }
        var outputs = inventory.routes.flatMap { route in route.ports.map { (port: $0, added: route.lookahead > 0 ? added : 0) } }
        outputs += inventory.allCapturePorts.filter { !gone.contains($0) }.map { (port: $0, added: UInt32(0)) }
        var beyond: [JackPort: UInt32] = [:]
        for route in inventory.routes where route.beyondMs > 0 {
            for port in route.ports { beyond[port] = route.beyondFrames(sampleRate: sampleRate) }
        }
        client.setLatencies(inputs: inputs, outputs: outputs, beyond: beyond, recompute: recompute)
    }
}
