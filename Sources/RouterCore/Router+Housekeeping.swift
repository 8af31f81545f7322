import Dispatch
import Engine
import Foundation
import JackHost

/// The control queue's periodic housekeeping: what the audio thread handed back (cycle times,
/// meters, retired plans), due timed changes, fades followed and the state they leave published,
/// ports no plan reads any more unregistered, a failed state save tried again, and the watch on
/// the server (its shutdown flag, the `CycleWatchdog`, xruns).
///
/// It runs every `housekeepingInterval` (10 ms) while it has work in the next few ticks, and every
/// `idleHousekeepingInterval` (1 s) otherwise, so that an idle router wakes once a second rather
/// than a hundred times. An idle tick only takes the xruns and the period JACK reported (its
/// callbacks may run on the process thread, so they only count; `status()` takes them too), sends
/// the xrun notice (at most one a second) and runs the `CycleWatchdog` (which counts from the last cycle,
/// and keeps the ticks fast once cycles stop); a server that shuts the client down is seen at
/// once (`JackEvent.serverShutDown`), readers of statistics and meters collect them themselves,
/// and the engine's meter, timing and gap rings hold more than an idle second. Anything that gives
/// it work (a plan published or waiting, a timed change) changes `publisher` or `timed`, whose
/// observers bring the fast pace back at once; only a tick goes back to the slow one. Control
/// queue only.
extension Router {
    func startHousekeeping() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [weak self] in self?.housekeeping() }
        self.timer = timer
        schedule(timer, busy: true)
        timer.resume()
    }

    /// The next tick one interval of the pace from now, and every interval after.
    private func schedule(_ timer: DispatchSourceTimer, busy: Bool) {
        housekeepingBusy = busy
        let interval = busy ? housekeepingInterval : idleHousekeepingInterval
        timer.schedule(deadline: .now() + interval, repeating: interval,
                       leeway: busy ? .nanoseconds(0) : .milliseconds(50))
    }

    /// Whether housekeeping runs at its idle pace now (for tests and diagnostics).
    public var housekeepingIsIdle: Bool { queue.sync { !housekeepingBusy } }

    /// Whether housekeeping has work in its next few ticks: a plan waiting, or published and not
    /// yet adopted; fades to follow; timed changes; apps whose ports wait to be unregistered; a
    /// server that has run no cycle for a while (the watchdog's time runs out between two ticks).
    /// Nothing while no server runs the client (only the watch on the server is left to do).
    var housekeepingHasWork: Bool {
        guard link.client != nil else { return false }
        return publisher.needsPublish || publisher.isFading || !timed.isEmpty || inventory.isRetiring
            || engine.adoptedPlanGeneration < publisher.publishedGeneration || stallSuspected
    }

    /// Sets the pace from `housekeepingHasWork`: fast at once when there is work (the next tick
    /// within `housekeepingInterval`, as before any pause), slow when there is none, which only a
    /// tick decides (`fromTick`), so a change made between two ticks is never left waiting.
    func paceHousekeeping(fromTick: Bool = false) {
        guard let timer, !stopped else { return }
        let busy = housekeepingHasWork
        guard busy != housekeepingBusy, busy || fromTick else { return }
        schedule(timer, busy: busy)
    }

    /// Every housekeeping interval: statistics and meters in, due timed changes and finished fades
    /// out, coalesced state published, ports no plan reads any more unregistered.
    private func housekeeping() {
        guard !stopped else { return }
        defer { paceHousekeeping(fromTick: true) }
        collectFromEngine()
        if let client = link.client { takeCycleNotes(client) }
        notifyXruns()
        timeline.flushXruns()
        // JACK's shutdown callback only raises a flag (it may run on the process thread).
        if let reason = link.client?.shutdownReason { serverLost(reason) }
        // Some servers say nothing (a hung one; PipeWire without either callback): no cycle for
        // the watchdog's time is taken as a loss too. While no cycle has run for a while, the
        // ticks are fast, so the loss is taken on time.
        let statistics = engine.statistics
        let now = Engine.monotonicNow
        if let quiet = watchdog.check(cycles: statistics.cycles, lastCycleAt: statistics.lastCycleStart, now: now, period: periodSeconds) {
            serverStalled(quiet: quiet)
        }
        stallSuspected = watchdog.timeout > 0
            && watchdog.silence(cycles: statistics.cycles, lastCycleAt: statistics.lastCycleStart, now: now,
                                threshold: stallSuspicionThreshold) != nil
        retryFailedSave()
        guard let client = link.client else { return }
        followServerAnswers(client)
        engine.collectRetiredPlans()
        runDueChanges(now: client.frameTime)
        let fadeEnded = publisher.followAdoption(on: engine, periodFrames: bufferSize)
        if publisher.needsPublish || fadeEnded { republish() }
        removeRetiredPorts()
    }

    /// After a request the server answered late (it was slow or frozen past the deadline, and
    /// requests were refused meanwhile): the ports it left are put right, recording apps get the
    /// capture outputs refused meanwhile, and what attach makes (route, input and source
    /// connections, latencies) is made again, since connections asked for meanwhile were
    /// refused. Pretty names refused meanwhile stay unset.
    func followServerAnswers(_ client: JackClient) {
        client.settlePending()
        let late = client.lateAnswers
        guard late != lateAnswersSeen, client.unansweredRequest == nil else { return }
        lateAnswersSeen = late
        logger.notice("the JACK server answers again after a request waited past its deadline; making the router's ports and connections again")
        makeMissingCapturePorts(on: client)
        makeConnections(on: client)
    }

    /// Gives every recording app the capture outputs it lacks (refused while the server did not
    /// answer), and has the plan that feeds them published with this tick.
    func makeMissingCapturePorts(on client: JackClient) {
        for app in policy.state.apps where app.configuration.category.recordsInput {
            guard let index = inventory.appIndex(app.name), inventory.apps[index].capturePorts.isEmpty else { continue }
            do {
                try inventory.addCapturePorts(toApp: index, on: client)
            } catch {
                logger.error("'\(app.name)' gets no capture ports: \(error)")
                continue
            }
            if !inventory.apps[index].capturePorts.isEmpty { publisher.needsPublish = true }
        }
    }

    /// How long without a cycle before the ticks go fast: `stallReportThreshold`, or earlier when
    /// the watchdog's time would otherwise run out before the next idle tick (a short
    /// `watchdogSeconds`, a long period); never under 0.1 s.
    var stallSuspicionThreshold: Double {
        let limit = max(watchdog.timeout, 4 * periodSeconds)
        return max(min(stallReportThreshold, limit - idleHousekeepingInterval.seconds - 0.05), 0.1)
    }

    /// The xruns and the period JACK reported since the last tick: its callbacks may run on the
    /// process thread, so they only count and store (JackHost's `CycleNotes`), and are read here.
    func takeCycleNotes(_ client: JackClient) {
        diagnostics.countXruns(client.takeXruns())
        if let frames = client.takeBufferSize(), frames != bufferSize {
            logger.info("JACK period changed", metadata: ["from": "\(bufferSize)", "to": "\(frames)"])
            bufferSize = frames
            engine.setProcessTimeWindow(cycles: UInt64(10 * sampleRate / max(bufferSize, 1)))
            republish()
        }
    }

    /// New xruns to subscribers and the log, at most once a second (`Diagnostics`).
    func notifyXruns() {
        guard let xruns = diagnostics.xrunsToNotify() else { return }
        logger.notice("JACK xruns", metadata: ["new": "\(xruns.new)", "total": "\(xruns.total)"])
        tell(.xruns(total: xruns.total, new: xruns.new))
    }

    /// Cycle times and meters the audio thread has handed over: at every tick, and for a reader
    /// who should not wait for the next one (an idle tick is up to a second away).
    func collectFromEngine() {
        engine.collectProcessTimes()
        peakBoard.collect()
    }

    /// Unregisters the ports of removed apps once no plan the audio thread may use reads them.
    private func removeRetiredPorts() {
        guard let client = link.client else { return }
        let gone = inventory.takeRetired(adopted: engine.adoptedPlanGeneration)
        guard !gone.isEmpty else { return }
        updateLatencies(leavingOut: Set(gone))
        for port in gone { client.unregister(port) }
    }
}

extension DispatchTimeInterval {
    /// The interval in seconds (`.never`: infinity).
    var seconds: Double {
        switch self {
        case let .seconds(value): Double(value)
        case let .milliseconds(value): Double(value) / 1e3
        case let .microseconds(value): Double(value) / 1e6
        case let .nanoseconds(value): Double(value) / 1e9
        case .never: .infinity
        @unknown default: .infinity
        }
    }
}
