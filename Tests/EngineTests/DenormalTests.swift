import CFloatEnvironment
import Testing
@testable import Engine

/// Subnormal floats (below 1.18e-38) take a slow path in many floating-point units; audio makes
/// them wherever a signal decays. The process thread flushes them to zero (issue 15, defect 7).
@Suite("Engine: denormals")
struct DenormalTests {
    @Test("a process cycle leaves flush-to-zero and denormals-are-zero on for its thread, and a subnormal input mixes to exact zero")
    func cycleFlushesDenormals() throws {
        let before = CFloatEnvironment_denormals_flushed()
        defer { CFloatEnvironment_set_denormals_flushed(before) }
        CFloatEnvironment_set_denormals_flushed(0)
        #expect(CFloatEnvironment_denormals_flushed() == 0, "the test starts with flushing off")
        let subnormal = Float(bitPattern: 0x0001_16c2)   // 1e-40 (the literal warns: it underflows)
        #expect(subnormal.isSubnormal)

        let engine = Engine(portBuffer: EngineTests.directBuffers)
        let buffers = EngineTests.Buffers()
        let input = buffers.make(64, subnormal), output = buffers.make(64, 1)
        try engine.publish(MixPlanDescription(
            inputs: [.init(port: PortHandle(input), meterSlot: 0)],
            outputs: [.init(port: PortHandle(output), meterSlot: 0,
                            contributions: [MixContribution(input: 0, gainSlot: 0, target: 0.5, rampFrames: 1)])]))
        engine.runCycle(frames: 64)

        #expect(CFloatEnvironment_denormals_flushed() == 1, "the cycle turned flushing on for its thread")
        // Bit patterns: with denormals-are-zero on, `x == 0` holds for a subnormal x too.
        let nonZero = (0..<64).filter { output[$0].bitPattern != 0 }
        #expect(nonZero.isEmpty, "0.5 × 1e-40 came out as \(nonZero.first.map { output[$0] } ?? 0), not 0")
    }

    @Test("flushing is idempotent: a thread that already flushes keeps flushing")
    func flushKeepsOtherBits() {
        let before = CFloatEnvironment_denormals_flushed()
        defer { CFloatEnvironment_set_denormals_flushed(before) }
        CFloatEnvironment_set_denormals_flushed(0)
        CFloatEnvironment_flush_denormals()
        #expect(CFloatEnvironment_denormals_flushed() == 1)
        CFloatEnvironment_flush_denormals()
        #expect(CFloatEnvironment_denormals_flushed() == 1, "a second call keeps it on")
    }
}
