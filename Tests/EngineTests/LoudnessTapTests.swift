import CAllocCounter
import Foundation
import Testing
@testable import Engine

/// Loudness taps (issue 19): what the process thread hands a loudness meter's thread, driven
/// without JACK (a port handle is the address of a test buffer).
@Suite("Engine: loudness taps")
struct LoudnessTapTests {
    /// Takes everything waiting in `tap`.
    func drain(_ tap: LoudnessTap) -> [Float] {
        var samples = [Float](repeating: .nan, count: tap.available)
        let taken = samples.withUnsafeMutableBufferPointer { tap.take(into: $0.baseAddress!, count: $0.count) }
        return Array(samples[..<taken])
    }

    @Test("a tapped input's samples and a tapped output's mix reach their taps, every sample, in order; untapped slots have none")
    func samplesReachTheTaps() throws {
        let buffers = EngineTests.Buffers()
        let engine = Engine(configuration: Engine.Configuration(), portBuffer: EngineTests.directBuffers)
        let a = buffers.make(128), b = buffers.make(128), out = buffers.make(128)
        var description = EngineTests().plan(inputs: [a, b], output: out, gains: [1, 0.5])
        description.inputs[0].tapGroup = 0
        description.outputs[0].tapGroup = 1
        _ = try engine.publish(description)
        #expect(engine.loudnessTap(input: 1) == nil, "input 1 is not tapped")
        let tapA = try #require(engine.loudnessTap(input: 0)), tapOut = try #require(engine.loudnessTap(output: 0))
        var heardA: [Float] = [], heardOut: [Float] = [], sentA: [Float] = [], mixed: [Float] = []
        for cycle in 0..<5 {
            for i in 0..<128 {
                a[i] = Float(cycle * 128 + i) / 1000
                b[i] = 0.25
            }
            engine.runCycle(frames: 128)
            sentA += UnsafeBufferPointer(start: a, count: 128)
            mixed += UnsafeBufferPointer(start: out, count: 128)
            if cycle % 2 == 1 {   // the reader comes now and then, takes all that waits
                heardA += drain(tapA)
                heardOut += drain(tapOut)
            }
        }
        heardA += drain(tapA)
        heardOut += drain(tapOut)
        #expect(heardA == sentA)
        #expect(heardOut == mixed, "the output tap carries exactly what the output got")
        #expect(engine.statistics.droppedTapSpans == 0)
    }

    @Test("a reader that falls behind: whole spans are dropped from every tap of its group at once (counted), so its channels stay aligned; another group's unread tap holds it up not; skipAll starts afresh")
    func fullTapsDropWholeSpans() throws {
        let buffers = EngineTests.Buffers()
        var configuration = Engine.Configuration()
        configuration.tapRingFrames = 1000   // rounded up to 1024: eight 128-frame cycles
        let engine = Engine(configuration: configuration, portBuffer: EngineTests.directBuffers)
        let a = buffers.make(128, 0.1), b = buffers.make(128, 0.2), out = buffers.make(128)
        var description = EngineTests().plan(inputs: [a, b], output: out, gains: [1, 1])
        description.inputs[0].tapGroup = 0
        description.inputs[1].tapGroup = 0
        description.outputs[0].tapGroup = 1   // a group nobody reads: it holds up no other
        _ = try engine.publish(description)
        let tapA = try #require(engine.loudnessTap(input: 0)), tapB = try #require(engine.loudnessTap(input: 1))
        for _ in 0..<8 { engine.runCycle(frames: 128) }
        #expect(tapA.available == 1024 && engine.statistics.droppedTapSpans == 0)
        let tapOut = try #require(engine.loudnessTap(output: 0))
        #expect(tapOut.available == 1024)
        // Room for half a cycle in tap B only (A read further): still nothing is written anywhere.
        var scratch = [Float](repeating: 0, count: 1024)
        _ = scratch.withUnsafeMutableBufferPointer { tapA.take(into: $0.baseAddress!, count: 256) }
        _ = scratch.withUnsafeMutableBufferPointer { tapB.take(into: $0.baseAddress!, count: 64) }
        tapOut.skipAll()   // the output's group has room again: it is written, the inputs' is not
        for _ in 0..<3 { engine.runCycle(frames: 128) }
        #expect(engine.statistics.droppedTapSpans == 3)
        #expect(tapOut.available == 384, "the output's group went on")
        #expect(tapA.available == 768 && tapB.available == 960, "neither written while one lacked room")
        tapA.skipAll()
        tapB.skipAll()
        engine.runCycle(frames: 128)
        #expect(tapA.available == 128 && tapB.available == 128, "aligned again after both were emptied")
        #expect(drain(tapB) == [Float](repeating: 0.2, count: 128))
    }

    @Test("cycles that write to taps, drop spans of a full group and read into a reader make no allocation on the process thread",
          .enabled(if: CAllocCounter_is_available() != 0, "allocations are not counted under a sanitizer"))
    func noAllocation() throws {
        let buffers = EngineTests.Buffers()
        var configuration = Engine.Configuration()
        configuration.tapRingFrames = 1024
        let engine = Engine(configuration: configuration, portBuffer: EngineTests.directBuffers)
        let a = buffers.make(128, 0.1), b = buffers.make(128, 0.2), out = buffers.make(128)
        var description = EngineTests().plan(inputs: [a, b], output: out, gains: [1, 1])
        description.inputs[0].tapGroup = 0
        description.inputs[1].tapGroup = 0
        description.outputs[0].tapGroup = 1
        _ = try engine.publish(description)
        engine.runCycle(frames: 128)   // the plan adopted first
        let tapOut = try #require(engine.loudnessTap(output: 0))
        var scratch = [Float](repeating: 0, count: 1024)
        #expect(CAllocCounter_is_active() != 0)
        CAllocCounter_watch(pthread_self())
        for cycle in 0..<64 {
            engine.runCycle(frames: 128)   // the inputs' group fills up and is dropped from; the output's is read
            if cycle % 4 == 3 { _ = scratch.withUnsafeMutableBufferPointer { tapOut.take(into: $0.baseAddress!, count: $0.count) } }
        }
        CAllocCounter_stop()
        #expect(CAllocCounter_allocations() == 0)
        #expect(engine.statistics.droppedTapSpans > 0, "the full group was dropped from")
    }
}
