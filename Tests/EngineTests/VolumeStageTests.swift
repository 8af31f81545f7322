import Testing
import CAllocCounter
#if canImport(Glibc)
import Glibc
#endif
@testable import Engine

/// The volume stages: an app's volume on its input channels, a route's on its outputs, moving
/// along a curve.
@Suite("Volume stages")
struct VolumeStageTests {
    /// The gain the stage applies to each of `frames` samples from now, read by applying it to
    /// ones (blocks of `block`, advancing between them, as the engine does).
    static func gains(_ state: inout VolumeState, frames: Int, block: Int) -> [Float] {
        var out: [Float] = []
        let ones = [Float](repeating: 1, count: block)
        var buffer = [Float](repeating: 0, count: block)
        var done = 0
        while done < frames {
            let n = min(block, frames - done)
            ones.withUnsafeBufferPointer { x in
                buffer.withUnsafeMutableBufferPointer { o in state.apply(x.baseAddress!, to: o.baseAddress!, frames: n) }
            }
            out += buffer[0..<n]
            state.advance(by: n)
            done += n
        }
        return out
    }

    @Test("each curve is where it should be halfway: from volume 1.0 to 0.5 (gain 1 to 0.125), fader 0.75³, linear 0.5625, equal power √((1 + 0.125²) / 2)",
          arguments: [(GainCurve.fader, Float(0.421875)), (.linear, 0.5625), (.equalPower, (Float(1 + 0.015625) / 2).squareRoot())])
    func midpoints(curve: GainCurve, expected: Float) {
        var state = VolumeState(steady: 1)
        state.follow(VolumeTarget(gain: 0.125, rampFrames: 2000, curve: curve, serial: 1))
        let g = Self.gains(&state, frames: 2100, block: 64)
        #expect(abs(g[999] - expected) < 1e-4, "sample 1000: \(g[999])")
        #expect(g[1999] == 0.125 && g[2099] == 0.125, "ends exactly at the target")
        #expect(state == VolumeState(steady: 0.125, serial: 1) || (state.current == 0.125 && !state.isRamping))
    }

    @Test("the vector path is the curve sample by sample, across blocks of any length, and never steps more than the curve's steepest slope allows",
          arguments: GainCurve.allCases)
    func matchesCurve(curve: GainCurve) {
        for block in [1, 7, 64, 333] {
            var state = VolumeState(steady: 0.9)
            state.follow(VolumeTarget(gain: 0.01, rampFrames: 1000, curve: curve, serial: 7))
            var reference = state
            let g = Self.gains(&state, frames: 1100, block: block)
            for k in 1..<1000 {
                #expect(abs(g[k - 1] - reference.gain(after: Int32(k))) < 1e-5, "curve \(curve), block \(block), sample \(k)")
            }
            reference.advance(by: 1100)
            #expect(g[999] == 0.01 && reference.current == 0.01)
            // The steepest any of these curves gets from 0.9 to 0.01 over 1000 samples: well under
            // 0.01 a sample (a step straight to the target would be 0.89).
            let steps = zip(g.dropFirst(), g).map { abs($0 - $1) }
            #expect(steps.max()! < 0.01, "curve \(curve), block \(block): largest step \(steps.max()!)")
            #expect(abs(g[0] - 0.9) < 0.01, "starts where it was")
        }
    }

    @Test("the equal-power curve's vector square root is within 1e-6 of the true one, from 1e-12 to 256, and 0 at or below 0")
    func squareRoot() {
        var x: Float = 1e-12
        var worst: Float = 0
        while x < 256 {
            let lanes = SIMD8<Float>(x, x * 1.1, x * 1.2, x * 1.3, x * 1.4, x * 1.5, x * 1.6, x * 1.7)
            let roots = VolumeState.squareRoot(lanes)
            for l in 0..<8 { worst = max(worst, abs(roots[l] - lanes[l].squareRoot()) / lanes[l].squareRoot()) }
            x *= 1.9
        }
        #expect(worst < 1e-6, "worst relative error \(worst)")
        let edges = VolumeState.squareRoot(SIMD8<Float>(0, -1, -1e-20, 4, 0, 0, 0, 0))
        #expect(edges[0] == 0 && edges[1] == 0 && edges[2] == 0 && abs(edges[3] - 2) < 2e-6, "\(edges)")
    }

    @Test("the same request in a later plan leaves the ramp alone; a new one starts from where the sound is")
    func serials() {
        var state = VolumeState(steady: 1)
        state.follow(VolumeTarget(gain: 0, rampFrames: 1000, curve: .linear, serial: 1))
        state.advance(by: 500)
        #expect(abs(state.current - 0.5) < 1e-6)
        state.follow(VolumeTarget(gain: 0, rampFrames: 10, curve: .linear, serial: 1))
        state.advance(by: 100)
        #expect(abs(state.current - 0.4) < 1e-6, "same serial: the ramp of 1000 goes on")
        state.follow(VolumeTarget(gain: 1, rampFrames: 600, curve: .fader, serial: 2))
        let g = Self.gains(&state, frames: 600, block: 128)
        #expect(abs(g[0] - 0.4) < 0.01, "the new ramp starts at 0.4, where the sound is: \(g[0])")
        #expect(g[599] == 1)
        // A serial met again with another target is still followed (whoever counts serials
        // started again, the stage must not keep a volume it was told to leave).
        state.follow(VolumeTarget(gain: 0.5, rampFrames: 10, curve: .linear, serial: 2))
        state.advance(by: 10)
        #expect(state.current == 0.5 && state.target == 0.5)
    }

