import Engine
import Testing
@testable import RouterCore

/// The plan compiler and publisher driven against a real engine without JACK: a port handle is the
/// address of a test buffer, and cycles run on the test's thread.
@Suite("Plan publisher")
struct PlanPublisherTests {
    static let directBuffers: PortBufferFunction = { port, _ in port }

    /// An engine whose port buffers are the handles themselves (test memory), for up to `maxFrames`.
    static func engine(maxFrames: Int) -> Engine {
        var configuration = Engine.Configuration()
        configuration.maxFrames = maxFrames
        return Engine(configuration: configuration, portBuffer: directBuffers)
    }

    final class Buffers {
        var storage: [UnsafeMutablePointer<Float>] = []
        func make(_ frames: Int, _ value: Float = 0) -> PortHandle {
            let p = UnsafeMutablePointer<Float>.allocate(capacity: frames)
            p.initialize(repeating: value, count: frames)
            storage.append(p)
            return PortHandle(p)
        }
        deinit { storage.forEach { $0.deallocate() } }
    }

    static func samples(_ port: PortHandle, _ frames: Int) -> [Float] {
        let p = port.pointer.assumingMemoryBound(to: Float.self)
        return (0..<frames).map { p[$0] }
    }

    /// One input on one output at `gain` (0: not wanted).
    static func matrix(_ input: PortHandle, _ output: PortHandle, gain: Float, ramp: Int32 = 64) -> RoutingMatrix {
        var matrix = RoutingMatrix(rampFrames: ramp)
        matrix.inputs = [.init(port: input, meterSlot: 0)]
        matrix.outputs = [.init(port: output, meterSlot: 0, feeds: gain > 0 ? [.init(input: 0, gain: gain, rampFrames: ramp)] : [])]
        return matrix
    }

    @Test("a fade that waits behind a scheduled plan is heard whole: its cell is freed by adopted generation, however long the wait")
    func fadeBehindScheduledPlan() throws {
        let engine = Self.engine(maxFrames: 256)
        let buffers = Buffers()
        let input = buffers.make(256, 0.5), output = buffers.make(256)
        var publisher = PlanPublisher(gainSlotCapacity: 16)
        _ = try publisher.publish(Self.matrix(input, output, gain: 1), on: engine)
        engine.runCycle(frames: 256)   // the new cell rises from silence over its ramp
        engine.runCycle(frames: 256)
        #expect(Self.samples(output, 256).allSatisfy { $0 == 0.5 })

        // A plan scheduled far ahead holds back everything behind it; the fade is queued behind it.
        let scheduledAt = UInt32(engine.statistics.processedFrames) + 100_000
        _ = try publisher.publish(Self.matrix(input, output, gain: 1), on: engine, startFrame: scheduledAt)
        _ = try publisher.publish(Self.matrix(input, output, gain: 0), on: engine)
        var heard: [Float] = []
        // Much longer than any frame-count estimate of the fade, with housekeeping every cycle.
        while UInt32(engine.statistics.processedFrames) + 256 < scheduledAt {
            engine.runCycle(frames: 256)
            // Housekeeping as busy as it gets: a new plan every cycle (coalesced changes).
            _ = publisher.followAdoption(on: engine, periodFrames: 256)
            _ = try publisher.publish(Self.matrix(input, output, gain: 0), on: engine)
            heard += Self.samples(output, 256)
        }
        #expect(heard.allSatisfy { $0 == 0.5 }, "nothing changes before the scheduled plan")
        #expect(publisher.cellCount == 1, "the fading cell is kept while its plan waits")
        // Past the scheduled frame: the fade plays out over its ramp, no step.
        heard = []
        for _ in 0..<4 {
            engine.runCycle(frames: 256)
            if publisher.followAdoption(on: engine, periodFrames: 256) || publisher.needsPublish {
                _ = try publisher.publish(Self.matrix(input, output, gain: 0), on: engine)
            }
            heard += Self.samples(output, 256)
        }
        let steps = zip(heard, heard.dropFirst()).map { abs($0 - $1) }
        #expect(steps.max()! <= 0.5 / 64 + 1e-6, "largest step \(steps.max()!)")
        #expect(heard.suffix(256).allSatisfy { $0 == 0 })
        // And then the cell goes.
        for _ in 0..<4 {
            engine.runCycle(frames: 256)
            if publisher.followAdoption(on: engine, periodFrames: 256) { _ = try publisher.publish(Self.matrix(input, output, gain: 0), on: engine) }
        }
        #expect(publisher.cellCount == 0)
    }

