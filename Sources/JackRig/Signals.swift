import Foundation

/// Test signals and measurements.
public enum Signals {
    /// A sine that loops seamlessly: one second of whole cycles at `frequency` (an integer).
    public static func sine(frequency: Int, amplitude: Float, sampleRate: Int) -> [Float] {
        (0..<sampleRate).map { i in
            amplitude * Float(sin(2 * Double.pi * Double(frequency) * Double(i) / Double(sampleRate)))
        }
    }

    public static func dc(_ level: Float) -> [Float] { [level] }

    /// RMS level of `samples` in dBFS.
    public static func rmsDecibels<S: Collection>(_ samples: S) -> Double where S.Element == Float {
        guard !samples.isEmpty else { return -.infinity }
        let power = samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)
        return power > 0 ? 10 * log10(power) : -.infinity
    }

    /// Peak magnitude of `samples` in dBFS.
    public static func peakDecibels<S: Collection>(_ samples: S) -> Double where S.Element == Float {
        let peak = samples.reduce(Float(0)) { max($0, abs($1)) }
        return peak > 0 ? 20 * log10(Double(peak)) : -.infinity
    }

    /// The largest |x[i+1] - x[i]| in `samples`, not spanning any index in `gaps`.
    public static func largestStep(_ samples: [Float], excluding gaps: [Int] = []) -> Float {
        largestStepAt(samples, excluding: gaps).size
    }

    /// The largest step and where: the step from sample `index - 1` to `index` (0 when none).
    public static func largestStepAt(_ samples: [Float], excluding gaps: [Int] = []) -> (size: Float, index: Int) {
        let skip = Set(gaps)
        var largest: (size: Float, index: Int) = (0, 0)
        for i in 1..<max(samples.count, 1) where !skip.contains(i) {
            let step = abs(samples[i] - samples[i - 1])
            if step > largest.size { largest = (step, i) }
        }
        return largest
    }
}
