/// Per-buffer checks on the process path: peak level, and keeping NaN and Inf out of the mix.
public enum SignalGuard {
    /// The peak magnitude of `buffer`, or nil when it holds a NaN or an infinity.
    ///
    /// One pass over the bit patterns: with the sign bit cleared, IEEE 754 floats order like
    /// unsigned integers, and every pattern from 0x7f800000 up is an infinity or a NaN. So a single
    /// unsigned max reduction (which the compiler vectorises) gives both the peak and the verdict;
    /// float max with its NaN rules and SIMD masks does not vectorise and cost 5x as much here.
    @_noLocks
    public static func peakIfFinite(_ buffer: UnsafePointer<Float>, frames: Int) -> Float? {
        let raw = UnsafeRawPointer(buffer)
        var largest: UInt32 = 0
        var i: Int32 = 0
        let count = Int32(truncatingIfNeeded: frames)
        while i < count {
            let magnitude = raw.load(fromByteOffset: Int(i) &* 4, as: UInt32.self) & 0x7fff_ffff
            largest = magnitude > largest ? magnitude : largest
            i &+= 1
        }
        return largest >= 0x7f80_0000 ? nil : Float(bitPattern: largest)
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
