import Foundation
import JackRig

/// What is watched all through the run, between checks: every sample the sinks heard (no NaN,
/// no click outside a fault that stops the sound itself) and the router's threads, descriptors
/// and memory.
extension ChaosRun {
    /// Reads the sinks' events since the last call and judges them (`SinkEventJudge`): a
    /// non-finite sample, or a step that no fault, missed cycle, xrun or late graph explains, is
    /// a violation.
    func watchSound() {
        let events = stage.takeEvents()
        let read = ChaosClock.now
        if stage.lostEvents > 0 {
            violate("the sinks lost \(stage.lostEvents) events to a full ring: what they saw cannot be judged")
            return
        }
        guard !events.isEmpty || judge.holding else { return }
        noteGaps(events)
        let seen = daemon.state().flatMap(ChaosObservation.init)
        noteXruns(seen)
        // A fault that stops the sound excuses from a little before it starts until 1.5 s after
        // the router was back; a rise of the xrun count (read every 50-100 ms), 0.3 s either side.
        let faults = breaks.map { ($0.from &- 100_000_000)...($0.to &+ 1_500_000_000) }
        let xruns = zip(xrunMarks, xrunMarks.dropFirst()).compactMap { a, b in
            b.count > a.count ? (a.at &- 300_000_000)...(b.at &+ 300_000_000) : nil
        }
        let violation = judge.judge(events, now: read, period: UInt32(stage.period), pipewire: stage.implementation == "pipewire",
                                    routerGaps: seen?.recentGaps ?? [], faults: faults, xruns: xruns)
        report.excused = judge.tally
        if let violation { violate(violation) }
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
