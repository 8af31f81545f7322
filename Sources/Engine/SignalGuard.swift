import CSignalScan

/// Per-buffer checks on the process path: peak level, sum of squares (RMS), and keeping NaN and
/// Inf out of the mix.
public enum SignalGuard {
    /// The peak magnitude of `buffer`, or nil when it holds a NaN or an infinity.
    ///
    /// One pass over the bit patterns: with the sign bit cleared, IEEE 754 floats order like
    /// unsigned integers, and every pattern from 0x7f800000 up is an infinity or a NaN. So a single
    /// integer max reduction gives both the peak and the verdict (float max with its NaN rules and
    /// SIMD masks does not vectorise and cost 5x as much here). The loop is C's (CSignalScan),
    /// built for SSE2, SSE4.1 and AVX2 and chosen when the program loads: the baseline Swift
    /// compiles for has no integer max, and with AVX2 the scan takes a fifth of the time.
    @_noLocks
    public static func peakIfFinite(_ buffer: UnsafePointer<Float>, frames: Int) -> Float? {
        let count = Int32(truncatingIfNeeded: frames)
        return peak(largestMagnitudeBits: _unsafePerformance { CSignalScan_largestMagnitudeBits(buffer, count) })
    }

    /// `peakIfFinite` with the scan variant given (0 the baseline, 1 SSE4.1, 2 AVX2; one this CPU
    /// lacks runs the baseline): for tests and benchmarks.
    public static func peakIfFinite(_ buffer: UnsafePointer<Float>, frames: Int, variant: ScanVariant) -> Float? {
        peak(largestMagnitudeBits: CSignalScan_largestMagnitudeBitsUsing(variant.rawValue, buffer, Int32(truncatingIfNeeded: frames)))
    }

    /// The scan's verdict: every pattern from 0x7f800000 up is an infinity or a NaN.
    @_noLocks @inline(__always)
    private static func peak(largestMagnitudeBits largest: UInt32) -> Float? {
        largest >= 0x7f80_0000 ? nil : Float(bitPattern: largest)
    }

    /// The builds of the scan.
    public enum ScanVariant: Int32, CaseIterable, Sendable {
        case baseline = 0, sse41 = 1, avx2 = 2

        /// The one `peakIfFinite` uses on this CPU.
        public static var chosen: ScanVariant { ScanVariant(rawValue: CSignalScan_chosenVariant()) ?? .baseline }
        /// Whether this CPU runs it.
        public var isSupported: Bool { CSignalScan_supports(rawValue) == 1 }
    }

    /// The sum of the squares of `buffer`'s samples (finite ones: the engine sanitises first), the
    /// mean square's numerator for RMS meters. C's (CSignalScan, beside the peak scan): four
    /// accumulators of eight lanes, built for the baseline and for AVX2 with FMA and chosen when
    /// the program loads. Per 128-frame buffer on a 2-core x86 VM (duckbench --meters): 8 ns with
    /// AVX2, 10 ns for the C baseline, 18 ns for the same loop in Swift (`sumOfSquaresSwift`,
    /// SIMD8), about the peak scan's 9-11 ns. Summed in float: a lane adds at most 256 squares of
    /// a JACK period, so its rounding stays far below a thousandth of a dB.
    @_noLocks
    public static func sumOfSquares(_ buffer: UnsafePointer<Float>, frames: Int) -> Float {
        let count = Int32(truncatingIfNeeded: frames)
        return _unsafePerformance { CSignalScan_sumOfSquares(buffer, count) }
    }

    /// `sumOfSquares` with the variant given (0 the baseline, 2 AVX2 with FMA; any other, or one
    /// this CPU lacks, runs the baseline): for tests and benchmarks.
    public static func sumOfSquares(_ buffer: UnsafePointer<Float>, frames: Int, variant: ScanVariant) -> Float {
        CSignalScan_sumOfSquaresUsing(variant.rawValue, buffer, Int32(truncatingIfNeeded: frames))
    }

    /// The same loop in Swift (explicit SIMD8 lanes, four accumulators): what the C one was
    /// measured against (duckbench --meters), kept for that.
    @_noLocks
    public static func sumOfSquaresSwift(_ buffer: UnsafePointer<Float>, frames: Int) -> Float {
        typealias Lanes = SIMD8<Float>
        let raw = UnsafeRawPointer(buffer)
        var a = Lanes(repeating: 0), b = Lanes(repeating: 0), c = Lanes(repeating: 0), d = Lanes(repeating: 0)
        var i = 0
        while i &+ 32 <= frames {
            let w = raw.loadUnaligned(fromByteOffset: i &* 4, as: Lanes.self)
            let x = raw.loadUnaligned(fromByteOffset: (i &+ 8) &* 4, as: Lanes.self)
            let y = raw.loadUnaligned(fromByteOffset: (i &+ 16) &* 4, as: Lanes.self)
            let z = raw.loadUnaligned(fromByteOffset: (i &+ 24) &* 4, as: Lanes.self)
            a = a + w * w
            b = b + x * x
            c = c + y * y
            d = d + z * z
            i &+= 32
        }
        while i &+ 8 <= frames {
            let w = raw.loadUnaligned(fromByteOffset: i &* 4, as: Lanes.self)
            a = a + w * w
            i &+= 8
        }
        var sum = ((a + b) + (c + d)).sum()
        while i < frames { sum += buffer[i] * buffer[i]; i &+= 1 }
        return sum
    }

    /// `sumOfSquares` one sample at a time in Double: the reference the vectorised one is held to.
    public static func sumOfSquaresReference(_ buffer: UnsafePointer<Float>, frames: Int) -> Double {
        var sum = 0.0
        for i in 0..<frames { sum += Double(buffer[i]) * Double(buffer[i]) }
        return sum
    }

    /// Copies `source` to `destination` with every NaN or infinite sample replaced by silence;
    /// returns the peak magnitude of the result.
    @_noLocks
    public static func copySanitised(_ source: UnsafePointer<Float>,
                                     to destination: UnsafeMutablePointer<Float>,
                                     frames: Int) -> Float {
        var peak: Float = 0
        var i = 0
        while i < frames {
            let x = source[i]
            let clean: Float = x.isFinite ? x : 0
            destination[i] = clean
            peak = max(peak, clean < 0 ? -clean : clean)
            i &+= 1
        }
        return peak
    }

    /// Replaces every NaN or infinite sample in `buffer` with silence; returns the peak magnitude.
    @_noLocks
    public static func sanitiseInPlace(_ buffer: UnsafeMutablePointer<Float>, frames: Int) -> Float {
        if let peak = peakIfFinite(UnsafePointer(buffer), frames: frames) { return peak }
        return copySanitised(UnsafePointer(buffer), to: buffer, frames: frames)
    }
}
