import Foundation

/// What a chaos run did and found: the steps, recovery times by fault, what was excused and why,
/// the router's resources over time, and the violation that ended it, if one did.
public struct ChaosReport: Sendable {
    public struct Step: Sendable {
        public var at: Double
        public var faults: [ChaosFault]
        public var detail: String
    }

    public struct Sample: Sendable {
        public var at: Double
        public var threads: Int
        public var descriptors: Int
        public var residentKB: Int
        /// Connections the run held open that never read.
        public var held: Int
        /// The router process it was taken of (it is started again after each SIGKILL).
        public var pid: Int32
    }

    /// The largest growth of resident memory of one router process, from a minute into its
    /// life to its end (nil when none ran two minutes): kB, and over how many seconds.
    public var memoryGrowth: (kB: Int, seconds: Double)? {
        var largest: (kB: Int, seconds: Double)?
        for pid in Set(resources.map(\.pid)) {
            let mine = resources.filter { $0.pid == pid }
            guard let first = mine.first, let last = mine.last, last.at - first.at >= 120,
                  let settled = mine.first(where: { $0.at - first.at >= 60 }) else { continue }
            let growth = last.residentKB - settled.residentKB
            if largest == nil || growth > largest!.kB { largest = (growth, last.at - settled.at) }
        }
        return largest
    }

    public var seed: UInt64
    public var seconds: Double
    public var elapsed = 0.0
    public var server = ""
    public var steps: [Step] = []
    public var recoveries: [ChaosFault: [Double]] = [:]
    public var compoundRecoveries: [Double] = []
    public var violation: String?
    /// The router's log and the run's folder, kept when a violation ended it.
    public var log = ""
    public var keptFolder: String?
    public var baseline: (threads: Int, descriptors: Int, residentKB: Int)?
    public var resources: [Sample] = []
    /// Outcomes a fault left open that a check settled; SIGKILLs that lost the last changes.
    public var openOutcomesSettled = 0
    public var changesLostToKill = 0
    /// Steps at the sinks excused (in a fault that stops the sound, at a missed cycle, in a
    /// stretch with an xrun), and the late graph's cycles.
    public var excused = SinkEventJudge.Tally()
    public var sinkGaps = 0
    /// The last cycles the sinks missed (when, which sink, what the clock did), printed with a
    /// violation.
    public var recentGaps: [String] = []
    /// OSC changes answered after more than 1 s (path and time), all while a server was away,
    /// frozen or coming back.
    public var slowAnswers: [String] = []

    public init(seed: UInt64, seconds: Double) {
        self.seed = seed
        self.seconds = seconds
    }

    public var passed: Bool { violation == nil }