    /// An engine whose port handles are test buffers.
    static let directBuffers: PortBufferFunction = { port, _ in port }

    @Test("an app's volume applies before the mix and a route's after it; a stage is at its target at once on a new port, and ramps from there on")
    func inEngine() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = EngineTests.Buffers()
        let a = buffers.make(256, 1), b = buffers.make(256, 1), out = buffers.make(256)
        func plan(_ volumeA: Float, _ route: Float, ramp: Int32 = 1, serial: UInt32, curve: GainCurve = .linear) -> MixPlanDescription {
            var inputA = MixPlanDescription.Input(port: PortHandle(a), meterSlot: 0)
            inputA.volume = VolumeTarget(gain: volumeA, rampFrames: ramp, curve: curve, serial: serial)
            var inputB = MixPlanDescription.Input(port: PortHandle(b), meterSlot: 1)
            inputB.volume = VolumeTarget(gain: 1, rampFrames: 1, serial: 0)
            var output = MixPlanDescription.Output(port: PortHandle(out), meterSlot: 3, contributions: [
                MixContribution(input: 0, gainSlot: 0, target: 1, rampFrames: 1),
                MixContribution(input: 1, gainSlot: 1, target: 0.5, rampFrames: 1),
            ])
            output.volume = VolumeTarget(gain: route, rampFrames: ramp, curve: curve, serial: serial)
            return MixPlanDescription(inputs: [inputA, inputB], outputs: [output])
        }
        try engine.publish(plan(0.25, 0.5, serial: 1))
        engine.runCycle(frames: 256)
        // (1 × 0.25 + 1 × 0.5) × 0.5, from the first sample.
        #expect((0..<256).allSatisfy { out[$0] == 0.375 }, "\(out[0])")
        #expect(a[0] == 1, "the app's own buffer is never written")
        try engine.publish(plan(1, 1, ramp: 512, serial: 2, curve: .fader))
        engine.runCycle(frames: 256)
        // Halfway: the app at ((0.25^⅓ + 1) / 2)³, the route at ((0.5^⅓ + 1) / 2)³.
        let app = powf((cbrtf(0.25) + 1) / 2, 3), route = powf((cbrtf(0.5) + 1) / 2, 3)
        #expect(abs(out[255] - (app + 0.5) * route) < 1e-3, "\(out[255])")
        try engine.publish(plan(1, 1, ramp: 512, serial: 2, curve: .fader))
        engine.runCycle(frames: 256)
        #expect(out[255] == 1.5, "the same serial: the fade ran on to its end")
        #expect(engine.volumeState(input: 0).current == 1 && engine.volumeState(output: 3).current == 1)
    }

    @Test("a stage at silence silences its input; without a target it stays as it is; a NaN volume is refused")
    func silenceAndNoTarget() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = EngineTests.Buffers()
        let a = buffers.make(64, 1), out = buffers.make(64, 7)
        var input = MixPlanDescription.Input(port: PortHandle(a), meterSlot: 2)
        input.volume = VolumeTarget(gain: 0, rampFrames: 1, serial: 1)
        let output = MixPlanDescription.Output(port: PortHandle(out), meterSlot: 0, contributions: [
            MixContribution(input: 0, gainSlot: 0, target: 1, rampFrames: 1)])
        try engine.publish(MixPlanDescription(inputs: [input], outputs: [output]))
        engine.runCycle(frames: 64)
        #expect((0..<64).allSatisfy { out[$0] == 0 })
        input.volume = nil
        try engine.publish(MixPlanDescription(inputs: [input], outputs: [output]))
        engine.runCycle(frames: 64)
        #expect((0..<64).allSatisfy { out[$0] == 0 }, "no target: the stage stays at 0")
        input.volume = VolumeTarget(gain: .nan, rampFrames: 1, serial: 2)
        #expect(throws: MixPlanError.volumeNotFinite(meterSlot: 2)) { try engine.publish(MixPlanDescription(inputs: [input], outputs: [output])) }
    }

    @Test("a slot whose port changes starts at its target at once; a plan scheduled inside a cycle starts its fade on that sample")
    func newPortAndSplitCycle() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = EngineTests.Buffers()
        let a = buffers.make(128, 1), b = buffers.make(128, 1), out = buffers.make(128)
        func plan(_ port: UnsafeMutablePointer<Float>, gain: Float, ramp: Int32, serial: UInt32) -> MixPlanDescription {
            var input = MixPlanDescription.Input(port: PortHandle(port), meterSlot: 0)
            input.volume = VolumeTarget(gain: gain, rampFrames: ramp, serial: serial)
            return MixPlanDescription(inputs: [input], outputs: [.init(port: PortHandle(out), meterSlot: 0, contributions: [
                MixContribution(input: 0, gainSlot: 0, target: 1, rampFrames: 1)])])
        }
        try engine.publish(plan(a, gain: 0.25, ramp: 1, serial: 1))
        engine.runCycle(frames: 128)
        #expect(out[127] == 0.25)
        // Another port on slot 0 (the slot passed to another app, whose cells are new): at its
        // target from the first sample, whatever ramp it asked for.
        try engine.publish(plan(b, gain: 0.5, ramp: 10000, serial: 2))
        engine.runCycle(frames: 128)
        #expect(out[0] == 0.5 && out[127] == 0.5)
        // Scheduled at sample 64 of the next cycle: 64 samples at 0.5, then the fade, on its frame.
        var scheduled = plan(b, gain: 0, ramp: 64, serial: 3)
        scheduled.startFrame = 256 + 64
        try engine.publish(scheduled)
        engine.runCycle(frames: 128)
        #expect((0..<64).allSatisfy { out[$0] == 0.5 })
        #expect(abs(out[64] - 0.5 * 63 / 64) < 1e-6 && out[127] == 0, "\(out[64]) \(out[127])")
        #expect(engine.volumeState(input: 0).current == 0 && !engine.volumeState(input: 0).isRamping)
    }

    @Test("an input read twice (delayed and at once, while a look-ahead route crossfades) moves its stage once per cycle, and both paths hear the same gain")
    func readTwice() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = EngineTests.Buffers()
        let a = buffers.make(64, 1), now = buffers.make(64), late = buffers.make(64)
        var direct = MixPlanDescription.Input(port: PortHandle(a), meterSlot: 0)
        direct.volume = VolumeTarget(gain: 1, rampFrames: 1, serial: 1)
        var delayed = MixPlanDescription.Input(port: PortHandle(a), meterSlot: 0, delayed: true)
        delayed.volume = VolumeTarget(gain: 1, rampFrames: 1, serial: 1)
        var outputNow = MixPlanDescription.Output(port: PortHandle(now), meterSlot: 0, contributions: [MixContribution(input: 0, gainSlot: 0, target: 1, rampFrames: 1)])
        outputNow.volume = nil
        var outputLate = MixPlanDescription.Output(port: PortHandle(late), meterSlot: 1, contributions: [MixContribution(input: 1, gainSlot: 1, target: 1, rampFrames: 1)])
        outputLate.delayed = true
        var description = MixPlanDescription(inputs: [direct, delayed], outputs: [outputNow, outputLate])
        description.lookaheadFrames = 16
        try engine.publish(description)
        engine.runCycle(frames: 64)
        description.inputs[0].volume = VolumeTarget(gain: 0, rampFrames: 640, serial: 2)
        description.inputs[1].volume = VolumeTarget(gain: 0, rampFrames: 640, serial: 2)
        try engine.publish(description)
        engine.runCycle(frames: 64)
        #expect(abs(now[63] - 0.9) < 1e-5, "one cycle of ten: \(now[63])")
        #expect(abs(engine.volumeState(input: 0).current - 0.9) < 1e-5, "advanced once")
        #expect(abs(late[63] - 0.9) < 1e-5, "the delayed path at the same gain: \(late[63])")
    }

    @Test("adopting a fade and ramping every curve on inputs and outputs makes no allocation on the process thread",
          .enabled(if: CAllocCounter_is_available() != 0, "allocations are not counted under a sanitizer"))
    func noAllocation() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = EngineTests.Buffers()
        let a = buffers.make(128, 0.5), out = buffers.make(128)
        var description = EngineTests().plan(inputs: [a], output: out, gains: [1])
        description.inputs[0].volume = VolumeTarget(gain: 0.5, rampFrames: 1, serial: 1)
        description.outputs[0].volume = VolumeTarget(gain: 0.5, rampFrames: 1, serial: 1)
        try engine.publish(description)
        engine.runCycle(frames: 128)
        var serial: UInt32 = 2
        #expect(CAllocCounter_is_active() != 0)
        for curve in GainCurve.allCases {
            description.inputs[0].volume = VolumeTarget(gain: serial % 2 == 0 ? 1 : 0.1, rampFrames: 1000, curve: curve, serial: serial)
            description.outputs[0].volume = VolumeTarget(gain: serial % 2 == 0 ? 0.2 : 1, rampFrames: 700, curve: curve, serial: serial)
            serial += 1
            try engine.publish(description)
            CAllocCounter_watch(pthread_self())
            for _ in 0..<10 { engine.runCycle(frames: 128) }
            CAllocCounter_stop()
            #expect(CAllocCounter_allocations() == 0, "curve \(curve)")
        }
    }
}
