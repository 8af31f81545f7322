import CWake
import Synchronization

/// The control thread's handle on the real-time engine.
///
/// The engine owns unmanaged memory that the process callback reads through `processArgument`.
/// Use it from one thread (the control thread): publish plans, collect the plans the audio thread
/// has retired. Meters (`collectMeters`, `setMeasuresRMS`) are the exception: any one thread at a
/// time may use them (the control queue or the OSC server's thread), which RouterCore's
/// `PeakBoard` ensures with a lock (they touch only the two meter rings, their blocks and the RMS
/// flag). Destroy it only after the
/// JACK client has been deactivated.
public final class Engine {
    /// Capacities fixed at setup, so the process thread never allocates.
    public struct Configuration: Sendable, Equatable {
        /// Input channels across all apps.
        public var maxInputChannels: Int = 1024
        /// Output channels across all routes.
        public var maxOutputChannels: Int = 128
        /// Mix cells (input channel → output channel) alive at once, fading ones included.
        public var gainSlotCapacity: Int = 32768
        /// Largest JACK period (JACK's own limit is 8192).
        public var maxFrames: Int = 8192
        /// Inputs per cycle that can be cleaned of NaN/Inf; further bad inputs are muted that cycle.
        public var sanitiseScratchBuffers: Int = 4
        /// Plans that can wait for the audio thread; beyond that the control thread coalesces.
        public var planQueueCapacity: Int = 64
        /// Meter blocks in circulation between the threads: 64 × 1024 frames, 1.4 s at 48 kHz,
        /// more than an idle router's second between collections, so a reader after an idle
        /// stretch gets the audio up to the last block, not the blocks after the previous
        /// collection (the audio thread keeps gathering into the block it holds while none is free).
        public var meterBlocks: Int = 64
        /// Frames gathered into one meter block before it is handed back (about 21 ms at 48 kHz).
        public var meterIntervalFrames: Int = 1024
        /// Cycle times that can wait for the control thread (8192: 22 s at 128 frames, 48 kHz; an
        /// idle router collects once a second, which this covers down to 16 frames at 96 kHz).
        public var timingRingCapacity: Int = 8192
        /// Level watches (signal-activated apps) a plan may have.
        public var maxLevelWatches: Int = 256
        /// Per-cycle watch levels that can wait for the control thread.
        public var levelRingCapacity: Int = 16384
        /// The longest look-ahead delay a plan may ask for (1 s at 48 kHz).
        public var maxLookaheadFrames: Int = 48000
        /// Samples a loudness tap holds for its reader (rounded up to a power of two; 16384: 341 ms
        /// at 48 kHz).
        public var tapRingFrames: Int = 16384
        /// Tap groups (apps and routes metered) a plan may have.
        public var maxTapGroups: Int = 2048

        public init() {}
    }

    /// No mix cell is ever given more than this linear gain (+24 dB).
    public static let maximumCellGain: Float = 15.848932

    public let configuration: Configuration
    private let core: UnsafeMutablePointer<EngineCore>
    private var meterBlocks: [UnsafeMutablePointer<MeterBlock>] = []
    private var nextGeneration: UInt64 = 1
    private var retiredGeneration: UInt64 = 0
    /// Look-ahead delay lines by input meter slot, made on first use, freed with the engine.
    private var delayLines: [Int32: UnsafeMutablePointer<DelayLine>] = [:]
    private var outgrownDelayLines: [UnsafeMutablePointer<DelayLine>] = []
    /// Loudness taps by meter slot, made the first time a plan taps the slot, kept until deinit.
    private var inputTaps: [Int32: UnsafeMutablePointer<TapRing>] = [:]
    private var outputTaps: [Int32: UnsafeMutablePointer<TapRing>] = [:]
    /// The last plan published (and so, by the time a newer one is adopted, the one it replaces):
    /// the port of each input meter slot that had a delay line in it, and the ports of each
    /// level watch. What changes against it is reset when the next plan is adopted.
    private var lastDelayedPorts: [Int32: PortHandle] = [:]
    private var lastWatchPorts: [Int32: [PortHandle]] = [:]
    /// Where each input meter slot's samples go through its volume stage (two periods: the
    /// undelayed and the delayed path), made the first time a plan asks it for a gain other than
    /// unity, kept until deinit. A slot without one has only ever been at unity.
    private var volumeBuffers: [Int32: UnsafeMutablePointer<Float>] = [:]
    /// The port each meter slot's volume stage followed in the last plan published: a slot whose
    /// port changes starts at its target.
    private var lastVolumePorts: (inputs: [Int32: PortHandle], outputs: [Int32: PortHandle]) = ([:], [:])
    /// The process callback's own time per cycle, as far as `collectProcessTimes()` has read it.
    public private(set) var processTimes = ProcessTimes()
    private var gapHistory: [FrameGap] = []

