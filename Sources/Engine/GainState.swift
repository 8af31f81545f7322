/// The per-sample gain of one mix cell (one input channel into one output channel).
///
/// The control thread only ever sets a target and a ramp length; the audio thread moves `current`
/// toward `target` linearly, one step per sample, so no gain change ever reaches the output as a
/// step. While `remaining > 0` the gain at frame `i` of the next block is
/// `i + 1 >= remaining ? target : current + step * (i + 1)`; when the ramp ends `current` is set to
/// `target` exactly, so a ramp to silence ends at true zero.
public struct GainState: Equatable, Sendable {
    public var current: Float
    public var target: Float
    public var step: Float
    public var remaining: Int32

    @_noLocks @inlinable
    public init(current: Float = 0, target: Float = 0, step: Float = 0, remaining: Int32 = 0) {
        self.current = current
        self.target = target
        self.step = step
        self.remaining = remaining
    }

    /// A cell at rest at silence.
    public static let silent = GainState(current: 0, target: 0, step: 0, remaining: 0)

    /// A cell at rest at `gain`.
    public static func steady(_ gain: Float) -> GainState {
        GainState(current: gain, target: gain)
    }

    /// Starts a ramp from the current gain to `newTarget` over `frames` samples (at least 1).
    /// Asking again for the target already being approached keeps the ramp that is running.
    @_noLocks @inlinable
    public mutating func retarget(_ newTarget: Float, frames: Int32) {
        if newTarget == target { return }
        let length = max(frames, 1)
        target = newTarget
        step = (newTarget - current) / Float(length)
        remaining = length
        if current == newTarget { remaining = 0; step = 0 }
    }

    /// Moves the state on by `frames` samples, as the kernels do after a block.
    @_noLocks @inlinable
    public mutating func advance(by frames: Int) {
        if remaining == 0 { return }
        if Int(remaining) <= frames {
            current = target
            remaining = 0
            step = 0
        } else {
            current = current + step * Float(Int32(truncatingIfNeeded: frames))
            remaining -= Int32(truncatingIfNeeded: frames)
        }
    }

    /// Whether this cell contributes exactly nothing for the whole next block.
    public var isSilent: Bool {
        @_noLocks get { remaining == 0 && target == 0 }
    }
}
