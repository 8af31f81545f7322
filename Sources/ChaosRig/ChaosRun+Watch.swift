import Foundation
import JackRig

/// What is watched all through the run, between checks: every sample the sinks heard (no NaN,
/// no click outside a fault that stops the sound itself) and the router's threads, descriptors
/// and memory.
extension ChaosRun {
    /// Reads the sinks' events since the last call; a non-finite sample, or a step that no fault,
    /// missed cycle or late graph explains, is a violation.
    func watchSound() {
        let events = stage.takeEvents()
        if stage.lostEvents > 0 {
            violate("the sinks lost \(stage.lostEvents) events to a full ring: what they saw cannot be judged")
            return
        }
        guard !events.isEmpty else { return }
        noteGaps(events)
        let seen = daemon.state().flatMap(ChaosObservation.init)
        noteXruns(seen)
        // Moments the router's xrun count was seen to rise: a step within 0.3 s of one (the
        // count is read every 50-100 ms) may be the xrun's.
        let xrunTimes = zip(xrunMarks, xrunMarks.dropFirst()).compactMap { a, b in b.count > a.count ? (a.at, b.at) : nil }
        let period = UInt32(stage.period)
        let pipewire = stage.implementation == "pipewire"
        // Frames near which a step says nothing of the router: a cycle a sink or the router
        // missed, or (on PipeWire) a whole cycle of silence its late graph gave.
        // A late graph's cycle explains only a step at a seam between cycles (where a buffer
        // played twice or a silent one meets the next), not one within a cycle.
        var near: [(route: String?, frame: UInt32, frames: UInt32, seamOnly: Bool)] = []
        for (route, event) in events {
            switch event.kind {
            case .gap: near.append((route, event.frameTime, period, false))
            case .isolatedSilence where pipewire, .repeatedCycle where pipewire:
                near.append((route, event.frameTime, UInt32(event.size), true))
                report.lateGraphCycles += 1
            case .repeatedCycle: report.repeatedCycles += 1
            default: break
            }
        }
        for gap in seen?.recentGaps ?? [] { near.append((nil, gap.first, gap.frames, false)) }
        for (route, event) in events {
            switch event.kind {
            case .gap, .repeatedCycle:
                continue
            case .nonFinite:
                violate("\(route): \(event)")
                return
            case .isolatedSilence, .step:
                if breaks.contains(where: { event.monotonicNanoseconds >= $0.from &- 100_000_000 && event.monotonicNanoseconds <= $0.to &+ 1_500_000_000 }) {
                    report.stepsInFaults += 1
                    continue
                }
                if event.kind == .isolatedSilence && pipewire { continue }
                let explained = near.contains { gap in
                    (gap.route == nil || gap.route == route) && (!gap.seamOnly || event.kind != .step || event.offset == 0)
                        && event.frameTime &- gap.frame &+ 2 * period <= gap.frames &+ 4 * period
                }
                if explained { report.stepsAtMissedCycles += 1; continue }
                let at = event.monotonicNanoseconds
                if xrunTimes.contains(where: { at &+ 300_000_000 >= $0.0 && at <= $0.1 &+ 300_000_000 }) {
                    report.stepsAtXruns += 1
                    continue
                }
                violate("\(route): \(event), with no fault, missed cycle or xrun to explain it")
                return
            }
        }
    }

    /// Counts the cycles the sinks missed and keeps the last few, for a violation's report.
    func noteGaps(_ events: [(route: String, event: ToneSink.Event)]) {
        for (route, event) in events where event.kind == .gap {
            report.sinkGaps += 1
            report.recentGaps.append(String(format: "%7.2f s  ", ChaosClock.seconds(since: started, at: event.monotonicNanoseconds)) + "\(route): \(event)")
        }
        if report.recentGaps.count > 24 { report.recentGaps.removeFirst(report.recentGaps.count - 24) }
    }

    /// Samples the router's resources; too many threads or descriptors is a violation.
    func watchResources() {
        guard let now = daemon.resources() else { return }
        report.resources.append(.init(at: elapsed, threads: now.threads, descriptors: now.descriptors, residentKB: now.residentKB,
                                      held: peers.stuckCount, pid: daemon.pid ?? 0))
        guard let baseline = report.baseline else { return }
        if now.threads > baseline.threads + 16 {
            violate("the router runs \(now.threads) threads (\(baseline.threads) at the start)")
        }
        // Connections are capped per listener (OSC 64 + 8, HTTP 64 + 8): a peer never holds more.
        if now.descriptors > baseline.descriptors + 200 {
            violate("the router holds \(now.descriptors) descriptors (\(baseline.descriptors) at the start) with \(peers.stuckCount) connections held")
        }
    }
}