    /// - Parameter portBuffer: how to reach a port's buffer for a cycle (JACK's
    ///   `jack_port_get_buffer`; tests pass a function that treats the handle as the buffer).
    public init(configuration: Configuration = Configuration(), portBuffer: @escaping PortBufferFunction) {
        self.configuration = configuration
        core = .allocate(capacity: 1)
        core.initialize(to: EngineCore(configuration: configuration, portBuffer: portBuffer))
        for _ in 0..<configuration.meterBlocks {
            let block = MeterBlock.make(inputs: configuration.maxInputChannels,
                                        outputs: configuration.maxOutputChannels)
            meterBlocks.append(block)
            _ = core.pointee.meterFree.push(UInt(bitPattern: block))
        }
    }

    deinit {
        collectRetiredPlans()
        while let bits = core.pointee.inbox.pop() {
            MixPlan.destroy(UnsafeMutablePointer<MixPlan>(bitPattern: bits)!)
        }
        if let plan = core.pointee.plan { MixPlan.destroy(plan) }
        for block in meterBlocks { MeterBlock.destroy(block) }
        for line in delayLines.values { DelayLine.destroy(line) }
        for line in outgrownDelayLines { DelayLine.destroy(line) }
        for ring in inputTaps.values { TapRing.destroy(ring) }
        for ring in outputTaps.values { TapRing.destroy(ring) }
        for buffer in volumeBuffers.values { buffer.deallocate() }
        core.pointee.deallocateStorage()
        core.deinitialize(count: 1)
        core.deallocate()
    }

    /// Sets the frame clock that scheduled plans are timed against (JACK's `jack_last_frame_time`
    /// and its client). Before the process callback first runs.
    public func setFrameClock(_ clock: @escaping FrameClockFunction, argument: UnsafeMutableRawPointer) {
        core.pointee.frameClock = clock
        core.pointee.frameClockArgument = argument
        core.pointee.lastCycleEnd = nil
        // Another clock (a new client, maybe a new server): the old one's gaps say nothing here.
        _ = recentGaps()
        gapHistory.removeAll()
    }

    /// The argument to register with `engineProcessCallback`.
    public var processArgument: UnsafeMutableRawPointer { UnsafeMutableRawPointer(core) }

