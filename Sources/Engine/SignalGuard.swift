/// Per-buffer checks on the process path: peak level, and keeping NaN and Inf out of the mix.
public enum SignalGuard {
    private typealias Lanes = SIMD8<Float>

    /// The peak magnitude of `buffer`, or nil when it holds a NaN or an infinity.
    @_noLocks
    public static func peakIfFinite(_ buffer: UnsafePointer<Float>, frames: Int) -> Float? {
        var peak = Lanes()
        // x * 0 is 0 for every finite x and NaN for NaN and ±Inf, so one sum tells them apart.
        var poison = Lanes()
        var i = 0
        while i &+ 8 <= frames {
            let x = UnsafeRawPointer(buffer + i).loadUnaligned(as: Lanes.self)
            let magnitude = x.replacing(with: -x, where: x .< 0)
            peak = pointwiseMax(peak, magnitude)
            poison += x * 0
            i &+= 8
        }
        var scalarPeak = peak.max()
        var scalarPoison = poison.sum()
        while i < frames {
            let x = buffer[i]
            scalarPeak = max(scalarPeak, x < 0 ? -x : x)
            scalarPoison += x * 0
            i &+= 1
        }
        return scalarPoison == 0 ? scalarPeak : nil
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
