/// How long the process callback took per cycle, gathered on the control thread from the
/// timestamps the audio thread leaves in a ring (nothing but the two clock reads and one push
/// happen on the audio thread).
///
/// A histogram with 0.1 µs buckets up to 100 µs and 1 µs buckets up to 10 ms (longer cycles count
/// in one overflow bucket at their exact maximum), so percentiles cost no sorting and no memory
/// growth however long the show runs.
public struct ProcessTimeHistogram: Sendable, Equatable {
    static let fineLimit: UInt64 = 100_000          // ns: 0.1 µs buckets below
    static let coarseLimit: UInt64 = 10_000_000     // ns: 1 µs buckets below, overflow above
    static let bucketCount = 1000 + 9900 + 1

    private var counts: [UInt32]
    public private(set) var cycles: UInt64 = 0
    public private(set) var totalNanoseconds: UInt64 = 0
    public private(set) var maxNanoseconds: UInt64 = 0

    public init() {
        counts = Array(repeating: 0, count: Self.bucketCount)
    }

    static func bucket(_ ns: UInt64) -> Int {
        if ns < fineLimit { return Int(ns / 100) }
        if ns < coarseLimit { return 1000 + Int((ns - fineLimit) / 1000) }
        return bucketCount - 1
    }

    /// The upper edge of a bucket, in ns.
    func upperEdge(_ bucket: Int) -> UInt64 {
        if bucket < 1000 { return UInt64(bucket + 1) * 100 }
        if bucket < Self.bucketCount - 1 { return Self.fineLimit + UInt64(bucket - 1000 + 1) * 1000 }
        return maxNanoseconds
    }

    public mutating func record(nanoseconds ns: UInt64) {
        counts[Self.bucket(ns)] &+= 1
        cycles += 1
        totalNanoseconds &+= ns
        maxNanoseconds = max(maxNanoseconds, ns)
    }

    public mutating func merge(_ other: ProcessTimeHistogram) {
        for i in counts.indices { counts[i] &+= other.counts[i] }
        cycles += other.cycles
        totalNanoseconds &+= other.totalNanoseconds
        maxNanoseconds = max(maxNanoseconds, other.maxNanoseconds)
    }

    /// The time at or below which a fraction `q` (0...1) of the cycles finished, in µs (the upper
    /// edge of its bucket, never above the maximum seen). 0 with no cycles.
    public func percentileMicroseconds(_ q: Double) -> Double {
        guard cycles > 0 else { return 0 }
        let rank = UInt64((q * Double(cycles)).rounded(.up))
        var seen: UInt64 = 0
        for (i, count) in counts.enumerated() where count > 0 {
            seen += UInt64(count)
            if seen >= max(rank, 1) { return Double(min(upperEdge(i), maxNanoseconds)) / 1000 }
        }
        return Double(maxNanoseconds) / 1000
    }

    public var meanMicroseconds: Double { cycles == 0 ? 0 : Double(totalNanoseconds) / Double(cycles) / 1000 }
    public var maxMicroseconds: Double { Double(maxNanoseconds) / 1000 }

    /// Mean, p99 and max in µs, and the cycles they cover.
    public var summary: ProcessTimeSummary {
        ProcessTimeSummary(cycles: cycles, meanMicroseconds: meanMicroseconds,
                           p99Microseconds: percentileMicroseconds(0.99), maxMicroseconds: maxMicroseconds)
    }
}

/// Mean, 99th percentile and maximum of the process callback's own time per cycle.
public struct ProcessTimeSummary: Sendable, Equatable, Codable {
    public var cycles: UInt64
    public var meanMicroseconds: Double
    public var p99Microseconds: Double
    public var maxMicroseconds: Double

    public init(cycles: UInt64 = 0, meanMicroseconds: Double = 0, p99Microseconds: Double = 0, maxMicroseconds: Double = 0) {
        self.cycles = cycles
        self.meanMicroseconds = meanMicroseconds
        self.p99Microseconds = p99Microseconds
        self.maxMicroseconds = maxMicroseconds
    }
}

/// Process times since the engine started, and over a recent window (the last completed window
/// and the one filling, so it always covers between one and two windows).
public struct ProcessTimes: Sendable {
    public private(set) var sinceStart = ProcessTimeHistogram()
    private var previous = ProcessTimeHistogram()
    private var current = ProcessTimeHistogram()
    /// Cycles per window (the router sets about 10 s of cycles).
    public var windowCycles: UInt64 = 3750

    mutating func record(nanoseconds: UInt64) {
        sinceStart.record(nanoseconds: nanoseconds)
        current.record(nanoseconds: nanoseconds)
        if current.cycles >= windowCycles {
            previous = current
            current = ProcessTimeHistogram()
        }
    }

    public var recent: ProcessTimeHistogram {
        var merged = previous
        merged.merge(current)
        return merged
    }

    /// Starts every figure afresh (benchmarks measure after warming up).
    public mutating func reset() {
        sinceStart = ProcessTimeHistogram()
        previous = ProcessTimeHistogram()
        current = ProcessTimeHistogram()
    }
}
