import CMixReference
import Testing
@testable import Engine

/// The kernel family: the vectorised kernel (and the C yardstick) against the scalar reference.
@Suite("Mix kernel family")
struct MixKernelTests {
    /// A deterministic scene: `inputCount` inputs of noise, each a contribution with its own gain,
    /// some steady, some ramping (ramps of one sample, ending inside, in the last lanes of, at the end of
    /// and after the block), some silent.
    struct Scene {
        var inputs: [[Float]]
        var contributions: [MixContribution]
        var gains: [GainState]

        init(inputCount: Int, frames: Int, seed: UInt64) {
            var rng = SplitMix(seed: seed)
            inputs = (0..<inputCount).map { _ in (0..<frames).map { _ in rng.nextFloat() * 2 - 1 } }
            contributions = []
            gains = []
            for i in 0..<inputCount {
                let slot = Int32(i * 3 + 1) // not the identity, to catch slot/input mix-ups
                while gains.count <= Int(slot) { gains.append(GainState()) }
                var state = GainState.steady(rng.nextFloat() * 2)
                switch i % 7 {
                case 1: state.retarget(rng.nextFloat(), frames: Int32(max(1, frames / 2 + 1)))
                case 2: state.retarget(rng.nextFloat() * 3, frames: Int32(frames))
                case 3: state.retarget(0, frames: Int32(frames * 2 + 3))
                case 4: state = .silent
                case 5: state.retarget(rng.nextFloat(), frames: 1) // jumps at the first sample
                case 6: state.retarget(rng.nextFloat(), frames: Int32(max(1, frames - 9))) // ends in the scalar tail
                default: break
                }
                gains[Int(slot)] = state
                contributions.append(MixContribution(input: Int32(i), gainSlot: slot, target: state.target, rampFrames: 1))
            }
        }
    }

    /// The engine's kernel in the family's shape (it also says whether anything was audible).
    static func vectorised(_ output: UnsafeMutablePointer<Float>, _ inputs: UnsafePointer<UnsafePointer<Float>>,
                           _ contributions: UnsafePointer<MixContribution>, _ count: Int,
                           _ gains: UnsafeMutablePointer<GainState>, _ frames: Int) {
        _ = MixKernel.vectorised(output: output, inputs: inputs, contributions: contributions, count: count, gains: gains, frames: frames)
    }