    /// Median, 99th percentile and largest of `values`.
    public static func spread(_ values: [Double]) -> (median: Double, p99: Double, max: Double)? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))] }
        return (at(0.5), at(0.99), sorted.last!)
    }

    /// The report in words, as `make chaos` prints it.
    public var text: String {
        var lines = ["duckchaos: seed \(seed), \(String(format: "%.0f", elapsed)) s on \(server), \(steps.count) steps "
                     + "(\(steps.filter { $0.faults.count > 1 }.count) with faults at once): \(passed ? "PASS" : "FAIL")"]
        lines.append("  fault                                             count   recovery median / p99 / max (s)")
        for fault in ChaosFault.allCases {
            let times = recoveries[fault] ?? []
            let count = steps.filter { $0.faults.contains(fault) }.count
            let spread = Self.spread(times).map { String(format: "%.2f / %.2f / %.2f", $0.median, $0.p99, $0.max) } ?? "-"
            lines.append("  " + fault.rawValue.padding(toLength: 48, withPad: " ", startingAt: 0) + String(format: "%6d", count) + "   " + spread)
        }
        if let spread = Self.spread(compoundRecoveries) {
            lines.append(String(format: "  steps with faults at once: %d, recovery %.2f / %.2f / %.2f s", compoundRecoveries.count, spread.median, spread.p99, spread.max))
        }
        lines.append("  open outcomes settled by a check: \(openOutcomesSettled); SIGKILLs that lost the last changes answered (within 0.5 s, or to a read-only folder): \(changesLostToKill)")
        lines.append("  steps at the sinks excused: \(excused.stepsInFaults) in faults that stop the sound, \(excused.stepsAtMissedCycles) at missed cycles "
                     + "or late-graph seams, \(excused.stepsAtXruns) beside xruns; cycles the sinks missed: \(sinkGaps); "
                     + "late-graph cycles: \(excused.lateSilentCycles) silent, \(excused.lateRepeatedCycles) played twice"
                     + (excused.repeatedCycles > 0 ? "; cycles played twice on jackd: \(excused.repeatedCycles)" : ""))
        lines.append("  OSC changes answered after more than 1 s: \(slowAnswers.count)\(slowAnswers.isEmpty ? "" : " (" + slowAnswers.suffix(8).joined(separator: ", ") + ")")")
        if let first = resources.first, let last = resources.last {
            let peak = resources.map(\.residentKB).max() ?? 0
            lines.append("  router: threads \(first.threads) → \(last.threads) (max \(resources.map(\.threads).max() ?? 0)), descriptors \(first.descriptors) → \(last.descriptors) "
                         + "(max \(resources.map(\.descriptors).max() ?? 0)), resident \(first.residentKB / 1024) → \(last.residentKB / 1024) MB (max \(peak / 1024) MB); "
                         + "\(Set(resources.map(\.pid)).count) router processes"
                         + (memoryGrowth.map { String(format: "; the largest growth of one after its first minute %d kB in %.0f s", $0.kB, $0.seconds) } ?? ""))
        }
        if let violation {
            lines.append("  VIOLATION: \(violation)")
            lines.append("  replay: make chaos SEED=\(seed) MINUTES=\(String(format: "%.1f", seconds / 60)) SERVER=\(server)")
            lines.append("  the steps:")
            lines += steps.suffix(30).map { String(format: "    %7.1f s  ", $0.at) + $0.faults.map(\.rawValue).joined(separator: " + ") + ": " + $0.detail }
            if !recentGaps.isEmpty {
                lines.append("  the last cycles the sinks missed:")
                lines += recentGaps.map { "    " + $0 }
            }
            if let keptFolder { lines.append("  the router's log, session and state are kept in \(keptFolder)") }
        }
        return lines.joined(separator: "\n")
    }

    /// The resources over time as an SVG plot: threads, descriptors, resident MB and the
    /// connections held, each scaled to its own maximum, with the steps' faults marked.
    public var svg: String {
        let width = 900.0, height = 300.0, left = 50.0, bottom = 30.0
        let span = max(elapsed, 1)
        func x(_ t: Double) -> Double { left + (width - left - 10) * t / span }
        var parts: [String] = []
        let series: [(String, String, (Sample) -> Double)] = [
            ("threads", "#1f77b4", { Double($0.threads) }), ("descriptors", "#ff7f0e", { Double($0.descriptors) }),
            ("resident MB", "#2ca02c", { Double($0.residentKB) / 1024 }), ("connections held", "#9467bd", { Double($0.held) }),
        ]
        for (index, (name, colour, value)) in series.enumerated() {
            let top = max(resources.map(value).max() ?? 1, 1) * 1.1
            let points = resources.map { String(format: "%.1f,%.1f", x($0.at), height - bottom - (height - bottom - 20) * value($0) / top) }
            parts.append("<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"1.5\" points=\"\(points.joined(separator: " "))\"/>")
            parts.append("<text x=\"\(left + Double(index) * 210)\" y=\"14\" fill=\"\(colour)\" font-size=\"12\">\(name) (max \(String(format: "%.0f", top / 1.1)))</text>")
        }
        for step in steps where step.faults.contains(where: { [.serverKilled, .routerKilled, .serverFrozen].contains($0) }) {
            parts.append(String(format: "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"20\" y2=\"%.1f\" stroke=\"#d62728\" stroke-opacity=\"0.25\"/>", x(step.at), x(step.at), height - bottom))
        }
        parts.append("<text x=\"\(left)\" y=\"\(height - 8)\" font-size=\"12\">0 s</text>")
        parts.append("<text x=\"\(width - 60)\" y=\"\(height - 8)\" font-size=\"12\">\(String(format: "%.0f", span)) s</text>")
        parts.append("<text x=\"\(width / 2 - 120)\" y=\"\(height - 8)\" font-size=\"12\" fill=\"#d62728\">red: the server or the router killed or frozen</text>")
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" font-family=\"sans-serif\">"
            + "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>" + parts.joined() + "</svg>\n"
    }
}

