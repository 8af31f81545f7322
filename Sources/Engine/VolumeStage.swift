#if canImport(Glibc)
import Glibc
#endif

/// How a volume moves from where it is to where it is asked to go.
public enum GainCurve: UInt8, Sendable, CaseIterable {
    /// The amplitude moves in a straight line in time.
    case linear
    /// The fader moves in a straight line in time, through the cubic taper (volume = gain^⅓): a
    /// hand on a fader. From 1.0 to 0.5 over 2 s it is at 0.75 (-7.5 dB) after 1 s.
    case fader
    /// The power moves from where it is to where it goes along a smooth S in time (3t² − 2t³):
    /// two opposite fades of this curve always sum to the same power, and neither end has a
    /// corner (a straight line in power would drop to silence at an infinite slope).
    case equalPower
}

/// Where a volume stage is asked to go, and how.
public struct VolumeTarget: Equatable, Sendable {
    /// Linear gain, 0 or more (clamped to `Engine.maximumCellGain`).
    public var gain: Float
    public var rampFrames: Int32
    public var curve: GainCurve
    /// Which request this is. A plan whose serial differs from the stage's starts a ramp from where
    /// the sound is; the same serial in later plans leaves the running ramp alone.
    public var serial: UInt32

    public init(gain: Float, rampFrames: Int32, curve: GainCurve = .linear, serial: UInt32) {
        self.gain = gain
        self.rampFrames = rampFrames
        self.curve = curve
        self.serial = serial
    }
}

/// A volume stage: one gain per app input channel (the app's volume), applied to its samples
/// before the mix, or per route output channel (the route's volume), applied to the mixed
/// samples. Scenes fade these along a curve while ducking and audibility move the mix cells, so a
/// fade goes on under a duck and each keeps its own ramp.
///
/// While a ramp runs (`length > 0`), the gain after `k` samples of it, with `t = k / length`, is
/// `base + span·t` (linear), `(base + span·t)³` (fader) or `√(base + span·(3t² − 2t³))` (equal
/// power), where `base` and `span` are the curve's own measure of the gain at the start (the
/// gain, its cube root, its square) and of its change; from sample `length` on it is `target`
/// exactly.
public struct VolumeState: Equatable, Sendable {
    /// The gain at the last sample processed.
    public private(set) var current: Float
    public private(set) var target: Float
    public private(set) var curve: GainCurve
    public private(set) var serial: UInt32
    var base: Float = 0
    var span: Float = 0
    /// Samples of the ramp done, and its length (0: at rest at `current`).
    var position: Int32 = 0
    var length: Int32 = 0

    /// At rest at `gain`.
    @_noLocks
    public init(steady gain: Float, serial: UInt32 = 0) {
        current = gain
        target = gain
        curve = .linear
        self.serial = serial
    }

    /// `gain` within 0 and +24 dB (`Engine.maximumCellGain`, which a stage never exceeds either).
    @_noLocks @inline(__always)
    static func clamped(_ gain: Float) -> Float { Swift.min(Swift.max(gain, 0), 15.848932) }

    /// Unity, at rest: the stage leaves samples as they are.
    public static let unity = VolumeState(steady: 1)

    /// Whether the stage passes samples through untouched for the whole next block.
    public var isUnity: Bool { @_noLocks get { length == 0 && current == 1 } }
    /// Whether it silences them for the whole next block.
    public var isSilent: Bool { @_noLocks get { length == 0 && current == 0 } }
    /// Whether a ramp is running.
    public var isRamping: Bool { @_noLocks get { length > 0 } }

    /// Starts the ramp `request` asks for, from where the sound is, unless it is the request the
    /// stage already follows (its serial, to the same target: a serial met again with another
    /// target is a new request all the same).
    @_noLocks
    public mutating func follow(_ request: VolumeTarget) {
        let goal = Self.clamped(request.gain)
        guard request.serial != serial || goal != target else { return }
        serial = request.serial
        target = goal
        curve = request.curve
        position = 0
        if goal == current {
            length = 0
            return
        }
        length = Swift.max(request.rampFrames, 1)
        switch request.curve {
        case .linear:
            base = current
            span = goal - current
        case .fader:
            // cbrtf takes no lock and allocates nothing (libm).
            let (from, to) = _unsafePerformance { (cbrtf(current), cbrtf(goal)) }
            base = from
            span = to - from
        case .equalPower:
            base = current * current
            span = goal * goal - base
        }
    }