    /// Queues a new plan for the audio thread. Returns the plan's generation, or nil when the queue
    /// is full (the caller keeps its state and publishes again later; nothing is lost).
    @discardableResult
    public func publish(_ description: MixPlanDescription) throws(MixPlanError) -> UInt64? {
        collectRetiredPlans()
        guard core.pointee.inbox.hasRoom() else { return nil }
        if description.lookaheadFrames > 0 {
            let capacity = min(description.lookaheadFrames, configuration.maxLookaheadFrames) + configuration.maxFrames
            for input in description.inputs where input.delayed && (delayLines[input.meterSlot]?.pointee.capacity ?? 0) < capacity {
                // A longer delay than before: the old line may still be in a queued plan; it is
                // kept until the engine goes.
                if let old = delayLines[input.meterSlot] { outgrownDelayLines.append(old) }
                delayLines[input.meterSlot] = DelayLine.make(capacity: capacity, maxFrames: configuration.maxFrames)
            }
        }
        // Plans are adopted one by one in publishing order, so the last one published is the one
        // this plan will replace: a delay line is reset when its input starts being delayed, or
        // its slot passes to another port; a watch's peak is dropped when its inputs change.
        var delayedPorts: [Int32: PortHandle] = [:]
        if description.lookaheadFrames > 0 {
            for input in description.inputs where input.delayed { delayedPorts[input.meterSlot] = input.port }
        }
        let delayResets = Set(delayedPorts.compactMap { slot, port in lastDelayedPorts[slot] == port ? nil : slot })
        var watchPorts: [Int32: [PortHandle]] = [:]
        for input in description.inputs where (0..<Int32(configuration.maxLevelWatches)).contains(input.watch) {
            watchPorts[input.watch, default: []].append(input.port)
        }
        let watchClears = lastWatchPorts.compactMap { watch, ports in watchPorts[watch] == ports ? nil : watch }
        for input in description.inputs where input.tapGroup >= 0 && inputTaps[input.meterSlot] == nil
            && (0..<Int32(configuration.maxInputChannels)).contains(input.meterSlot) {
            inputTaps[input.meterSlot] = TapRing.make(capacity: configuration.tapRingFrames)
        }
        for output in description.outputs where output.tapGroup >= 0 && outputTaps[output.meterSlot] == nil
            && (0..<Int32(configuration.maxOutputChannels)).contains(output.meterSlot) {
            outputTaps[output.meterSlot] = TapRing.make(capacity: configuration.tapRingFrames)
        }
        for input in description.inputs where volumeBuffers[input.meterSlot] == nil
            && (0..<Int32(configuration.maxInputChannels)).contains(input.meterSlot) {
            guard let volume = input.volume, volume.gain != 1 else { continue }
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 2 * configuration.maxFrames)
            buffer.initialize(repeating: 0, count: 2 * configuration.maxFrames)
            volumeBuffers[input.meterSlot] = buffer
        }
        var volumePorts: (inputs: [Int32: PortHandle], outputs: [Int32: PortHandle]) = ([:], [:])
        for input in description.inputs where input.volume != nil { volumePorts.inputs[input.meterSlot] = input.port }
        for output in description.outputs where output.volume != nil { volumePorts.outputs[output.meterSlot] = output.port }
        let volumeResets = (inputs: Set(volumePorts.inputs.compactMap { slot, port in lastVolumePorts.inputs[slot] == port ? nil : slot }),
                            outputs: Set(volumePorts.outputs.compactMap { slot, port in lastVolumePorts.outputs[slot] == port ? nil : slot }))
        let plan = try MixPlan.make(description, generation: nextGeneration, capacity: configuration, delayLines: delayLines,
                                    taps: (inputTaps, outputTaps),
                                    resettingDelayLinesOf: delayResets, clearingWatches: watchClears,
                                    volumeBuffers: volumeBuffers, resettingVolumesOf: volumeResets)
        guard core.pointee.inbox.push(UInt(bitPattern: plan)) else {
            MixPlan.destroy(plan)
            return nil
        }
        lastDelayedPorts = delayedPorts
        lastWatchPorts = watchPorts
        // A slot that leaves the plans keeps its last port: when it comes back on the same one,
        // its stage goes on from where it was.
        lastVolumePorts.inputs.merge(volumePorts.inputs) { _, new in new }
        lastVolumePorts.outputs.merge(volumePorts.outputs) { _, new in new }
        nextGeneration += 1
        return nextGeneration - 1
    }

    /// Frees the plans the audio thread has finished with; returns how many.
    @discardableResult
    public func collectRetiredPlans() -> Int {
        var count = 0
        while let bits = core.pointee.outbox.pop() {
            let plan = UnsafeMutablePointer<MixPlan>(bitPattern: bits)!
            retiredGeneration = max(retiredGeneration, plan.pointee.generation)
            MixPlan.destroy(plan)
            count += 1
        }
        return count
    }

    /// The newest generation the audio thread has handed back: no cycle will read it or any
    /// earlier plan again.
    public var retiredPlanGeneration: UInt64 { retiredGeneration }

    /// The generation of the plan the audio thread is using (0 before the first).
    public var adoptedPlanGeneration: UInt64 { core.pointee.adoptedGeneration.load(ordering: .acquiring) }

    /// Gathers every finished meter block into one reading (peak over all of them, and the squares
    /// summed over all of them), or nil when the audio thread has finished none since the last call.
    public func collectMeters() -> MeterReading? {
        var reading: MeterReading?
        while let bits = core.pointee.meterFull.pop() {
            let block = UnsafeMutablePointer<MeterBlock>(bitPattern: bits)!
            var r = reading ?? MeterReading(inputs: configuration.maxInputChannels,
                                            outputs: configuration.maxOutputChannels)
            r.merge(block.pointee)
            reading = r
            block.pointee.inputPeaks.update(repeating: 0, count: configuration.maxInputChannels)
            block.pointee.outputPeaks.update(repeating: 0, count: configuration.maxOutputChannels)
            if block.pointee.squaredFrames > 0 {
                block.pointee.inputSquares.update(repeating: 0, count: configuration.maxInputChannels)
                block.pointee.outputSquares.update(repeating: 0, count: configuration.maxOutputChannels)
            }
            block.pointee.frames = 0
            block.pointee.squaredFrames = 0
            block.pointee.cycles = 0
            _ = core.pointee.meterFree.push(bits)
        }
        return reading
    }

    /// Whether the audio thread sums the squares of every metered channel (RMS meters) from its
    /// next cycle on; off from the start. Any one thread at a time, as `collectMeters`.
    public func setMeasuresRMS(_ on: Bool) {
        core.pointee.measuresRMS.store(on, ordering: .relaxed)
    }

    /// Whether RMS is measured (`setMeasuresRMS`).
    public var measuresRMS: Bool { core.pointee.measuresRMS.load(ordering: .relaxed) }

    /// Reads the cycle times the audio thread has left since the last call into `processTimes`;
    /// returns how many.
    @discardableResult
    public func collectProcessTimes() -> Int {
        var count = 0
        while let ns = core.pointee.timings.pop() {
            processTimes.record(nanoseconds: UInt64(ns))
            count += 1
        }
        _ = recentGaps()   // read as often, so the ring holds the newest
        return count
    }

    /// Sets how many cycles the recent process-time window covers.
    public func setProcessTimeWindow(cycles: UInt64) { processTimes.windowCycles = max(cycles, 1) }

    /// One cycle's peak of a level watch: the highest peak over its input channels.
    public struct LevelReading: Sendable, Equatable {
        public var watch: Int
        public var peak: Float
        public var frames: Int
    }

    /// The per-cycle peaks of every level watch since the last call, oldest first. A watch is
    /// reported each cycle while a plan has inputs with it.
    public func collectLevels(into readings: inout [LevelReading]) {
        readings.removeAll(keepingCapacity: true)
        while let bits = core.pointee.levels.pop() {
            let value = UInt64(bits)
            readings.append(LevelReading(watch: Int((value >> 32) & 0xffff), peak: Float(bitPattern: UInt32(truncatingIfNeeded: value)),
                                         frames: Int(value >> 48)))
        }
    }

    /// The level watches' sleep (issue 21): when every watched app is silent and nothing more
    /// can come of more silence, the control side stops reading levels (`sleepLevels()`), and the
    /// audio thread reports none until a watch's peak reaches its wake level; it then wakes the
    /// control side through this eventfd (watch it for reading; `drainLevelWake()` after) and
    /// reports as before. -1: no eventfd could be made; do not sleep.
    public var levelWakeDescriptor: Int32 { core.pointee.levelWake }

    /// Sets the peak (linear) at which watch `watch` wakes the control side while it sleeps.
    public func setWatchWakeLevel(_ watch: Int, _ level: Float) {
        guard watch >= 0, watch < max(configuration.maxLevelWatches, 1) else { return }
        core.pointee.watchWakeLevels[watch].store(level.bitPattern, ordering: .relaxed)
    }

    /// Stops level reports until a watch's peak reaches its wake level. Call `collectLevels`
    /// after it: readings of cycles that began before it may be in the ring (if one is loud,
    /// `wakeLevels()`). A cycle whose readings reach the ring only after that drain and reach a
    /// wake level wakes the control side itself (the audio thread looks at the flag again after
    /// pushing them, with a full fence on both sides).
    public func sleepLevels() {
        guard core.pointee.levelWake >= 0 else { return }
        core.pointee.levelsAsleep.store(true, ordering: .sequentiallyConsistent)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
    }

    /// Reports levels every cycle again. Returns whether they were asleep (false also when the
    /// audio thread woke them first).
    @discardableResult
    public func wakeLevels() -> Bool { core.pointee.levelsAsleep.exchange(false, ordering: .sequentiallyConsistent) }

    /// Whether level reports sleep.
    public var levelsAreAsleep: Bool { core.pointee.levelsAsleep.load(ordering: .relaxed) }

    /// Reads the wake-up's eventfd back to zero.
    public func drainLevelWake() {
        let descriptor = core.pointee.levelWake
        if descriptor >= 0 { CWake_drain(descriptor) }
    }

    /// Level readings lost because `collectLevels` was not called for a long time.
    public var droppedLevels: UInt64 { core.pointee.levelsDropped.load(ordering: .relaxed) }

    /// Starts the process-time figures afresh.
    public func resetProcessTimes() {
        collectProcessTimes()
        processTimes.reset()
    }

    /// Cycle times lost because `collectProcessTimes()` was not called for a long time.
    public var droppedProcessTimes: UInt64 { core.pointee.timingsDropped.load(ordering: .relaxed) }

    /// Frees every plan, queued or in use, for a new set of ports (the JACK client was closed and
    /// a new one is about to start). Every audible cell starts again from silence and rises to its
    /// gain over `fadeInFrames`, so the first cycles after a reconnect do not click; delay lines
    /// and level watches forget what they heard, so nothing from before is heard or reported
    /// after.
    ///
    /// Only while no process cycle can run: the client is deactivated or closed, and the next one
    /// not yet activated. The next `publish` must carry the new ports before activation.
    public func discardPlans(fadeInFrames: Int32) {
        collectRetiredPlans()
        while let bits = core.pointee.inbox.pop() {
            let plan = UnsafeMutablePointer<MixPlan>(bitPattern: bits)!
            retiredGeneration = max(retiredGeneration, plan.pointee.generation)
            MixPlan.destroy(plan)
        }
        if let plan = core.pointee.plan {
            retiredGeneration = max(retiredGeneration, plan.pointee.generation)
            MixPlan.destroy(plan)
            core.pointee.plan = nil
        }
        let frames = max(fadeInFrames, 1)
        for slot in 0..<configuration.gainSlotCapacity {
            let target = core.pointee.gains[slot].target
            core.pointee.gains[slot] = target == 0
                ? .silent
                : GainState(current: 0, target: target, step: target / Float(frames), remaining: frames)
        }
        for line in delayLines.values { DelayLine.reset(line) }
        lastDelayedPorts = [:]
        // New ports follow: every volume stage starts at its next target.
        lastVolumePorts = ([:], [:])
        core.pointee.watchPeaks.update(repeating: -1, count: max(configuration.maxLevelWatches, 1))
        lastWatchPorts = [:]
        core.pointee.frameClock = nil
        core.pointee.frameClockArgument = nil
        collectProcessTimes()
    }

    /// Counters the audio thread keeps, for diagnostics and tests.
    public var statistics: Statistics {
        Statistics(processedFrames: core.pointee.processedFrames.load(ordering: .acquiring),
                   cycles: core.pointee.cycles.load(ordering: .acquiring),
                   lastCycleStart: core.pointee.lastCycleStart.load(ordering: .relaxed),
                   nonFiniteInputBuffers: core.pointee.nonFiniteInputBuffers.load(ordering: .relaxed),
                   nonFiniteOutputBuffers: core.pointee.nonFiniteOutputBuffers.load(ordering: .relaxed),
                   oversizedCycles: core.pointee.oversizedCycles.load(ordering: .relaxed),
                   missedCycles: core.pointee.missedCycles.load(ordering: .relaxed),
                   droppedTapSpans: core.pointee.droppedTapSpans.load(ordering: .relaxed))
    }

    /// The monotonic clock the audio thread times its cycles by, in ns (`Statistics.lastCycleStart`).
    public static var monotonicNow: UInt64 { monotonicNanoseconds() }

    public struct Statistics: Sendable, Equatable {
        public var processedFrames: UInt64
        public var cycles: UInt64
        /// When the latest of `cycles` began (`Engine.monotonicNow`); 0 before the first.
        public var lastCycleStart: UInt64
        public var nonFiniteInputBuffers: UInt64
        public var nonFiniteOutputBuffers: UInt64
        public var oversizedCycles: UInt64
        /// Cycles the frame clock went past without running the engine (see `EngineCore`).
        public var missedCycles: UInt64
        /// Spans of cycles not written to the loudness taps because one was full (its reader late).
        public var droppedTapSpans: UInt64
    }

    /// A stretch of JACK's frame clock the engine was not run for (`Statistics.missedCycles`
    /// counts its periods): the first frame it missed and how many.
    public struct FrameGap: Sendable, Equatable {
        public var firstFrame: UInt32
        public var frames: UInt32
        public init(firstFrame: UInt32, frames: UInt32) { self.firstFrame = firstFrame; self.frames = frames }
    }

    /// The loudness tap of input meter slot `slot`, once a published plan has tapped it: its
    /// reader's end (one reader thread). Control thread.
    public func loudnessTap(input slot: Int32) -> LoudnessTap? { inputTaps[slot].map(LoudnessTap.init) }

    /// The loudness tap of output meter slot `slot`, once a published plan has tapped it.
    public func loudnessTap(output slot: Int32) -> LoudnessTap? { outputTaps[slot].map(LoudnessTap.init) }

    /// How many of the newest gaps `recentGaps()` keeps.
    public static let recentGapCount = 16

    /// The newest `recentGapCount` stretches of the frame clock the engine missed, oldest first:
    /// where they fell, for a test that must know whether a missed cycle touched what it measures.
    /// Control thread only (it drains the audio thread's ring).
    public func recentGaps() -> [FrameGap] {
        while let bits = core.pointee.gaps.pop() {
            gapHistory.append(FrameGap(firstFrame: UInt32(truncatingIfNeeded: bits), frames: UInt32(truncatingIfNeeded: bits >> 32)))
        }
        if gapHistory.count > Self.recentGapCount { gapHistory.removeFirst(gapHistory.count - Self.recentGapCount) }
        return gapHistory
    }

    /// Runs one process cycle on the calling thread. For tests and benchmarks that drive the
    /// engine without JACK; never call it while JACK is also running the engine.
    public func runCycle(frames: Int) {
        engineProcess(core, frames: frames)
    }

    /// The gain state of one cell, read on the control thread. For tests, while no cycle runs.
    public func gainState(slot: Int32) -> GainState { core.pointee.gains[Int(slot)] }

    /// The volume stage of an input or output meter slot, read on the control thread. For tests,
    /// while no cycle runs.
    public func volumeState(input slot: Int32) -> VolumeState { core.pointee.inputVolumes[Int(slot)] }
    public func volumeState(output slot: Int32) -> VolumeState { core.pointee.outputVolumes[Int(slot)] }
}