    @Test("a plan the engine cannot hold changes nothing: the next plan still resets its new cells and keeps the fading ones")
    func refusedPlanChangesNothing() throws {
        var configuration = Engine.Configuration()
        configuration.maxFrames = 64
        configuration.maxOutputChannels = 2
        let engine = Engine(configuration: configuration, portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(64, 0.25), b = buffers.make(64, 0.5)
        let out1 = buffers.make(64), out2 = buffers.make(64), out3 = buffers.make(64)
        var publisher = PlanPublisher(gainSlotCapacity: 16)
        var matrix = RoutingMatrix(rampFrames: 1)
        matrix.inputs = [.init(port: a, meterSlot: 0), .init(port: b, meterSlot: 1)]
        matrix.outputs = [.init(port: out1, meterSlot: 0, feeds: [.init(input: 0, gain: 1, rampFrames: 1)])]
        guard case let .published(first) = try publisher.publish(matrix, on: engine) else { Issue.record("not published"); return }
        engine.runCycle(frames: 64)

        // Three outputs: more than the engine holds. Refused, and nothing is kept of it.
        var tooBig = matrix
        tooBig.outputs = [.init(port: out1, meterSlot: 0, feeds: []),
                          .init(port: out2, meterSlot: 1, feeds: [.init(input: 1, gain: 1, rampFrames: 1)]),
                          .init(port: out3, meterSlot: 2, feeds: [.init(input: 0, gain: 1, rampFrames: 1)])]
        #expect(throws: RouterError.self) { try publisher.publish(tooBig, on: engine) }
        #expect(publisher.needsPublish)
        #expect(publisher.publishedGeneration == first)
        #expect(publisher.cellCount == 1)
        #expect(publisher.slotsInUse().outputs == [0])

        // The next plan feeds b to out2, the cell the refused draft had made: it must be new to
        // the engine (reset, rising from silence over its ramp), not one that starts at a gain
        // nobody set. And a leaves out1 and fades.
        var next = matrix
        next.outputs = [.init(port: out1, meterSlot: 0, feeds: []),
                        .init(port: out2, meterSlot: 1, feeds: [.init(input: 1, gain: 1, rampFrames: 32)])]
        guard case .published = try publisher.publish(next, on: engine) else { Issue.record("not published"); return }
        #expect(!publisher.needsPublish)
        #expect(publisher.cellCount == 2)
        engine.runCycle(frames: 64)
        let rising = Self.samples(out2, 64)
        #expect(rising[0] == 0.5 / 32 && rising[31] == 0.5 && rising[63] == 0.5, "b rises from silence over 32 frames: \(rising.prefix(4))")
    }

    @Test("a fade that is over gives its gain slot back before new cells take slots, so a plan that fits without it is not refused")
    func expiredFadeMakesRoom() throws {
        let engine = Self.engine(maxFrames: 64)
        let buffers = Buffers()
        let a = buffers.make(64, 0.25), b = buffers.make(64, 0.5), out = buffers.make(64)
        var publisher = PlanPublisher(gainSlotCapacity: 1)
        var matrix = RoutingMatrix(rampFrames: 1)
        matrix.inputs = [.init(port: a, meterSlot: 0), .init(port: b, meterSlot: 1)]
        matrix.outputs = [.init(port: out, meterSlot: 0, feeds: [.init(input: 0, gain: 1, rampFrames: 1)])]
        _ = try publisher.publish(matrix, on: engine)
        engine.runCycle(frames: 64)
        matrix.outputs[0].feeds = []
        _ = try publisher.publish(matrix, on: engine)
        for _ in 0..<4 {
            engine.runCycle(frames: 64)
            _ = publisher.followAdoption(on: engine, periodFrames: 64)
        }
        #expect(publisher.cellCount == 1, "a's cell has faded but not been freed yet")
        // b wants the one slot a's finished fade still holds.
        matrix.outputs[0].feeds = [.init(input: 1, gain: 1, rampFrames: 1)]
        guard case .published = try publisher.publish(matrix, on: engine) else { Issue.record("not published"); return }
        engine.runCycle(frames: 64)
        #expect(Self.samples(out, 64).allSatisfy { $0 == 0.5 })
    }

    @Test("after the client is lost every cell is forgotten: no plan reads a port of the dead client again")
    func forgetCellsAfterLoss() throws {
        let engine = Self.engine(maxFrames: 64)
        let buffers = Buffers()
        let oldIn = buffers.make(64, 0.25), oldOut = buffers.make(64), newIn = buffers.make(64, 0.25), newOut = buffers.make(64)
        var publisher = PlanPublisher(gainSlotCapacity: 8)
        _ = try publisher.publish(Self.matrix(oldIn, oldOut, gain: 1), on: engine)
        engine.runCycle(frames: 64)
        // The client goes: the engine drops its plans, the publisher its cells. Meanwhile the app
        // stopped being wanted (it was removed): its cell must not come back on the old ports.
        engine.discardPlans(fadeInFrames: 16)
        publisher.forgetCells()
        #expect(publisher.cellCount == 0)
        var matrix = RoutingMatrix(rampFrames: 16)
        matrix.outputs = [.init(port: newOut, meterSlot: 0, feeds: [])]
        _ = try publisher.publish(matrix, on: engine)
        #expect(publisher.cellCount == 0)
        _ = try publisher.publish(Self.matrix(newIn, newOut, gain: 1, ramp: 16), on: engine)
        engine.runCycle(frames: 64)
        #expect(Self.samples(newOut, 64)[0] > 0 && Self.samples(newOut, 64)[63] == 0.25, "the new cell rises from silence on the new ports")
    }

    @Test("an input that changes between heard at once and heard late crossfades two cells instead of jumping in time")
    func delayChangeCrossfades() throws {
        let compiler = PlanCompiler(slotCapacity: 8)
        let port = PortHandle(UnsafeMutableRawPointer(bitPattern: 0x1000)!)
        let out = PortHandle(UnsafeMutableRawPointer(bitPattern: 0x2000)!)
        var c = compiler
        let undelayed = try c.compile(inputs: [.init(port: port, meterSlot: 3)],
                                      outputs: [.init(port: out, meterSlot: 0, feeds: [.init(input: 3, gain: 1, rampFrames: 10)], delayed: true)],
                                      rampFrames: 10, now: 0)
        c.commit(undelayed, generation: 1)
        let delayed = try c.compile(inputs: [.init(port: port, meterSlot: 3, delayed: true)],
                                    outputs: [.init(port: out, meterSlot: 0, feeds: [.init(input: 3, gain: 1, rampFrames: 10)], delayed: true)],
                                    rampFrames: 10, now: 0)
        // Two paths of slot 3: the new, delayed one rising, the old one, at once, fading.
        #expect(delayed.plan.inputs.map(\.delayed).sorted { !$0 && $1 } == [false, true])
        let contributions = delayed.plan.outputs[0].contributions
        #expect(contributions.count == 2)
        #expect(Set(contributions.map(\.target)) == [0, 1])
        #expect(delayed.plan.resetSlots.count == 1)
        let rising = try #require(contributions.first { $0.target == 1 })
        #expect(delayed.plan.inputs[Int(rising.input)].delayed)
    }
}
