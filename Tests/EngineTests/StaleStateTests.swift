import Testing
@testable import Engine

/// Nothing from before a change may be heard or reported after it (issue 15, defects 4 and 8):
/// look-ahead delay lines and level-watch peaks outlive plans, so each change that hands them to
/// new audio must start them from silence.
@Suite("Engine: nothing from before a change")
struct StaleStateTests {
    typealias Buffers = EngineTests.Buffers
    static let lookahead = 100
    static let frames = 64

    /// One input into one look-ahead output at unity gain; `delayed`: the input has a delay line.
    func lookaheadPlan(input: UnsafeMutablePointer<Float>, output: UnsafeMutablePointer<Float>,
                       delayed: Bool, meterSlot: Int32 = 0) -> MixPlanDescription {
        var description = MixPlanDescription(
            inputs: [.init(port: PortHandle(input), meterSlot: meterSlot, delayed: delayed)],
            outputs: [.init(port: PortHandle(output), meterSlot: 0,
                            contributions: [MixContribution(input: 0, gainSlot: 0, target: 1, rampFrames: 1)])])
        description.outputs[0].delayed = true
        description.lookaheadFrames = Self.lookahead
        return description
    }

    func makeEngine() -> Engine {
        var configuration = Engine.Configuration()
        configuration.maxFrames = Self.frames
        return Engine(configuration: configuration, portBuffer: EngineTests.directBuffers)
    }

    /// Fills `input` with `level`, runs `cycles` cycles, and returns what `output` carried.
    func play(_ engine: Engine, _ level: Float, on input: UnsafeMutablePointer<Float>,
              hearing output: UnsafeMutablePointer<Float>, cycles: Int) -> [Float] {
        input.update(repeating: level, count: Self.frames)
        var heard: [Float] = []
        for _ in 0..<cycles {
            engine.runCycle(frames: Self.frames)
            heard += (0..<Self.frames).map { output[$0] }
        }
        return heard
    }

