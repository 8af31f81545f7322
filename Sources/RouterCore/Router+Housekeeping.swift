import Dispatch
import Engine
import Foundation
import JackHost

/// The control queue's periodic housekeeping: what the audio thread handed back (cycle times,
/// meters, retired plans), due timed changes, fades followed and the state they leave published,
/// ports no plan reads any more unregistered, and the watch on the server (its shutdown flag, the
/// `CycleWatchdog`, xruns).
///
/// It runs every `housekeepingInterval` (10 ms) while it has work in the next few ticks, and every
/// `idleHousekeepingInterval` (1 s) otherwise, so that an idle router wakes once a second rather
/// than a hundred times. An idle tick only sends xrun notices (at most one a second anyway) and
/// runs the `CycleWatchdog` (2 s); a server that shuts the client down is seen at once
/// (`JackEvent.serverShutDown`), and readers of statistics collect them themselves. Anything that gives it work (a plan published or waiting, a timed
/// change) changes `publisher` or `timed`, whose observers bring the fast pace back at once; only
/// a tick goes back to the slow one. Control queue only.
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
        if let xruns = diagnostics.xrunsToNotify() {
            logger.notice("JACK xruns", metadata: ["new": "\(xruns.new)", "total": "\(xruns.total)"])
            onNotification(.xruns(total: xruns.total, new: xruns.new))
        }
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
        stallSuspected = watchdog.silence(cycles: statistics.cycles, lastCycleAt: statistics.lastCycleStart, now: now,
                                          threshold: stallReportThreshold) != nil
        guard let client = link.client else { return }
        engine.collectRetiredPlans()
        runDueChanges(now: client.frameTime)
        let fadeEnded = publisher.followAdoption(on: engine, periodFrames: bufferSize)
        if publisher.needsPublish || fadeEnded { republish() }
        removeRetiredPorts()
    }

    /// Cycle times and meters the audio thread has handed over: at every tick, and for a reader
    /// who should not wait for the next one (an idle tick is up to a second away).
    func collectFromEngine() {
        engine.collectProcessTimes()
        if link.client != nil { diagnostics.collectMeters(from: engine) }
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
