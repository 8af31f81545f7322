import Engine
import Foundation
import Logging
import Policy

/// What the router tells about itself: xruns (notified at most once a second), the meters the
/// audio thread hands back, and the status snapshot for /state and tests.
///
/// Owns: the xrun counts, the latest meter reading and the peaks since they were last taken,
/// and when the plan queue was last reported full. Must not touch: the policy, ports or plans
/// (it is handed what it reports). Control queue only.
struct Diagnostics {
    private(set) var xruns = 0
    private var xrunsNotified = 0
    private var lastXrunNotification = Date.distantPast
    private var latestMeters: MeterReading?
    /// Peaks since the last `takePeaks()`.
    private var peaksSinceTaken: MeterReading?
    private var lastPlanQueueFullLog = Date.distantPast
    private var lastPublishFailureLog = Date.distantPast

    mutating func countXrun() { xruns += 1 }

    /// New xruns since the last notice, at most once a second however many come; nil otherwise.
    mutating func xrunsToNotify() -> (total: Int, new: Int)? {
        guard xruns > xrunsNotified, Date().timeIntervalSince(lastXrunNotification) >= 1 else { return nil }
        let new = xruns - xrunsNotified
        xrunsNotified = xruns
        lastXrunNotification = Date()
        return (xruns, new)
    }

    mutating func collectMeters(from engine: Engine) {
        guard let reading = engine.collectMeters() else { return }
        latestMeters = reading
        if peaksSinceTaken == nil { peaksSinceTaken = reading } else { peaksSinceTaken!.merge(reading) }
    }

    /// Whether a full plan queue should be logged now (at most every 10 s).
    mutating func shouldLogPlanQueueFull() -> Bool { Self.due(&lastPlanQueueFullLog) }

    /// Whether a plan the engine refused should be logged now (at most every 10 s).
    mutating func shouldLogPublishFailure() -> Bool { Self.due(&lastPublishFailureLog) }

    private static func due(_ last: inout Date) -> Bool {
        guard Date().timeIntervalSince(last) >= 10 else { return false }
        last = Date()
        return true
    }

    /// The peak of every app's and route's channels since the previous call. Apps first, then
    /// routes, in order.
    mutating func takePeaks(apps: [AppState], routes: [RouteState]) -> [PeakMeter] {
        let reading = peaksSinceTaken
        peaksSinceTaken = nil
        return apps.map { PeakMeter(kind: .app, name: $0.name, peaks: Self.peaks($0.meterSlots, reading?.inputPeaks)) }
            + routes.map { PeakMeter(kind: .route, name: $0.name, peaks: Self.peaks($0.meterSlots, reading?.outputPeaks)) }
    }

    /// The peak per channel in dBFS over what the latest collection gathered: since the one
    /// before (10 ms apart while the router is busy, up to a second while it idles, or the
    /// previous `/state`).
    func latestPeakDecibels(app: AppState) -> [Double] {
        Self.peaks(app.meterSlots, latestMeters?.inputPeaks).map { Double(Decibels.level($0)) }
    }

    func latestPeakDecibels(route: RouteState) -> [Double] {
        Self.peaks(route.meterSlots, latestMeters?.outputPeaks).map { Double(Decibels.level($0)) }
    }

    private static func peaks(_ slots: [Int32], _ table: [Float]?) -> [Float] {
        slots.map { slot in table.map { Int(slot) < $0.count ? $0[Int(slot)] : 0 } ?? 0 }
    }
}
