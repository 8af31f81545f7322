import Engine
import Foundation
import Policy

/// The peaks the audio thread hands back, for whichever thread reads them, with no trip to the
/// control queue: the OSC server's thread takes them for meter subscribers (20 times a second
/// while a page or a surface shows meters), the control queue collects through it for /state
/// and at each housekeeping tick. Before, each meter tick was a `queue.sync` onto the control
/// queue: on this VM some 100 µs of two threads' time, and a wake of a dispatch worker, 20 times
/// a second (issue 17).
///
/// Owns: the engine's meter hand-back (its ring has one consumer at a time: every collection is
/// under the lock) and its RMS switch (`measureRMS`, also under the lock), the latest reading, the
/// peaks since they were last taken, and the layout: which app and route reads which meter slots,
/// set by the control queue whenever it publishes (`follow`), so a reading is named as the latest
/// plan names its slots (a meter block the audio thread filled across a plan change may carry a
/// reused slot's last peak under its new owner's name, as before the board). Must not touch:
/// anything else of the engine's, or control state. Any thread; the lock is held for a collection
/// and a copy, never for a call out.
final class PeakBoard: @unchecked Sendable {
    // @unchecked: `engine` is used only under `lock` (its meter rings and blocks and its RMS flag,
    // nothing else), and every stored var is read and written under `lock` (NSLock, which TSan
    // sees).
    private let lock = NSLock()
    private let engine: Engine
    private var latest: MeterReading?
    private var sinceTaken: MeterReading?
    private var layout: [Entry] = []

    /// One meter: an app (its input slots) or a route (its output slots).
    private struct Entry {
        var kind: PeakMeter.Kind
        var name: String
        var slots: [Int32]
    }

    init(engine: Engine) {
        self.engine = engine
    }

    /// The meters are these apps and routes from now on (control queue: after each publish, and
    /// at the start).
    func follow(apps: [AppState], routes: [RouteState]) {
        let entries = apps.map { Entry(kind: .app, name: $0.name, slots: $0.meterSlots) }
            + routes.map { Entry(kind: .route, name: $0.name, slots: $0.meterSlots) }
        lock.withLock { layout = entries }
    }

    /// Gathers what the audio thread has handed back since the last collection (any thread).
    func collect() {
        lock.withLock { collectLocked() }
    }

    /// The peak of every app's and route's channels since the previous call, linear, with the sums
    /// of their squares while RMS is measured: apps first, then routes, in order (any thread).
    func takePeaks() -> [PeakMeter] {
        let (reading, layout) = lock.withLock {
            collectLocked()
            defer { sinceTaken = nil }
            return (sinceTaken, self.layout)
        }
        let squaredFrames = reading?.squaredFrames ?? 0
        return layout.map { entry in
            let isApp = entry.kind == .app
            let squares = squaredFrames > 0 ? Self.squares(entry.slots, isApp ? reading?.inputSquares : reading?.outputSquares) : []
            return PeakMeter(kind: entry.kind, name: entry.name,
                             peaks: Self.peaks(entry.slots, isApp ? reading?.inputPeaks : reading?.outputPeaks),
                             squares: squares, squaredFrames: squares.isEmpty ? 0 : squaredFrames)
        }
    }

    /// Whether the audio thread measures RMS (OSC server thread: while someone shows levels).
    /// Readings taken after it is turned on carry the squares of the frames measured since.
    func measureRMS(_ on: Bool) {
        lock.withLock { engine.setMeasuresRMS(on) }
    }

    var measuresRMS: Bool { lock.withLock { engine.measuresRMS } }

    /// Forgets the peaks gathered so far (a first subscriber starts from now).
    func dropPeaks() {
        lock.withLock {
            collectLocked()
            sinceTaken = nil
        }
    }

    /// The peak per channel in dBFS over what the latest collection gathered: since the one
    /// before (10 ms apart while the router is busy, up to a second while it idles, or the
    /// previous `/state`, or a meter subscriber's tick).
    func latestPeakDecibels(app: AppState) -> [Double] {
        lock.withLock { Self.peaks(app.meterSlots, latest?.inputPeaks) }.map { Double(Decibels.level($0)) }
    }

    func latestPeakDecibels(route: RouteState) -> [Double] {
        lock.withLock { Self.peaks(route.meterSlots, latest?.outputPeaks) }.map { Double(Decibels.level($0)) }
    }

    private func collectLocked() {
        guard let reading = engine.collectMeters() else { return }
        latest = reading
        if sinceTaken == nil { sinceTaken = reading } else { sinceTaken!.merge(reading) }
    }

    private static func peaks(_ slots: [Int32], _ table: [Float]?) -> [Float] {
        slots.map { slot in table.map { slot >= 0 && Int(slot) < $0.count ? $0[Int(slot)] : 0 } ?? 0 }
    }

    private static func squares(_ slots: [Int32], _ table: [Double]?) -> [Double] {
        slots.map { slot in table.map { slot >= 0 && Int(slot) < $0.count ? $0[Int(slot)] : 0 } ?? 0 }
    }
}