    static func run(_ kernel: MixKernel.Function, _ scene: Scene, frames: Int) -> (output: [Float], gains: [GainState]) {
        var gains = scene.gains
        var output = [Float](repeating: .nan, count: frames) // kernels must overwrite every sample
        let buffers = scene.inputs.map { input -> UnsafeMutablePointer<Float> in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: max(input.count, 1))
            p.initialize(from: input, count: input.count)
            return p
        }
        defer { buffers.forEach { $0.deallocate() } }
        let pointers = buffers.map { UnsafePointer($0) }
        pointers.withUnsafeBufferPointer { inputs in
            scene.contributions.withUnsafeBufferPointer { contributions in
                gains.withUnsafeMutableBufferPointer { g in
                    output.withUnsafeMutableBufferPointer { out in
                        kernel(out.baseAddress!, inputs.baseAddress ?? UnsafePointer(bitPattern: 8)!,
                               contributions.baseAddress ?? UnsafePointer(bitPattern: 8)!,
                               contributions.count, g.baseAddress ?? UnsafeMutablePointer(bitPattern: 8)!, frames)
                    }
                }
            }
        }
        return (output, gains)
    }

    /// The C yardstick in the kernel's shape (the structs have the same layout).
    static func cKernel(_ output: UnsafeMutablePointer<Float>, _ inputs: UnsafePointer<UnsafePointer<Float>>,
                        _ contributions: UnsafePointer<MixContribution>, _ count: Int,
                        _ gains: UnsafeMutablePointer<GainState>, _ frames: Int) {
        let cInputs = UnsafeRawPointer(inputs).assumingMemoryBound(to: UnsafePointer<Float>?.self)
        let cContributions = UnsafeRawPointer(contributions).assumingMemoryBound(to: CMixReference_Contribution.self)
        let cGains = UnsafeMutableRawPointer(gains).assumingMemoryBound(to: CMixReference_GainState.self)
        CMixReference_mix_bus(output, cInputs, cContributions, Int32(count), cGains, Int32(frames))
    }

    static func expectClose(_ a: [Float], _ b: [Float], _ label: String) {
        #expect(a.count == b.count)
        var worst: Float = 0
        for (x, y) in zip(a, b) {
            // FMA and summation order may change the last bits: relative 1e-5, absolute 1e-6.
            worst = max(worst, abs(x - y) / max(1, abs(y)))
        }
        #expect(worst <= 1e-5, "\(label): largest relative difference \(worst)")
    }

    @Test("vectorised and C kernels match the reference", arguments: [0, 1, 2, 7, 64, 256])
    func matchesReference(inputCount: Int) {
        for frames in [16, 17, 31, 64, 100, 128, 255, 256, 1000, 1024, 2048, 4095, 4096] {
            let scene = Scene(inputCount: inputCount, frames: frames, seed: UInt64(inputCount * 10007 + frames))
            let reference = Self.run(MixKernel.reference, scene, frames: frames)
            let fast = Self.run(Self.vectorised, scene, frames: frames)
            let c = Self.run(Self.cKernel, scene, frames: frames)
            Self.expectClose(fast.output, reference.output, "vectorised, \(inputCount) inputs, \(frames) frames")
            Self.expectClose(c.output, reference.output, "C, \(inputCount) inputs, \(frames) frames")
            #expect(fast.gains == reference.gains, "gain states advance alike")
            #expect(c.gains == reference.gains, "C gain states advance alike")
        }
    }

    /// The engine skips the peak scan of an output the kernel says nothing was audible on, so
    /// that answer must be exact: false only when every sample written is zero.
    @Test("the kernel says whether any contribution was audible: none, all silent, one ramping to silence, one steady")
    func saysWhetherAudible() {
        var audible = true
        let kernel: MixKernel.Function = { output, inputs, contributions, count, gains, frames in
            audible = MixKernel.vectorised(output: output, inputs: inputs, contributions: contributions, count: count, gains: gains, frames: frames)
        }
        let none = Self.run(kernel, Scene(inputCount: 0, frames: 64, seed: 3), frames: 64)
        #expect(!audible && none.output.allSatisfy { $0 == 0 })

        var scene = Scene(inputCount: 1, frames: 64, seed: 4)
        scene.inputs[0] = [Float](repeating: 1, count: 64)
        scene.gains[1] = .silent
        let silent = Self.run(kernel, scene, frames: 64)
        #expect(!audible && silent.output.allSatisfy { $0 == 0 }, "a silent cell")

        var fading = GainState.steady(1)
        fading.retarget(0, frames: 32)
        scene.gains[1] = fading
        let faded = Self.run(kernel, scene, frames: 64)
        #expect(audible && faded.output[0] > 0, "a cell fading to silence within the block is audible")

        scene.gains[1] = .steady(0.5)
        let steady = Self.run(kernel, scene, frames: 64)
        #expect(audible && steady.output.allSatisfy { $0 == 0.5 })
    }

    @Test("no contributions write silence")
    func noInputsIsSilence() {
        let scene = Scene(inputCount: 0, frames: 33, seed: 1)
        #expect(Self.run(Self.vectorised, scene, frames: 33).output == [Float](repeating: 0, count: 33))
        #expect(Self.run(MixKernel.reference, scene, frames: 33).output == [Float](repeating: 0, count: 33))
    }

    @Test("a ramp moves by equal steps and lands exactly on its target")
    func rampShape() {
        var scene = Scene(inputCount: 1, frames: 64, seed: 2)
        scene.inputs[0] = [Float](repeating: 1, count: 64)
        var state = GainState.steady(1)
        state.retarget(0.1, frames: 40)
        scene.gains[1] = state
        let (output, gains) = Self.run(Self.vectorised, scene, frames: 64)
        let step: Float = 0.9 / 40
        for i in 1..<40 { #expect(abs((output[i - 1] - output[i]) - step) < 1e-6) }
        for i in 39..<64 { #expect(output[i] == 0.1) }
        #expect(gains[1] == .steady(0.1))
    }
}

/// A small deterministic generator, so failures reproduce.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func nextFloat() -> Float { Float(next() >> 40) / Float(1 << 24) }
}
