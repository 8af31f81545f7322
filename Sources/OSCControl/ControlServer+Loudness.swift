import OSCTransport
import Policy
import RouterCore

/// Loudness meters for subscribers (OSC `/meters/loudness`, issue 19): every app's and route's
/// EBU R 128 loudness, momentary and short-term, in one bundle of `/duckrouter/loudness` messages
/// at each subscriber's rate (up to 10 Hz: the readings move in 100 ms blocks). OSC server thread
/// only.
extension ControlServer {
    func subscribeLoudness(url: String?, rate: Double, peer: OSCServer.Peer) throws(PolicyError) -> [OSCArgument] {
        let key = url.flatMap(OSCURL.init)?.description ?? peer.url
        if let existing = loudnessTargets.first(where: { $0.url == key }) {
            existing.meterRate = rate
        } else if rate > 0 {
            guard router.loudnessReadings() != nil else {
                throw PolicyError(.general, "loudness is not metered now: the JACK server is away, or metering is off (set \"loudness\": {\"meter\": true} in the session, or a ducking target)")
            }
            guard loudnessTargets.count < configuration.maximumSubscribers else {
                throw PolicyError(.general, "too many loudness subscribers (\(configuration.maximumSubscribers))")
            }
            let target = try target(url: url, peer: peer)
            target.meterRate = rate
            target.nextMeter = Self.nextMeterTime(after: OSCServer.clockSeconds(), rate: rate)
            loudnessTargets.append(target)
        }
        loudnessTargets.removeAll { target in
            guard target.meterRate == 0 else { return false }
            release(target)
            return true
        }
        return [.float(Float(rate)), .string(key)]
    }

    /// Sends the readings to every subscriber due now, read once for all of them. While the
    /// router meters nothing (the server away, metering off), nothing is sent.
    func tickLoudness() {
        let now = OSCServer.clockSeconds()
        let due = loudnessTargets.filter { now >= $0.nextMeter }
        guard !due.isEmpty else { return }
        for target in due { target.nextMeter = Self.nextMeterTime(after: now, rate: target.meterRate) }
        guard let readings = router.loudnessReadings(), !readings.isEmpty else { return }
        func lufs(_ value: Double?) -> OSCArgument { .float(Float(max(value ?? -144, -144))) }
        let bytes = OSCCodec.encodeBundle(readings.map {
            OSCMessage("/duckrouter/loudness", [.string($0.kind.rawValue), .string($0.name), lufs($0.momentary), lufs($0.shortTerm)])
        })
        var dropped: [Target] = []
        // Not conflatable: a stream keeps one slot for the latest conflatable frame, and the peak or
        // level bundle of the same tick (20 Hz against these 10 Hz) would take it before this one
        // is written, so a control page that shows both never got its loudness. A peer too slow for
        // these small frames fills its bounded queue and is dropped like any other.
        for target in due where !send(bytes, to: target, conflatable: false) { dropped.append(target) }
        drop(dropped, from: &loudnessTargets, "loudness")
    }
}
