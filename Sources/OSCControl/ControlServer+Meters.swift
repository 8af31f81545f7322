import Foundation
import Logging
import OSCTransport
import Policy
import RouterCore

/// Meters for subscribers (OSC `/meters`, and WebSockets listening to meter paths): the peaks the
/// router gathered, in bundles at each subscriber's rate; the ticks and readings level subscribers
/// share (ControlServer+Levels.swift). OSC server thread only.
extension ControlServer {
    /// On a tick (on the 10 ms grid) at which a subscriber is due, the peaks since the last such tick
    /// are taken from the router, once for every subscriber; each due subscriber gets one bundle
    /// with the peaks since its previous one, in dBFS (OSC `/meters` subscribers as
    /// `/duckrouter/meter` messages, a WebSocket that LISTENs to meter paths as messages of those
    /// paths, only its own). Subscribers are due on a grid of their rate (at 20 Hz, every 50 ms
    /// of the clock), so those at one rate are due at the same tick and share one reading and
    /// one merge of peaks (plain `/meters` subscribers also their bytes; a WebSocket listening to
    /// meter paths gets its own bundle of those).
    /// Meter, level and loudness subscribers are what the ticks are for: the OSC thread wakes for a
    /// tick only when one is due (at 20 Hz, 20 times a second), and with none it sleeps until a packet
    /// comes (issue 21: an idle router costs next to nothing). A tick when the last subscriber has
    /// gone clears the history.
    var nextTickWanted: Double? {
        var next = meterTargets.isEmpty && levelTargets.isEmpty && !meterHistory.isEmpty ? 0 : Double.infinity
        for target in meterTargets { next = min(next, target.nextMeter) }
        for target in levelTargets { next = min(next, target.nextMeter) }
        for target in loudnessTargets { next = min(next, target.nextMeter) }
        if let due = refusals.due { next = min(next, due) }
        return next.isFinite ? next : nil
    }

    func tick() {
        flushRefusals(now: OSCServer.clockSeconds())
        if !loudnessTargets.isEmpty { tickLoudness() }
        guard !meterTargets.isEmpty || !levelTargets.isEmpty else {
            meterHistory.removeAll()
            return
        }
        let now = OSCServer.clockSeconds()
        guard meterTargets.contains(where: { now >= $0.nextMeter }) || levelTargets.contains(where: { now >= $0.nextMeter }) else { return }
        let latest = router.takePeaks()
        meterHistory.append((now, latest))
        tickLevels(now: now)
        var dropped: [Target] = []
        // Subscribers due together whose last bundles went together share their peaks.
        var merged: [Double: (peaks: [String: [Float]], plain: [UInt8]?)] = [:]
        for target in meterTargets where now >= target.nextMeter {
            let since = target.lastMeter
            target.nextMeter = Self.nextMeterTime(after: now, rate: target.meterRate)
            target.lastMeter = now
            var group = merged[since] ?? (Self.peaks(in: meterHistory, after: since), nil)
            let levels = { [peaks = group.peaks] (meter: PeakMeter) in
                ((peaks.isEmpty ? nil : peaks["\(meter.kind.rawValue)/\(meter.name)"]) ?? meter.peaks)
                    .map { max(Decibels.level($0), Decibels.floor) }
            }
            let bytes: [UInt8]
            if let paths = target.meterPaths {
                let messages = latest.compactMap { meter -> OSCMessage? in
                    let path = "/\(meter.kind.rawValue)/\(meter.name)/meter"
                    return paths.contains(path) ? OSCMessage(path, levels(meter).map(OSCArgument.float)) : nil
                }
                // Listened meters whose apps are gone (until they come back): nothing to send.
                if messages.isEmpty {
                    merged[since] = group
                    continue
                }
                bytes = OSCCodec.encodeBundle(messages)
            } else {
                if group.plain == nil { group.plain = plainMeterBundle(latest, levels: levels) }
                bytes = group.plain!
            }
            merged[since] = group
            if !send(bytes, to: target, conflatable: true) { dropped.append(target) }
        }
        drop(dropped, from: &meterTargets, "meter")
        // Ticks every subscriber has had.
        let oldest = (meterTargets + levelTargets).map(\.lastMeter).min() ?? now
        meterHistory.removeAll { $0.time <= oldest }
    }

    /// The bundle of one `/duckrouter/meter <kind> <name> <dBFS per channel…>` message per meter,
    /// written into the layout made for these meters (`OSCFloatBundle`), which is made again only
    /// when the meters change (an app comes or goes, a channel count changes).
    func plainMeterBundle(_ meters: [PeakMeter], levels: (PeakMeter) -> [Float]) -> [UInt8] {
        var values: [Float] = []
        values.reserveCapacity(meterBundle?.floatCount ?? 0)
        var same = meterBundle?.shapes.count == meters.count
        for (index, meter) in meters.enumerated() {
            let channels = levels(meter)
            values += channels
            if same, let shape = meterBundle?.shapes[index] {
                same = shape.floats == channels.count && shape.strings.count == 2
                    && shape.strings[0] == meter.kind.rawValue && shape.strings[1] == meter.name
            }
        }
        if !same {
            meterBundle = OSCFloatBundle(meters.map { meter in
                OSCFloatBundle.Shape(address: "/duckrouter/meter", strings: [meter.kind.rawValue, meter.name], floats: levels(meter).count)
            })
        }
        return meterBundle!.encode(values)
    }

    /// Starts sending `target` meters at `rate` Hz.
    func addMeterTarget(_ target: Target, rate: Double) {
        // The first subscriber (of peaks or levels): drop what the router gathered while nobody
        // listened.
        if meterTargets.isEmpty && levelTargets.isEmpty { router.dropPeaks() }
        target.meterRate = rate
        // The first bundle at the first point of the rate's grid at least one interval away, so
        // it carries a whole interval's peaks; every later one on that grid.
        target.lastMeter = OSCServer.clockSeconds()
        target.nextMeter = Self.nextMeterTime(after: target.lastMeter + 1 / rate, rate: rate)
        meterTargets.append(target)
    }

    /// The first point of the grid of `rate` (multiples of its interval on the OSC server's clock,
    /// `OSCServer.clockSeconds`) after `time`. At 20 Hz each point is one of the server's ticks
    /// (on its 10 ms grid of the same clock), so a bundle goes out at the tick of its point, not up to
    /// a tick after it depending on how the two clocks happen to lie.
    static func nextMeterTime(after time: Double, rate: Double) -> Double {
        ((time * rate).rounded(.down) + 1) / rate
    }

    /// The peak of every meter's channels over the ticks after `since`, by "kind/name"; empty
    /// when that is only the last tick's reading (a subscriber due at every reading, the usual
    /// case): the meters of that reading are the peaks, with no merge.
    static func peaks(in history: [(time: Double, meters: [PeakMeter])], after since: Double) -> [String: [Float]] {
        if history.count < 2 || history[history.count - 2].time <= since { return [:] }
        var peaks: [String: [Float]] = [:]
        for (time, meters) in history where time > since {
            for meter in meters {
                let key = "\(meter.kind.rawValue)/\(meter.name)"
                if let before = peaks[key], before.count == meter.peaks.count {
                    peaks[key] = zip(before, meter.peaks).map { max($0, $1) }
                } else {
                    peaks[key] = meter.peaks
                }
            }
        }
        return peaks
    }
}
