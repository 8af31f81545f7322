import OSCTransport
import Policy
import RouterCore

/// Peak and RMS meters for subscribers (OSC `/meters/levels`, also over a WebSocket: the control
/// page's channel strips): every app's and route's channels, one bundle of `/duckrouter/levels`
/// messages per interval at each subscriber's rate, on the ticks and the readings of the peak
/// meters (ControlServer+Meters.swift). The audio thread sums squares only while this has a
/// subscriber (`levelTargets`' observer turns the router's RMS on and off). OSC server thread only.
extension ControlServer {
    func subscribeLevels(url: String?, rate: Double, peer: OSCServer.Peer) throws(PolicyError) -> [OSCArgument] {
        let key = url.flatMap(OSCURL.init)?.description ?? peer.url
        if let existing = levelTargets.first(where: { $0.url == key }) {
            existing.meterRate = rate
        } else if rate > 0 {
            guard levelTargets.count < configuration.maximumSubscribers else {
                throw PolicyError(.general, "too many level subscribers (\(configuration.maximumSubscribers))")
            }
            let target = try target(url: url, peer: peer)
            // The first of any meter subscriber: drop what the router gathered while nobody listened.
            if meterTargets.isEmpty && levelTargets.isEmpty { router.dropPeaks() }
            target.meterRate = rate
            // As for peak meters: the first bundle at least one interval away, on the rate's grid.
            target.lastMeter = OSCServer.clockSeconds()
            target.nextMeter = Self.nextMeterTime(after: target.lastMeter + 1 / rate, rate: rate)
            levelTargets.append(target)
        }
        levelTargets.removeAll { target in
            guard target.meterRate == 0 else { return false }
            release(target)
            return true
        }
        return [.float(Float(rate)), .string(key)]
    }

    /// Sends every level subscriber due at `now` its bundle: per meter the peak of each channel
    /// over the readings since its previous bundle, and the RMS over them (their squares and
    /// frames summed). Subscribers whose previous bundles went together share one bundle.
    func tickLevels(now: Double) {
        var dropped: [Target] = []
        var bundles: [Double: [UInt8]] = [:]
        for target in levelTargets where now >= target.nextMeter {
            let since = target.lastMeter
            target.nextMeter = Self.nextMeterTime(after: now, rate: target.meterRate)
            target.lastMeter = now
            let bytes = bundles[since] ?? Self.levelBundle(Self.levels(in: meterHistory, after: since))
            bundles[since] = bytes
            if !send(bytes, to: target, conflatable: true) { dropped.append(target) }
        }
        drop(dropped, from: &levelTargets, "level")
    }

    /// The meters of the readings after `since`, merged: the peaks' maximum, the squares and
    /// their frames summed (a meter whose channel count changed starts again from that reading),
    /// in the order of the latest reading (meters gone since are left out).
    static func levels(in history: [(time: Double, meters: [PeakMeter])], after since: Double) -> [PeakMeter] {
        let readings = history.filter { $0.time > since }
        guard let latest = readings.last?.meters else { return [] }
        if readings.count == 1 { return latest }
        var merged: [String: PeakMeter] = [:]
        for (_, meters) in readings {
            for meter in meters {
                let key = "\(meter.kind.rawValue)/\(meter.name)"
                guard var before = merged[key], before.peaks.count == meter.peaks.count else {
                    merged[key] = meter
                    continue
                }
                before.peaks = zip(before.peaks, meter.peaks).map { max($0, $1) }
                if !meter.squares.isEmpty {
                    before.squares = before.squares.isEmpty ? meter.squares : zip(before.squares, meter.squares).map { $0 + $1 }
                    before.squaredFrames += meter.squaredFrames
                }
                merged[key] = before
            }
        }
        return latest.map { merged["\($0.kind.rawValue)/\($0.name)"] ?? $0 }
    }

    /// One `/duckrouter/levels <kind> <name> <peak dBFS> <RMS dBFS>…` message per meter, the two
    /// levels of each channel in turn; -144 for silence, and for an RMS not measured in the span.
    static func levelBundle(_ meters: [PeakMeter]) -> [UInt8] {
        func decibels(_ linear: Float) -> OSCArgument { .float(max(Decibels.level(linear), Decibels.floor)) }
        return OSCCodec.encodeBundle(meters.map { meter in
            let rms = meter.rms ?? Array(repeating: 0, count: meter.peaks.count)
            let values = zip(meter.peaks, rms).flatMap { [decibels($0), decibels($1)] }
            return OSCMessage("/duckrouter/levels", [.string(meter.kind.rawValue), .string(meter.name)] + values)
        })
    }
}
