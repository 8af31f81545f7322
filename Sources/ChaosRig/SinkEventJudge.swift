import Foundation

/// Judges what the sinks saw between checks: a non-finite sample is a violation; so is a step
/// between samples (or, on jackd, a whole cycle of silence amid sound) that nothing explains.
/// What explains one: a fault that stops the sound itself under way; a cycle the sink or the
/// router missed within two periods of it; the router's xrun count seen rising near it; and on
/// PipeWire a cycle its late graph gave a client (silent, or the one before played again), which
/// explains only a step at its seams, at the first sample of a cycle.
///
/// An explanation may reach the harness in a later read of the sinks than the step it explains
/// (a silent cycle is known only when sound comes back, a cycle after the step into it), so
/// explanations are kept for a few seconds, and events from the last moments before a read are
/// held back to the next. Harness thread only.
public struct SinkEventJudge: Sendable {
    /// Frames where a step says nothing of the router.
    struct Explanation: Sendable {
        var route: String?
        var frame: UInt32
        var frames: UInt32
        /// A late graph's cycle: it explains a step only at its start or its end.
        var seamOnly: Bool
        var seenAt: UInt64
    }

    /// What was excused and seen, counted.
    public struct Tally: Sendable, Equatable {
        public var stepsInFaults = 0
        public var stepsAtMissedCycles = 0
        public var stepsAtXruns = 0
        /// Cycles PipeWire's late graph gave a sink, once per cycle: silent, or played twice.
        public var lateSilentCycles = 0
        public var lateRepeatedCycles = 0
        public var lateGraphCycles: Int { lateSilentCycles + lateRepeatedCycles }
        /// Cycles a sink heard twice on jackd (their seams are judged as any other step).
        public var repeatedCycles = 0
    }

    public private(set) var tally = Tally()
    private var explanations: [Explanation] = []
    private var held: [(route: String, event: ToneSink.Event)] = []
    /// Events this recent are held to the next read; explanations are kept this long before the
    /// oldest event still to be judged.
    static let holdNanoseconds: UInt64 = 250_000_000
    static let keepNanoseconds: UInt64 = 5_000_000_000

    public init() {}

    /// Whether events wait for the next read.
    public var holding: Bool { !held.isEmpty }

    /// Judges the events read now (and those held from the last read); the violation, if one.
    /// - Parameters:
    ///   - routerGaps: the router's recent missed cycles (`/state` `recentGaps`).
    ///   - faults, xruns: stretches of the monotonic clock in which a step is excused.
    public mutating func judge(_ events: [(route: String, event: ToneSink.Event)], now: UInt64, period: UInt32, pipewire: Bool,
                               routerGaps: [(first: UInt32, frames: UInt32)], faults: [ClosedRange<UInt64>],
                               xruns: [ClosedRange<UInt64>]) -> String? {
        for (route, event) in events { learn(route, event, period: period, pipewire: pipewire) }
        // The router's gaps are known from when `/state` first lists them.
        for gap in routerGaps where !explanations.contains(where: { $0.route == nil && $0.frame == gap.first && $0.frames == gap.frames }) {
            explanations.append(Explanation(route: nil, frame: gap.first, frames: gap.frames, seamOnly: false, seenAt: now))
        }
        let all = held + events
        let waits = { (event: ToneSink.Event) in event.monotonicNanoseconds &+ Self.holdNanoseconds > now }
        held = all.filter { waits($0.event) }
        var violation: String?
        for (route, event) in all where !waits(event) {
            violation = verdict(route, event, period: period, pipewire: pipewire, faults: faults, xruns: xruns)
            if violation != nil { break }
        }
        // Old explanations go only after the events they may explain were judged: an event held
        // at one read is judged at the next, which may come long after (a step's settling).
        let oldest = held.map(\.event.monotonicNanoseconds).min() ?? now
        explanations.removeAll { oldest > $0.seenAt && oldest &- $0.seenAt > Self.keepNanoseconds }
        return violation
    }

    /// Keeps what an event explains.
    private mutating func learn(_ route: String, _ event: ToneSink.Event, period: UInt32, pipewire: Bool) {
        switch event.kind {
        case .gap:
            explanations.append(Explanation(route: route, frame: event.frameTime, frames: period, seamOnly: false,
                                            seenAt: event.monotonicNanoseconds))
        case .isolatedSilence where pipewire, .repeatedCycle where pipewire:
            // Both channels report the same cycle: it is counted once.
            guard !explanations.contains(where: { $0.seamOnly && $0.route == route && $0.frame == event.frameTime }) else { return }
            explanations.append(Explanation(route: route, frame: event.frameTime, frames: UInt32(event.size), seamOnly: true,
                                            seenAt: event.monotonicNanoseconds))
            if event.kind == .repeatedCycle { tally.lateRepeatedCycles += 1 } else { tally.lateSilentCycles += 1 }
        case .repeatedCycle:
            tally.repeatedCycles += 1
        case .step, .nonFinite, .isolatedSilence:
            break
        }
    }

    private mutating func verdict(_ route: String, _ event: ToneSink.Event, period: UInt32, pipewire: Bool,
                                  faults: [ClosedRange<UInt64>], xruns: [ClosedRange<UInt64>]) -> String? {
        switch event.kind {
        case .gap, .repeatedCycle:
            return nil
        case .nonFinite:
            return "\(route): \(event)"
        case .isolatedSilence, .step:
            let at = event.monotonicNanoseconds
            if faults.contains(where: { $0.contains(at) }) {
                tally.stepsInFaults += 1
                return nil
            }
            if event.kind == .isolatedSilence && pipewire { return nil }
            let explained = explanations.contains { reason in
                guard reason.route == nil || reason.route == route else { return false }
                if reason.seamOnly {
                    return event.kind == .step && event.offset == 0
                        && (event.frameTime == reason.frame || event.frameTime == reason.frame &+ reason.frames)
                }
                return event.frameTime &- reason.frame &+ 2 * period <= reason.frames &+ 4 * period
            }
            if explained {
                tally.stepsAtMissedCycles += 1
                return nil
            }
            if xruns.contains(where: { $0.contains(at) }) {
                tally.stepsAtXruns += 1
                return nil
            }
            return "\(route): \(event), with no fault, missed cycle or xrun to explain it"
        }
    }
}