    /// Silence for exactly the look-ahead, then the input's new level, nothing else.
    func expectFreshStart(_ heard: [Float], level: Float, sourceLocation: SourceLocation = #_sourceLocation) {
        let before = heard.prefix(Self.lookahead)
        #expect(before.allSatisfy { $0 == 0 }, "the look-ahead after the change is silent, not old audio: \(Set(before))",
                sourceLocation: sourceLocation)
        #expect(heard.dropFirst(Self.lookahead).allSatisfy { $0 == level }, sourceLocation: sourceLocation)
    }

    @Test("an input delayed, undelayed, then delayed again hears silence for the look-ahead, not what it had when last delayed")
    func delayedAgain() throws {
        let engine = makeEngine()
        let buffers = Buffers()
        let input = buffers.make(Self.frames), output = buffers.make(Self.frames)
        try engine.publish(lookaheadPlan(input: input, output: output, delayed: true))
        _ = play(engine, 1, on: input, hearing: output, cycles: 4)
        try engine.publish(lookaheadPlan(input: input, output: output, delayed: false))
        #expect(play(engine, 0.5, on: input, hearing: output, cycles: 4).allSatisfy { $0 == 0.5 }, "undelayed: heard at once")
        try engine.publish(lookaheadPlan(input: input, output: output, delayed: true))
        expectFreshStart(play(engine, 0.25, on: input, hearing: output, cycles: 4), level: 0.25)
    }

    @Test("an input that leaves the plan and comes back delayed hears silence for the look-ahead")
    func leavesAndReturns() throws {
        let engine = makeEngine()
        let buffers = Buffers()
        let input = buffers.make(Self.frames), output = buffers.make(Self.frames)
        try engine.publish(lookaheadPlan(input: input, output: output, delayed: true))
        _ = play(engine, 1, on: input, hearing: output, cycles: 4)
        var empty = MixPlanDescription(outputs: [.init(port: PortHandle(output), meterSlot: 0, contributions: [])])
        empty.lookaheadFrames = Self.lookahead
        try engine.publish(empty)
        _ = play(engine, 0.5, on: input, hearing: output, cycles: 2)
        try engine.publish(lookaheadPlan(input: input, output: output, delayed: true))
        expectFreshStart(play(engine, 0.25, on: input, hearing: output, cycles: 4), level: 0.25)
    }

    @Test("a meter slot handed to another port in the very next plan starts its delay line from silence")
    func slotReusedByAnotherPort() throws {
        let engine = makeEngine()
        let buffers = Buffers()
        let first = buffers.make(Self.frames), second = buffers.make(Self.frames), output = buffers.make(Self.frames)
        try engine.publish(lookaheadPlan(input: first, output: output, delayed: true))
        _ = play(engine, 1, on: first, hearing: output, cycles: 4)
        try engine.publish(lookaheadPlan(input: second, output: output, delayed: true))
        expectFreshStart(play(engine, 0.25, on: second, hearing: output, cycles: 4), level: 0.25)
    }

    @Test("after a reconnect (plans discarded) a delayed input hears silence for the look-ahead, never audio from before the outage")
    func afterReconnect() throws {
        let engine = makeEngine()
        let buffers = Buffers()
        let input = buffers.make(Self.frames), output = buffers.make(Self.frames)
        try engine.publish(lookaheadPlan(input: input, output: output, delayed: true))
        _ = play(engine, 1, on: input, hearing: output, cycles: 4)
        engine.discardPlans(fadeInFrames: 1)
        try engine.publish(lookaheadPlan(input: input, output: output, delayed: true))
        expectFreshStart(play(engine, 0.25, on: input, hearing: output, cycles: 4), level: 0.25)
    }

    @Test("a delay line that stays delayed keeps its audio across plans (a new plan is not a gap)")
    func stillDelayed() throws {
        let engine = makeEngine()
        let buffers = Buffers()
        let input = buffers.make(Self.frames), output = buffers.make(Self.frames)
        try engine.publish(lookaheadPlan(input: input, output: output, delayed: true))
        _ = play(engine, 1, on: input, hearing: output, cycles: 4)
        var louder = lookaheadPlan(input: input, output: output, delayed: true)
        louder.outputs[0].contributions[0].target = 0.5
        try engine.publish(louder)
        let heard = play(engine, 0.25, on: input, hearing: output, cycles: 4)
        #expect(heard.prefix(Self.lookahead).allSatisfy { $0 == 0.5 }, "the look-ahead still plays the input from before the plan")
        #expect(heard.dropFirst(Self.lookahead).allSatisfy { $0 == 0.125 })
    }

    // MARK: Level watches

    /// Inputs `a` (watch 3) and `b` (watch 3 only with `bWatched`) into one output.
    func watchPlan(_ a: UnsafeMutablePointer<Float>, aWatch: Int32, _ b: UnsafeMutablePointer<Float>, bWatch: Int32,
                   output: UnsafeMutablePointer<Float>, startFrame: UInt32? = nil) -> MixPlanDescription {
        MixPlanDescription(
            inputs: [.init(port: PortHandle(a), meterSlot: 0, watch: aWatch), .init(port: PortHandle(b), meterSlot: 1, watch: bWatch)],
            outputs: [.init(port: PortHandle(output), meterSlot: 0, contributions: [])],
            startFrame: startFrame)
    }

    /// Leaves watch 3 holding `a`'s peak (0.9) from the first half of a cycle whose second half
    /// runs a plan without that watch.
    func leaveWatchMidCycle(_ engine: Engine, a: UnsafeMutablePointer<Float>, b: UnsafeMutablePointer<Float>,
                            output: UnsafeMutablePointer<Float>) throws {
        try engine.publish(watchPlan(a, aWatch: 3, b, bWatch: -1, output: output))
        engine.runCycle(frames: 64)
        try engine.publish(watchPlan(a, aWatch: -1, b, bWatch: -1, output: output, startFrame: 64 + 32))
        engine.runCycle(frames: 64)
        var readings: [Engine.LevelReading] = []
        engine.collectLevels(into: &readings)
        #expect(readings == [.init(watch: 3, peak: 0.9, frames: 64)], "one full cycle of the watch; none for the split cycle")
    }

    @Test("a watch that leaves the plan mid-cycle does not carry that peak into a later plan that watches another app with it")
    func watchLeavesPlan() throws {
        let engine = Engine(portBuffer: EngineTests.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(64, 0.9), b = buffers.make(64, 0.1), output = buffers.make(64)
        try leaveWatchMidCycle(engine, a: a, b: b, output: output)
        try engine.publish(watchPlan(a, aWatch: -1, b, bWatch: 3, output: output))
        engine.runCycle(frames: 64)
        var readings: [Engine.LevelReading] = []
        engine.collectLevels(into: &readings)
        #expect(readings == [.init(watch: 3, peak: 0.1, frames: 64)], "b's own level, not a's old peak")
    }

    @Test("after a reconnect (plans discarded) a watch reports only what it hears from then on")
    func watchAfterReconnect() throws {
        let engine = Engine(portBuffer: EngineTests.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(64, 0.9), b = buffers.make(64, 0.1), output = buffers.make(64)
        try leaveWatchMidCycle(engine, a: a, b: b, output: output)
        engine.discardPlans(fadeInFrames: 1)
        try engine.publish(watchPlan(a, aWatch: -1, b, bWatch: 3, output: output))
        engine.runCycle(frames: 64)
        var readings: [Engine.LevelReading] = []
        engine.collectLevels(into: &readings)
        #expect(readings == [.init(watch: 3, peak: 0.1, frames: 64)], "b's own level, not a's peak from before the outage")
    }
}
