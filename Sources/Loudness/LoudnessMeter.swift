import CEbur128
import Foundation

/// The loudness of one app's or one route's channels by EBU R 128 (ITU-R BS.1770: K-weighting,
/// mean square over the channels): momentary (the last 400 ms) and short-term (the last 3 s), in
/// LUFS. libebur128 does the filtering; this feeds it blocks of separate channels.
///
/// Readings move in 100 ms steps (EBU Tech 3341 asks for 10 a second at least): libebur128 gives
/// each 100 ms block's mean square (`ebur128_loudness_window`, momentary mode, 400 ms of history),
/// and the last 4 and the last 30 of those are averaged here. Asking libebur128 for its own
/// short-term loudness instead re-sums 3 s of history at every ask and keeps 2.3 MB a stereo
/// meter; this keeps 300 KB and costs about as much as the filtering itself. A window is read
/// only once it is full: nothing (nil) until 400 ms, or 3 s, have been heard.
///
/// Every channel counts with weight 1, as BS.1770 weighs left, right and centre: an app or a
/// route here is a set of equal channels, not a surround layout (a 5.1 feed's LFE, if someone
/// routes one through, is not left out). One channel alone counts twice ("dual mono"): a mono app
/// is heard on both channels of a stereo route (`ChannelMap`), so it reads what it sounds like
/// there, 3 LU over the same channel counted once, and a voice in mono and a bed in stereo are
/// compared as they are heard.
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
    /// Frames in one 100 ms block, and how many of the current block have been fed.
    private let blockLength: Int
    private var inBlock = 0
    /// The mean square of the last 30 blocks (3 s), oldest first, and how many blocks were heard.
    private var energies: [Double] = []
    private var heard = 0

    /// nil when libebur128 refuses the layout (no channels, a rate outside 16 Hz-2.8 MHz) or
    /// cannot allocate.
    public init?(channels: Int, sampleRate: Int, blockFrames: Int = 4096) {
        guard channels > 0, channels <= 64, sampleRate > 0, blockFrames > 0,
              let state = Self.makeState(channels: channels, sampleRate: sampleRate) else { return nil }
        self.state = state
        self.channels = channels
        self.sampleRate = sampleRate
        self.blockFrames = blockFrames
        blockLength = max(sampleRate / 10, 1)
        interleaved = .allocate(capacity: channels * blockFrames)
        energies.reserveCapacity(Self.shortTermBlocks)
    }

    static let momentaryBlocks = 4
    static let shortTermBlocks = 30

    deinit {
        var dead: UnsafeMutablePointer<ebur128_state>? = state
        ebur128_destroy(&dead)
        interleaved.deallocate()
    }

    /// Feeds `frames` samples of every channel: `channel(c)` gives channel `c`'s samples.
    public func add(frames: Int, channel: (Int) -> UnsafePointer<Float>) {
        var done = 0
        while done < frames {
            // Pieces end where a 100 ms block ends, so each block's mean square can be read.
            let count = min(frames - done, blockFrames, blockLength - inBlock)
            interleave(count: count) { channel($0) + done }
            // In momentary mode with a valid layout, adding frames cannot fail (libebur128 1.2.6).
            ebur128_add_frames_float(state, interleaved, count)
            done += count
            inBlock += count
            if inBlock == blockLength {
                inBlock = 0
                endBlock()
            }
        }
    }

    /// Lays `count` frames of separate channels side by side in `interleaved`, as libebur128 takes
    /// them. Mono is a copy and stereo a loop of its own (counted in Int32, which the compiler
    /// vectorises; a strided loop over any channel count does not, and cost 2 ns a sample).
    private func interleave(count: Int, _ channel: (Int) -> UnsafePointer<Float>) {
        switch channels {
        case 1:
            interleaved.update(from: channel(0), count: count)
        case 2:
            let left = channel(0), right = channel(1)
            for i in 0..<Int32(count) {
                interleaved[Int(2 &* i)] = left[Int(i)]
                interleaved[Int(2 &* i &+ 1)] = right[Int(i)]
            }
        default:
            for c in 0..<channels {
                let source = channel(c)
                for i in 0..<count { interleaved[i &* channels &+ c] = source[i] }
            }
        }
    }

    /// The block just fed: its mean square joins the last 30.
    private func endBlock() {
        var loudness = -Double.infinity
        let energy = ebur128_loudness_window(state, 100, &loudness) == 0 && loudness.isFinite
            ? pow(10, (loudness + 0.691) / 10) : 0
        if energies.count == Self.shortTermBlocks { energies.removeFirst() }
        energies.append(energy)
        heard += 1
    }

    /// The mean square of each of the last (up to 30) 100 ms blocks, oldest first: what the
    /// readings are made of, for loudness over other spans (`LoudnessWorker.Reading`).
    public var recentBlocks: [Double] { energies }

    /// How many 100 ms blocks it has heard since it was made or reset.
    public var blocksHeard: Int { heard }

    /// Loudness of the last 400 ms, LUFS; nil while that is silence, or before 400 ms were heard.
    public var momentary: Double? { loudness(ofLast: Self.momentaryBlocks) }

    /// Loudness of the last 3 s, LUFS; nil while that is silence, or before 3 s were heard.
    public var shortTerm: Double? { loudness(ofLast: Self.shortTermBlocks) }

    /// BS.1770's loudness of the mean square of the last `blocks` blocks.
    private func loudness(ofLast blocks: Int) -> Double? {
        guard heard >= blocks else { return nil }
        return Self.loudness(ofLast: blocks, of: energies)
    }

    /// BS.1770's loudness (LUFS) of the mean of the last `count` block mean squares of `blocks`;
    /// nil when there are fewer, or they are silence.
    static func loudness(ofLast count: Int, of blocks: [Double]) -> Double? {
        guard count > 0, count <= blocks.count else { return nil }
        let mean = blocks.suffix(count).reduce(0, +) / Double(count)
        guard mean > 0 else { return nil }
        let value = -0.691 + 10 * log10(mean)
        return value.isFinite ? value : nil
    }

    /// Forgets everything heard (an app that went away and came back starts afresh); false when
    /// a new state could not be made (the old one, and what it heard, is kept).
    @discardableResult
    public func reset() -> Bool {
        guard let fresh = Self.makeState(channels: channels, sampleRate: sampleRate) else { return false }
        var dead: UnsafeMutablePointer<ebur128_state>? = state
        ebur128_destroy(&dead)
        state = fresh
        inBlock = 0
        energies.removeAll(keepingCapacity: true)
        heard = 0
        return true
    }

    /// A state in momentary mode (400 ms of history), every channel weighted 1; one channel alone
    /// counted twice (dual mono).
    private static func makeState(channels: Int, sampleRate: Int) -> UnsafeMutablePointer<ebur128_state>? {
        guard let state = ebur128_init(UInt32(channels), UInt(sampleRate), Int32(EBUR128_MODE_M.rawValue)) else { return nil }
        let kind = channels == 1 ? EBUR128_DUAL_MONO : EBUR128_LEFT
        for channel in 0..<channels where ebur128_set_channel(state, UInt32(channel), Int32(kind.rawValue)) != 0 {
            var dead: UnsafeMutablePointer<ebur128_state>? = state
            ebur128_destroy(&dead)
            return nil
        }
        return state
    }
}