    /// The gain after `k` samples of the running ramp (1 ≤ k < length).
    @_noLocks @inline(__always)
    func gain(after k: Int32) -> Float {
        let t = Float(k) * (1 / Float(length))
        switch curve {
        case .linear:
            return base + span * t
        case .fader:
            let u = base + span * t
            return u * u * u
        case .equalPower:
            let u = base + span * (t * t * (3 - 2 * t))
            return u > 0 ? _unsafePerformance { u.squareRoot() } : 0
        }
    }

    /// √x in every lane (0 where x ≤ 0), by Newton's method from the classic bit-level estimate of
    /// 1/√x: three steps take it to float precision (relative error under 1e-6), all of it plain
    /// vector arithmetic (the square root instruction is not reached from Swift's SIMD types
    /// without a call per lane, which made equal-power fades cost three times the others).
    @_noLocks @inline(__always)
    static func squareRoot(_ x: SIMD8<Float>) -> SIMD8<Float> {
        let tiny = SIMD8<Float>(repeating: 1e-30)
        let positive = x.replacing(with: tiny, where: x .< tiny)
        let bits = unsafeBitCast(positive, to: SIMD8<UInt32>.self)
        var y = unsafeBitCast(SIMD8<UInt32>(repeating: 0x5f37_59df) &- (bits &>> 1), to: SIMD8<Float>.self)
        let half = positive * 0.5
        y = y * (1.5 - half * y * y)
        y = y * (1.5 - half * y * y)
        y = y * (1.5 - half * y * y)
        return (positive * y).replacing(with: 0, where: x .<= 0)
    }

    /// Moves the stage on by `frames` samples.
    @_noLocks
    public mutating func advance(by frames: Int) {
        guard length > 0 else { return }
        let left = Int(length - position)
        if frames >= left {
            current = target
            position = 0
            length = 0
        } else {
            position += Int32(truncatingIfNeeded: frames)
            current = gain(after: position)
        }
    }

    /// `out[i] = gain(i) * x[i]` for the next `frames` samples (`out` may be `x`); the stage itself
    /// does not move (`advance` does, once, whatever reads it).
    @_noLocks
    public func apply(_ x: UnsafePointer<Float>, to out: UnsafeMutablePointer<Float>, frames: Int) {
        if length == 0 {
            let gain = current
            var i = 0
            let g = SIMD8<Float>(repeating: gain)
            while i &+ 8 <= frames {
                let v = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD8<Float>.self)
                UnsafeMutableRawPointer(out + i).storeBytes(of: g * v, as: SIMD8<Float>.self)
                i &+= 8
            }
            while i < frames { out[i] = gain * x[i]; i &+= 1 }
            return
        }
        // Samples on the curve, then the rest at the target.
        let ramped = Swift.min(Int(length - position) &- 1, frames)
        let inverse = SIMD8<Float>(repeating: 1 / Float(length))
        var k = SIMD8<Float>(1, 2, 3, 4, 5, 6, 7, 8) + SIMD8(repeating: Float(position))
        let bases = SIMD8<Float>(repeating: base), spans = SIMD8<Float>(repeating: span)
        let eight = SIMD8<Float>(repeating: 8), two = SIMD8<Float>(repeating: 2), three = SIMD8<Float>(repeating: 3)
        var i = 0
        // One loop per curve, so each is a straight run of vector arithmetic.
        @inline(__always) func store(_ g: SIMD8<Float>, _ i: Int) {
            let v = UnsafeRawPointer(x + i).loadUnaligned(as: SIMD8<Float>.self)
            UnsafeMutableRawPointer(out + i).storeBytes(of: g * v, as: SIMD8<Float>.self)
        }
        switch curve {
        case .linear:
            while i &+ 8 <= ramped {
                store(bases + spans * (k * inverse), i)
                k += eight
                i &+= 8
            }
        case .fader:
            while i &+ 8 <= ramped {
                let u = bases + spans * (k * inverse)
                store(u * u * u, i)
                k += eight
                i &+= 8
            }
        case .equalPower:
            while i &+ 8 <= ramped {
                let t = k * inverse
                store(Self.squareRoot(bases + spans * (t * t * (three - two * t))), i)
                k += eight
                i &+= 8
            }
        }
        while i < ramped {
            out[i] = gain(after: position &+ Int32(truncatingIfNeeded: i &+ 1)) * x[i]
            i &+= 1
        }
        let gain = target
        while i < frames { out[i] = gain * x[i]; i &+= 1 }
    }
}