/// Peak levels per input and output meter slot, linear amplitude, and while RMS is measured the
/// sums of their squares.
public struct MeterReading: Sendable, Equatable {
    public var inputPeaks: [Float]
    public var outputPeaks: [Float]
    /// The sum of the squares of each slot's samples over `squaredFrames` frames (zeros when RMS
    /// was not measured).
    public var inputSquares: [Double]
    public var outputSquares: [Double]
    public var frames: Int
    /// The frames the squares were summed over: those measured while RMS was on (0: none).
    public var squaredFrames: Int

    init(inputs: Int, outputs: Int) {
        inputPeaks = Array(repeating: 0, count: inputs)
        outputPeaks = Array(repeating: 0, count: outputs)
        inputSquares = Array(repeating: 0, count: inputs)
        outputSquares = Array(repeating: 0, count: outputs)
        frames = 0
        squaredFrames = 0
    }

    mutating func merge(_ block: MeterBlock) {
        for i in inputPeaks.indices { inputPeaks[i] = max(inputPeaks[i], block.inputPeaks[i]) }
        for o in outputPeaks.indices { outputPeaks[o] = max(outputPeaks[o], block.outputPeaks[o]) }
        if block.squaredFrames > 0 {
            for i in inputSquares.indices { inputSquares[i] += block.inputSquares[i] }
            for o in outputSquares.indices { outputSquares[o] += block.outputSquares[o] }
        }
        frames += block.frames
        squaredFrames += block.squaredFrames
    }

