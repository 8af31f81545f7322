import CEbur128

/// The loudness of one app's or one route's channels by EBU R 128 (ITU-R BS.1770: K-weighting,
/// mean square over the channels): momentary (the last 400 ms) and short-term (the last 3 s), in
/// LUFS. libebur128 does the filtering; this feeds it blocks of separate channels.
///
/// Every channel counts with weight 1, as BS.1770 weighs left, right and centre: an app or a
/// route here is a set of equal channels, not a surround layout (a mono app is one channel, not
/// "dual mono"; a 5.1 feed's LFE, if someone routes one through, is not left out).
///
/// Owns: its libebur128 state and an interleaving buffer, both allocated at init. Not for the
/// process thread (libebur128 filters in place and is not real-time safe in every call); one
/// thread at a time.
public final class LoudnessMeter {
    public let channels: Int
    public let sampleRate: Int
    /// The most frames one `add` takes; longer blocks are fed in pieces.
    public let blockFrames: Int
    private var state: UnsafeMutablePointer<ebur128_state>
    private let interleaved: UnsafeMutablePointer<Float>

    /// nil when libebur128 refuses the layout (no channels, a rate outside 16 Hz-2.8 MHz) or
    /// cannot allocate.
    public init?(channels: Int, sampleRate: Int, blockFrames: Int = 4096) {
        guard channels > 0, channels <= 64, sampleRate > 0, blockFrames > 0,
              let state = Self.makeState(channels: channels, sampleRate: sampleRate) else { return nil }
        self.state = state
        self.channels = channels
        self.sampleRate = sampleRate
        self.blockFrames = blockFrames
        interleaved = .allocate(capacity: channels * blockFrames)
    }

    deinit {
        var dead: UnsafeMutablePointer<ebur128_state>? = state
        ebur128_destroy(&dead)
        interleaved.deallocate()
    }

    /// Feeds `frames` samples of every channel: `channel(c)` gives channel `c`'s samples.
    public func add(frames: Int, channel: (Int) -> UnsafePointer<Float>) {
        var done = 0
        while done < frames {
            let count = min(frames - done, blockFrames)
            for c in 0..<channels {
                let source = channel(c) + done
                for i in 0..<count { interleaved[i * channels + c] = source[i] }
            }
            ebur128_add_frames_float(state, interleaved, count)
            done += count
        }
    }

    /// Loudness of the last 400 ms, LUFS; nil while that is silence (or before any block).
    public var momentary: Double? { Self.finite { ebur128_loudness_momentary(state, &$0) } }

    /// Loudness of the last 3 s, LUFS; nil while that is silence (or before any block).
    public var shortTerm: Double? { Self.finite { ebur128_loudness_shortterm(state, &$0) } }

    /// Forgets everything heard (an app that went away and came back starts afresh); false when
    /// a new state could not be made (the old one, and what it heard, is kept).
    @discardableResult
    public func reset() -> Bool {
        guard let fresh = Self.makeState(channels: channels, sampleRate: sampleRate) else { return false }
        var dead: UnsafeMutablePointer<ebur128_state>? = state
        ebur128_destroy(&dead)
        state = fresh
        return true
    }

    /// A state measuring momentary and short-term loudness, every channel weighted 1.
    private static func makeState(channels: Int, sampleRate: Int) -> UnsafeMutablePointer<ebur128_state>? {
        guard let state = ebur128_init(UInt32(channels), UInt(sampleRate), Int32(EBUR128_MODE_S.rawValue)) else { return nil }
        for channel in 0..<channels where ebur128_set_channel(state, UInt32(channel), Int32(EBUR128_LEFT.rawValue)) != 0 {
            var dead: UnsafeMutablePointer<ebur128_state>? = state
            ebur128_destroy(&dead)
            return nil
        }
        return state
    }

    private static func finite(_ read: (inout Double) -> Int32) -> Double? {
        var value = -Double.infinity
        guard read(&value) == 0, value.isFinite else { return nil }
        return value
    }
}
