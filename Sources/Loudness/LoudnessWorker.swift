import Dispatch
import Engine
import Foundation

/// Meters the loudness of apps and routes off the process thread (issue 19): a thread of its
/// own wakes every `interval`, takes what the process thread has put in each target's taps
/// (`Engine.loudnessTap`), feeds the target's `LoudnessMeter`, and keeps the latest readings
/// for anyone to read (`readings`).
///
/// A target is one app's or route's channels, in order. The control thread says which targets
/// there are (`setTargets`); a target whose taps change (its meter slots passed to another app,
/// or it is new) starts afresh: what waits in its taps is dropped, its meter forgets. Channels are
/// fed only as far as every one of them has samples, so they stay aligned.
///
/// Owns: its thread, the meters and the channel pointers it feeds them through. `targets` and `latest` are guarded by
/// `lock`; the meters are the thread's own.
public final class LoudnessWorker: @unchecked Sendable {
    /// What is metered: an app's or a route's channels.
    public struct Target: Hashable, Sendable {
        public enum Kind: String, Sendable { case app, route }
        public var kind: Kind
        public var name: String
        public var taps: [LoudnessTap]
        public init(kind: Kind, name: String, taps: [LoudnessTap]) {
            self.kind = kind
            self.name = name
            self.taps = taps
        }
        public func hash(into hasher: inout Hasher) {
            hasher.combine(kind)
            hasher.combine(name)
        }
        public static func == (a: Target, b: Target) -> Bool { a.kind == b.kind && a.name == b.name && a.taps == b.taps }
    }

    /// The last readings of a target, LUFS (nil: silence, or not yet 400 ms / 3 s heard).
    public struct Reading: Sendable, Equatable {
        public var momentary: Double?
        public var shortTerm: Double?
        /// The mean square of each of the last (up to 30) 100 ms blocks, oldest first.
        public var blocks: [Double] = []
        /// How many 100 ms blocks the target's meter has heard since it started (it starts again
        /// when the target's taps change).
        public var blocksHeard = 0

        public init(momentary: Double?, shortTerm: Double?, blocks: [Double] = [], blocksHeard: Int = 0) {
            self.momentary = momentary
            self.shortTerm = shortTerm
            self.blocks = blocks
            self.blocksHeard = blocksHeard
        }

        /// BS.1770 loudness of the last `count` blocks (LUFS); nil when fewer were heard, or
        /// they were silence.
        public func loudness(ofLast count: Int) -> Double? { LoudnessMeter.loudness(ofLast: count, of: blocks) }
    }

    public let sampleRate: Int
    public let interval: Double
    private let lock = NSLock()
    private var targets: [Target] = []
    private var latest: [String: Reading] = [:]
    private var stopping = false
    private let finished = DispatchSemaphore(value: 0)
    private var thread: Thread?

    /// The thread's own: a meter and what it was made for, per target key.
    private var meters: [String: (target: Target, meter: LoudnessMeter)] = [:]
    /// Each target's reading as of its meter's last block (the thread's own).
    private var lastReadings: [String: Reading] = [:]
    /// Where each channel of the target being fed starts (the thread's own).
    private let starts: UnsafeMutablePointer<UnsafePointer<Float>>

    /// - Parameter interval: seconds between passes. Readings move in 100 ms blocks; a pass every
    ///   50 ms costs less than every 20 ms (fewer wake-ups, longer runs through libebur128) and
    ///   leaves the taps (16384 frames, 341 ms at 48 kHz) most of their room for a late thread.
    public init(sampleRate: Int, interval: Double = 0.05) {
        self.sampleRate = sampleRate
        self.interval = interval
        starts = .allocate(capacity: 64)
    }

    deinit { starts.deallocate() }

    static func key(_ kind: Target.Kind, _ name: String) -> String { "\(kind.rawValue):\(name)" }

    /// Which apps and routes are metered now (control thread). Readings of targets no longer
    /// named are dropped.
    public func setTargets(_ new: [Target]) {
        lock.withLock {
            targets = new
            let keys = Set(new.map { Self.key($0.kind, $0.name) })
            latest = latest.filter { keys.contains($0.key) }
        }
    }

    /// The latest reading of an app or a route, if it is metered.
    public func reading(_ kind: Target.Kind, _ name: String) -> Reading? {
        lock.withLock { latest[Self.key(kind, name)] }
    }

    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "duckrouter.lufs"
        self.thread = thread
        thread.start()
    }

    /// Stops the thread and waits for it (one `interval` at most, and a pass).
    public func stop() {
        let first = lock.withLock {
            defer { stopping = true }
            return !stopping && thread != nil
        }
        if first { finished.wait() }
    }

    private func run() {
        defer { finished.signal() }
        // The kernel's name, as top -H, ps and /proc show it (Foundation's is not it on Linux).
        let comm = open("/proc/thread-self/comm", O_WRONLY)
        if comm >= 0 {
            _ = write(comm, "duckrouter.lufs", 15)
            close(comm)
        }
        while !lock.withLock({ stopping }) {
            let started = Date()
            pass()
            let rest = interval - Date().timeIntervalSince(started)
            if rest > 0 { Thread.sleep(forTimeInterval: rest) }
        }
    }

    /// One look at every target: feed what waits, keep the readings.
    func pass() {
        let current = lock.withLock { targets }
        var readings: [String: Reading] = [:]
        var kept: [String: (target: Target, meter: LoudnessMeter)] = [:]
        for target in current where !target.taps.isEmpty && target.taps.count <= 64 {
            let key = Self.key(target.kind, target.name)
            var entry = meters[key]
            if entry?.target != target {
                // New, or on other taps: nothing from before is this target's.
                for tap in target.taps { tap.skipAll() }
                entry = LoudnessMeter(channels: target.taps.count, sampleRate: sampleRate).map { (target, $0) }
            }
            guard let (_, meter) = entry else { continue }
            let heard = meter.blocksHeard
            feed(meter, from: target.taps)
            // The readings change only when a 100 ms block ends.
            if meter.blocksHeard != heard || entry?.target != meters[key]?.target || lastReadings[key] == nil {
                lastReadings[key] = Reading(momentary: meter.momentary, shortTerm: meter.shortTerm,
                                            blocks: meter.recentBlocks, blocksHeard: meter.blocksHeard)
            }
            readings[key] = lastReadings[key]
            kept[key] = entry
        }
        meters = kept
        lastReadings = lastReadings.filter { kept[$0.key] != nil }
        lock.withLock {
            // Only targets still named (setTargets may have come meanwhile).
            let named = Set(targets.map { Self.key($0.kind, $0.name) })
            for (key, reading) in readings where named.contains(key) { latest[key] = reading }
        }
    }

    /// Feeds `meter` what all of `taps` have, read in place from the rings (no copy before the
    /// meter's own interleaving): in pieces that lie contiguously in every ring.
    private func feed(_ meter: LoudnessMeter, from taps: [LoudnessTap]) {
        while true {
            var count = taps.map(\.available).min() ?? 0
            guard count > 0 else { return }
            for (c, tap) in taps.enumerated() {
                let run = tap.contiguous
                starts[c] = run.samples
                count = min(count, run.count)
            }
            meter.add(frames: count) { starts[$0] }
            for tap in taps { tap.advance(by: count) }
        }
    }
}
