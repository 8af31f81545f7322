import Foundation

/// What the router tells about itself: xruns (notified at most once a second), and when to log
/// a full plan queue or a refused plan (the meters are the `PeakBoard`'s).
///
/// Owns: the xrun counts, and when a full plan queue and a refused plan were last logged. Must
/// not touch: the policy, ports or plans (it is handed what it reports). Control queue only.
struct Diagnostics {
    private(set) var xruns = 0
    private var xrunsNotified = 0
    private var lastXrunNotification = Date.distantPast
    private var lastPlanQueueFullLog = Date.distantPast
    private var lastPublishFailureLog = Date.distantPast

    mutating func countXruns(_ count: Int) { xruns += count }

    /// New xruns since the last notice, at most once a second however many come; nil otherwise.
    mutating func xrunsToNotify() -> (total: Int, new: Int)? {
        guard xruns > xrunsNotified, Date().timeIntervalSince(lastXrunNotification) >= 1 else { return nil }
        let new = xruns - xrunsNotified
        xrunsNotified = xruns
        lastXrunNotification = Date()
        return (xruns, new)
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
}
