/// The mix kernel family: sum the contributions of many input channels into one output channel,
/// each through its own ramping gain.
///
/// `output[i] = Σ gain_c(i) · inputs[c.input][i]` for `i` in `0..<frames`, in contribution order,
/// with `gain_c(i)` as documented on `GainState`; every contribution's gain state is then advanced
/// by `frames`. No contributions write silence. Inputs must be finite (the engine sanitises them).
///
/// `reference` is the plain scalar definition; `vectorised` is the one the engine runs. Tests hold
/// the vectorised kernel to the reference within a float tolerance (FMA may change the last bits).
public enum MixKernel {
    public typealias Function = (
        _ output: UnsafeMutablePointer<Float>,
        _ inputs: UnsafePointer<UnsafePointer<Float>>,
        _ contributions: UnsafePointer<MixContribution>,
        _ count: Int,
        _ gains: UnsafeMutablePointer<GainState>,
        _ frames: Int
    ) -> Void

    /// The scalar reference: one sample at a time, exactly as the definition reads.
    @_noLocks
    public static func reference(
        output: UnsafeMutablePointer<Float>,
        inputs: UnsafePointer<UnsafePointer<Float>>,
        contributions: UnsafePointer<MixContribution>,
        count: Int,
        gains: UnsafeMutablePointer<GainState>,
        frames: Int
    ) {
        var i = 0
        while i < frames { output[i] = 0; i += 1 }
        var c = 0
        while c < count {
            let contribution = contributions[c]
            let input = inputs[Int(contribution.input)]
            let state = gains[Int(contribution.gainSlot)]
            var f = 0
            while f < frames {
                let gain: Float
                if state.remaining > 0 {
                    gain = f + 1 >= Int(state.remaining)
                        ? state.target
                        : state.current + state.step * Float(f + 1)
                } else {
                    gain = state.current
                }
                output[f] += gain * input[f]
                f += 1
            }
            gains[Int(contribution.gainSlot)].advance(by: frames)
            c += 1
        }
    }

    /// The kernel the engine runs: explicit 8-lane SIMD, silent cells skipped, the first audible
    /// contribution writes instead of adding (so no separate clearing pass).
    @_noLocks
    public static func vectorised(
        output: UnsafeMutablePointer<Float>,
        inputs: UnsafePointer<UnsafePointer<Float>>,
        contributions: UnsafePointer<MixContribution>,
        count: Int,
        gains: UnsafeMutablePointer<GainState>,
        frames: Int
    ) {
        var wrote = false
        var c = 0
        while c < count {
            let contribution = contributions[c]
            let slot = gains + Int(contribution.gainSlot)
            c += 1
            if slot.pointee.isSilent { continue }
            let input = inputs[Int(contribution.input)]
            if slot.pointee.remaining == 0 {
                if wrote {
                    accumulate(output, input, gain: slot.pointee.current, frames: frames)
                } else {
                    assign(output, input, gain: slot.pointee.current, frames: frames)
                }
            } else {
                ramp(output, input, state: slot.pointee, frames: frames, assigning: !wrote)
                slot.pointee.advance(by: frames)
            }
            wrote = true
        }
        if !wrote { clear(output, frames: frames) }
    }

    // MARK: - Vector loops

    private typealias Lanes = SIMD8<Float>

    @_noLocks @inline(__always)
    private static func load(_ p: UnsafePointer<Float>) -> Lanes {
        UnsafeRawPointer(p).loadUnaligned(as: Lanes.self)
    }

    @_noLocks @inline(__always)
    private static func store(_ v: Lanes, _ p: UnsafeMutablePointer<Float>) {
        UnsafeMutableRawPointer(p).storeBytes(of: v, as: Lanes.self)
    }

    @_noLocks
    static func clear(_ output: UnsafeMutablePointer<Float>, frames: Int) {
        output.update(repeating: 0, count: frames)
    }

    @_noLocks
    static func assign(_ out: UnsafeMutablePointer<Float>, _ x: UnsafePointer<Float>,
                       gain: Float, frames: Int) {
        let g = Lanes(repeating: gain)
        var i = 0
        while i &+ 8 <= frames {
            store(g * load(x + i), out + i)
            i &+= 8
        }
        while i < frames { out[i] = gain * x[i]; i &+= 1 }
    }

    @_noLocks
    static func accumulate(_ out: UnsafeMutablePointer<Float>, _ x: UnsafePointer<Float>,
                           gain: Float, frames: Int) {
        let g = Lanes(repeating: gain)
        var i = 0
        while i &+ 8 <= frames {
            store(load(out + i) + g * load(x + i), out + i)
            i &+= 8
        }
        while i < frames { out[i] += gain * x[i]; i &+= 1 }
    }

    /// A block with a ramp in progress: the ramped part lane by lane with the end of the ramp
    /// selected per lane, then the rest at the target gain.
    @_noLocks
    static func ramp(_ out: UnsafeMutablePointer<Float>, _ x: UnsafePointer<Float>,
                     state: GainState, frames: Int, assigning: Bool) {
        let rampEnd = min(Int(state.remaining), frames)
        let start = Lanes(repeating: state.current)
        let step = Lanes(repeating: state.step)
        let target = Lanes(repeating: state.target)
        let remaining = Lanes(repeating: Float(state.remaining))
        // Sample positions i + 1 of the lanes, kept as floats (exact up to 2^24) so the loop
        // needs no int-to-float conversion per block.
        var position = Lanes(1, 2, 3, 4, 5, 6, 7, 8)
        let eight = Lanes(repeating: 8)
        var i = 0
        while i &+ 8 <= rampEnd {
            var g = start + step * position
            g.replace(with: target, where: position .>= remaining)
            let base = assigning ? Lanes() : load(out + i)
            store(base + g * load(x + i), out + i)
            position += eight
            i &+= 8
        }
        while i < rampEnd {
            let p = Float(Int32(truncatingIfNeeded: i &+ 1))
            let g = i &+ 1 >= Int(state.remaining) ? state.target : state.current + state.step * p
            out[i] = (assigning ? 0 : out[i]) + g * x[i]
            i &+= 1
        }
        if rampEnd < frames {
            let rest = frames &- rampEnd
            if assigning {
                assign(out + rampEnd, x + rampEnd, gain: state.target, frames: rest)
            } else {
                accumulate(out + rampEnd, x + rampEnd, gain: state.target, frames: rest)
            }
        }
    }
}
