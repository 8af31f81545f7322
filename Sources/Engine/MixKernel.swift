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
    /// contribution writes instead of adding (so no separate clearing pass). Returns whether any
    /// contribution was audible; when none was, `output` holds zeros.
    @_noLocks @discardableResult
    public static func vectorised(
        output: UnsafeMutablePointer<Float>,
        inputs: UnsafePointer<UnsafePointer<Float>>,
        contributions: UnsafePointer<MixContribution>,
        count: Int,
        gains: UnsafeMutablePointer<GainState>,
        frames: Int
    ) -> Bool {
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
        return wrote
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

    /// A block with a ramp in progress: while `i + 1 < remaining` the gain is
    /// `current + step * (i + 1)`; from the ramp's last sample on it is the target. The two parts
    /// are separate straight loops, so no lane needs a per-block compare and select.
    @_noLocks
    static func ramp(_ out: UnsafeMutablePointer<Float>, _ x: UnsafePointer<Float>,
                     state: GainState, frames: Int, assigning: Bool) {
        let ramped = min(Int(state.remaining) &- 1, frames)
        if assigning {
            rampAssign(out, x, start: state.current, step: state.step, frames: ramped)
        } else {
            rampAccumulate(out, x, start: state.current, step: state.step, frames: ramped)
        }
        if ramped < frames {
            let rest = frames &- ramped
            if assigning {
                assign(out + ramped, x + ramped, gain: state.target, frames: rest)
            } else {
                accumulate(out + ramped, x + ramped, gain: state.target, frames: rest)
            }
        }
    }

    /// `out[i] = (start + step * (i + 1)) * x[i]` for `i` in `0..<frames`.
    @_noLocks
    static func rampAssign(_ out: UnsafeMutablePointer<Float>, _ x: UnsafePointer<Float>,
                           start: Float, step: Float, frames: Int) {
        // Sample positions i + 1 of the lanes, kept as floats (exact up to 2^24) so the loop
        // needs no int-to-float conversion per block.
        var position = Lanes(1, 2, 3, 4, 5, 6, 7, 8)
        let starts = Lanes(repeating: start), steps = Lanes(repeating: step), eight = Lanes(repeating: 8)
        var i = 0
        while i &+ 8 <= frames {
            store((starts + steps * position) * load(x + i), out + i)
            position += eight
            i &+= 8
        }
        while i < frames {
            out[i] = (start + step * Float(Int32(truncatingIfNeeded: i &+ 1))) * x[i]
            i &+= 1
        }
    }

    /// `out[i] += (start + step * (i + 1)) * x[i]` for `i` in `0..<frames`.
    @_noLocks
    static func rampAccumulate(_ out: UnsafeMutablePointer<Float>, _ x: UnsafePointer<Float>,
                               start: Float, step: Float, frames: Int) {
        var position = Lanes(1, 2, 3, 4, 5, 6, 7, 8)
        let starts = Lanes(repeating: start), steps = Lanes(repeating: step), eight = Lanes(repeating: 8)
        var i = 0
        while i &+ 8 <= frames {
            store(load(out + i) + (starts + steps * position) * load(x + i), out + i)
            position += eight
            i &+= 8
        }
        while i < frames {
            out[i] += (start + step * Float(Int32(truncatingIfNeeded: i &+ 1))) * x[i]
            i &+= 1
        }
    }
}