    /// Folds a later reading in: the peaks over both spans, the squares summed.
    public mutating func merge(_ later: MeterReading) {
        for i in inputPeaks.indices where i < later.inputPeaks.count { inputPeaks[i] = max(inputPeaks[i], later.inputPeaks[i]) }
        for o in outputPeaks.indices where o < later.outputPeaks.count { outputPeaks[o] = max(outputPeaks[o], later.outputPeaks[o]) }
        if later.squaredFrames > 0 {
            for i in inputSquares.indices where i < later.inputSquares.count { inputSquares[i] += later.inputSquares[i] }
            for o in outputSquares.indices where o < later.outputSquares.count { outputSquares[o] += later.outputSquares[o] }
        }
        frames += later.frames
        squaredFrames += later.squaredFrames
    }

    /// The RMS level of an input slot, linear, or nil when RMS was not measured in this span.
    public func inputRMS(_ slot: Int) -> Float? { Self.rms(inputSquares, slot, over: squaredFrames) }
    public func outputRMS(_ slot: Int) -> Float? { Self.rms(outputSquares, slot, over: squaredFrames) }

    static func rms(_ squares: [Double], _ slot: Int, over frames: Int) -> Float? {
        guard frames > 0, squares.indices.contains(slot) else { return nil }
        return Float((squares[slot] / Double(frames)).squareRoot())
    }
}
