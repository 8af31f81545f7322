import Loudness
import Policy

/// The loop behind loudness-targeted ducks (issue 19; docs/POLICY.md, "Ducking by loudness"):
/// from what the loudness worker measured, how deep each duck must be for the ducked app to sound
/// its rule's `target` LU under the ducker.
///
/// Both apps are measured at their inputs, before any gain, with their volumes added: the ducker
/// as it is heard (`L_ducker + volume`), the ducked app as it would be heard undducked
/// (`L_ducked + volume`). The duck is their difference less the target, between the rule's floor
/// and 0 dB. Measuring inputs, not the route, keeps it a feed-forward step: the duck changes
/// nothing it measures, so it cannot oscillate.
///
/// - The ducker over what it played since the duck began: the last 400 ms at first, growing to
///   3 s (short-term); until it has played 400 ms, the rule's `level` holds.
/// - The ducked app over its last 3 s (or all its meter has heard, from 400 ms).
/// - While the ducker is silent (its last 400 ms under its signal threshold), the duck goes no
///   deeper: a pause between sentences does not push the bed down.
/// - A depth moves only when it is 0.5 dB or more from the one in force; each move ramps at the
///   rule's attack (deeper) or release (back up), so the gain never steps and never pumps faster
///   than the release. The readings themselves move in 100 ms blocks over 0.4-3 s windows.
///
/// Pure: readings in, depths out; the router runs it every 100 ms on the control queue.
struct LoudnessDucker {
    /// What the loop worked out for one pair: for `/state`'s "why".
    struct Estimate: Equatable {
        /// The ducker as heard (its loudness plus its volume), LUFS; nil until measured.
        var ducker: Double?
        /// The ducked app as it would be heard undducked, LUFS; nil until measured.
        var ducked: Double?
        /// The depth the loop aims at now, dB (nil until both are measured).
        var wanted: Double?
        /// The ducker's last 400 ms are under its signal threshold: the duck holds.
        var duckerSilent = false
    }

    /// Depths closer than this to the one in force are left alone.
    static let deadband = 0.5
    /// The ducker must have played this many 100 ms blocks since the duck began.
    static let firstBlocks = 4
    static let shortTermBlocks = 30

    /// The ducker's blocks heard when each pair's duck began.
    private var onsets: [DuckPair: Int] = [:]
    private(set) var estimates: [DuckPair: Estimate] = [:]

    /// Forgets every pair not in force: called on every change, so a duck that ended while the
    /// loop was not running (its timer stops with the last duck) starts afresh the next time.
    mutating func keep(only inForce: Set<DuckPair>) {
        onsets = onsets.filter { inForce.contains($0.key) }
        estimates = estimates.filter { inForce.contains($0.key) }
    }

    /// One pass: the depths to change (dB, by pair), for the ducks in force now.
    /// - Parameters:
    ///   - reading: an app's latest loudness reading (nil: not metered).
    ///   - volume: an app's volume, dB.
    ///   - threshold: an app's signal threshold (dBFS, taken as LUFS).
    mutating func step(_ ducks: [LoudnessDuck], reading: (String) -> LoudnessWorker.Reading?,
                       volume: (String) -> Double, threshold: (String) -> Double) -> [DuckPair: Double] {
        var changes: [DuckPair: Double] = [:]
        keep(only: Set(ducks.map(\.pair)))
        for duck in ducks {
            guard let target = duck.rule.target, let ducker = reading(duck.pair.ducker) else {
                // Not metered now (its meter starts afresh): nothing measured stands.
                estimates[duck.pair] = nil
                onsets[duck.pair] = nil
                continue
            }
            let onset = min(onsets[duck.pair] ?? ducker.blocksHeard, ducker.blocksHeard)
            onsets[duck.pair] = onset
            var estimate = Estimate()
            let played = min(ducker.blocksHeard - onset, Self.shortTermBlocks)
            let silent = (ducker.loudness(ofLast: Self.firstBlocks) ?? -.infinity) < threshold(duck.pair.ducker)
            estimate.duckerSilent = silent
            if played >= Self.firstBlocks, let loudness = ducker.loudness(ofLast: played) {
                estimate.ducker = loudness + volume(duck.pair.ducker)
            }
            if let ducked = reading(duck.pair.ducked), ducked.blocksHeard >= Self.firstBlocks,
               let loudness = ducked.loudness(ofLast: min(ducked.blocksHeard, Self.shortTermBlocks)) {
                estimate.ducked = loudness + volume(duck.pair.ducked)
            }
            // A ducker turned all the way down is heard by no one: its duck holds.
            if let heard = estimate.ducker, heard.isFinite, let bed = estimate.ducked, bed.isFinite {
                var wanted = min(0, max(duck.rule.floor, heard - target - bed))
                if silent { wanted = max(wanted, duck.decibels) }
                estimate.wanted = wanted
                if abs(wanted - duck.decibels) >= Self.deadband { changes[duck.pair] = (wanted * 10).rounded() / 10 }
            }
            estimates[duck.pair] = estimate
        }
        return changes
    }
}
