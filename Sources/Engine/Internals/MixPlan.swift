#if canImport(Glibc)
import Glibc
#endif
/// A mix plan as the process thread reads it: counts and pointers into one allocation, immutable
/// once published.
///
/// Ownership: allocated by `MixPlan.make` on the control thread, handed to the process thread
/// through the engine's inbox ring, handed back through the outbox ring when a newer plan replaces
/// it, and freed by `MixPlan.destroy` on the control thread. The process thread never frees one.
struct MixPlan {
    struct Input {
        var port: UnsafeMutableRawPointer
        var meterSlot: Int32
        var watch: Int32
        /// The input's delay line, in look-ahead plans.
        var delayLine: UnsafeMutablePointer<DelayLine>?
        /// Where its samples go for loudness metering, if anywhere, and its tap group.
        var tap: UnsafeMutablePointer<TapRing>? = nil
        var tapGroup: Int32 = -1
        /// Where its samples go through its volume stage: `maxFrames` for the undelayed path, then
        /// `maxFrames` for the delayed one. nil: the slot's stage has only ever been at unity.
        var volumeBuffer: UnsafeMutablePointer<Float>? = nil
    }

    /// A volume stage the plan moves (each meter slot once, inputs and outputs apart).
    struct Volume {
        var slot: Int32
        var isOutput: Bool
        /// nil: the stage goes on as it is (it is still advanced with the cycles).
        var target: VolumeTarget?
        /// The slot has a new port: the stage starts at the target.
        var reset: Bool
    }

    struct Output {
        var port: UnsafeMutableRawPointer
        var meterSlot: Int32
        var firstContribution: Int32
        var contributionCount: Int32
        var delayed: Bool
        var tap: UnsafeMutablePointer<TapRing>? = nil
        var tapGroup: Int32 = -1
    }

    var generation: UInt64
    var lookaheadFrames: Int
    var lookaheadFadeFrames: Int
    var isScheduled: Bool
    var startFrame: UInt32
    var inputCount: Int
    var inputs: UnsafeMutablePointer<Input>
    var outputCount: Int
    var outputs: UnsafeMutablePointer<Output>
    var contributionCount: Int
    var contributions: UnsafeMutablePointer<MixContribution>
    var resetCount: Int
    var resets: UnsafeMutablePointer<Int32>
    /// Delay lines to start from silence when the plan is adopted: inputs that are delayed here
    /// and were not (or were another port) in the plan before.
    var delayResetCount: Int
    var delayResets: UnsafeMutablePointer<UnsafeMutablePointer<DelayLine>>
    /// Level watches whose peak so far is dropped when the plan is adopted: watches the plan before
    /// had that this one does not have, or has on other inputs.
    var watchClearCount: Int
    var watchClears: UnsafeMutablePointer<Int32>
    var volumeCount: Int
    var volumes: UnsafeMutablePointer<Volume>
    /// Inputs and outputs with a loudness tap (0: none, nothing to check each cycle).
    var tapCount = 0

    /// Checks `description` against the engine's capacities and copies it into unmanaged memory.
    /// `resettingDelayLinesOf`: meter slots whose delay line starts from silence on adoption;
    /// `clearingWatches`: watches whose peak is dropped on adoption.
    static func make(_ description: MixPlanDescription, generation: UInt64, capacity: Engine.Configuration,
                     delayLines: [Int32: UnsafeMutablePointer<DelayLine>] = [:],
                     taps: (inputs: [Int32: UnsafeMutablePointer<TapRing>], outputs: [Int32: UnsafeMutablePointer<TapRing>]) = ([:], [:]),
                     resettingDelayLinesOf resetSlots: Set<Int32> = [],
                     clearingWatches clearedWatches: [Int32] = [],
                     volumeBuffers: [Int32: UnsafeMutablePointer<Float>] = [:],
                     resettingVolumesOf volumeResets: (inputs: Set<Int32>, outputs: Set<Int32>) = ([], [])) throws(MixPlanError) -> UnsafeMutablePointer<MixPlan> {
        if description.inputs.count > capacity.maxInputChannels {
            throw .tooManyInputs(description.inputs.count, capacity: capacity.maxInputChannels)
        }
        if description.outputs.count > capacity.maxOutputChannels {
            throw .tooManyOutputs(description.outputs.count, capacity: capacity.maxOutputChannels)
        }
        var seen = Set<Int32>()
        for input in description.inputs where !(0..<Int32(capacity.maxInputChannels)).contains(input.meterSlot) {
            throw .meterSlotOutOfRange(input.meterSlot)
        }
        for (o, output) in description.outputs.enumerated() {
            if !(0..<Int32(capacity.maxOutputChannels)).contains(output.meterSlot) {
                throw .meterSlotOutOfRange(output.meterSlot)
            }
            for c in output.contributions {
                if !(0..<Int32(description.inputs.count)).contains(c.input) {
                    throw .inputIndexOutOfRange(c.input, output: o)
                }
                if !(0..<Int32(capacity.gainSlotCapacity)).contains(c.gainSlot) { throw .gainSlotOutOfRange(c.gainSlot) }
                if !seen.insert(c.gainSlot).inserted { throw .gainSlotUsedTwice(c.gainSlot) }
                if !c.target.isFinite { throw .targetNotFinite(gainSlot: c.gainSlot) }
            }
        }
        for slot in description.resetSlots where !(0..<Int32(capacity.gainSlotCapacity)).contains(slot) {
            throw .gainSlotOutOfRange(slot)
        }
        for input in description.inputs { if let volume = input.volume, !volume.gain.isFinite { throw .volumeNotFinite(meterSlot: input.meterSlot) } }
        for output in description.outputs { if let volume = output.volume, !volume.gain.isFinite { throw .volumeNotFinite(meterSlot: output.meterSlot) } }
        // Each slot's stage once: the first entry with a target says where it goes.
        var volumeList: [Volume] = []
        var listed: [Int32: Int] = [:]
        for input in description.inputs {
            if let at = listed[input.meterSlot] {
                if volumeList[at].target == nil { volumeList[at].target = input.volume }
                continue
            }
            listed[input.meterSlot] = volumeList.count
            volumeList.append(Volume(slot: input.meterSlot, isOutput: false, target: input.volume,
                                     reset: volumeResets.inputs.contains(input.meterSlot)))
        }
        var listedOutputs = Set<Int32>()
        for output in description.outputs where listedOutputs.insert(output.meterSlot).inserted {
            volumeList.append(Volume(slot: output.meterSlot, isOutput: true, target: output.volume,
                                     reset: volumeResets.outputs.contains(output.meterSlot)))
        }

        let contributionCount = description.outputs.reduce(0) { $0 + $1.contributions.count }
        let plan = UnsafeMutablePointer<MixPlan>.allocate(capacity: 1)
        let inputs = UnsafeMutablePointer<Input>.allocate(capacity: max(description.inputs.count, 1))
        let outputs = UnsafeMutablePointer<Output>.allocate(capacity: max(description.outputs.count, 1))
        let contributions = UnsafeMutablePointer<MixContribution>.allocate(capacity: max(contributionCount, 1))
        let resets = UnsafeMutablePointer<Int32>.allocate(capacity: max(description.resetSlots.count, 1))
        let delayResets = UnsafeMutablePointer<UnsafeMutablePointer<DelayLine>>.allocate(capacity: max(description.inputs.count, 1))
        let watchClears = UnsafeMutablePointer<Int32>.allocate(capacity: max(clearedWatches.count, 1))
        let volumes = UnsafeMutablePointer<Volume>.allocate(capacity: max(volumeList.count, 1))
        for (v, volume) in volumeList.enumerated() { (volumes + v).initialize(to: volume) }

        var delayResetCount = 0
        var tapCount = 0
        for (i, input) in description.inputs.enumerated() {
            let line = description.lookaheadFrames > 0 && input.delayed ? delayLines[input.meterSlot] : nil
            let tapped = (0..<Int32(capacity.maxTapGroups)).contains(input.tapGroup)
            let tap = tapped ? taps.inputs[input.meterSlot] : nil
            if tap != nil { tapCount += 1 }
            (inputs + i).initialize(to: Input(port: input.port.pointer, meterSlot: input.meterSlot,
                                              watch: (0..<Int32(capacity.maxLevelWatches)).contains(input.watch) ? input.watch : -1,
                                              delayLine: line, tap: tap, tapGroup: tap == nil ? -1 : input.tapGroup,
                                              volumeBuffer: volumeBuffers[input.meterSlot]))
            if let line, resetSlots.contains(input.meterSlot) {
                (delayResets + delayResetCount).initialize(to: line)
                delayResetCount += 1
            }
        }
        for (w, watch) in clearedWatches.enumerated() { (watchClears + w).initialize(to: watch) }
        var next = 0
        for (o, output) in description.outputs.enumerated() {
            let tapped = (0..<Int32(capacity.maxTapGroups)).contains(output.tapGroup)
            let tap = tapped ? taps.outputs[output.meterSlot] : nil
            if tap != nil { tapCount += 1 }
            (outputs + o).initialize(to: Output(port: output.port.pointer, meterSlot: output.meterSlot,
                                                firstContribution: Int32(next),
                                                contributionCount: Int32(output.contributions.count),
                                                delayed: output.delayed && description.lookaheadFrames > 0, tap: tap,
                                                tapGroup: tap == nil ? -1 : output.tapGroup))
            for c in output.contributions {
                var clamped = c
                // A cell never boosts by more than +24 dB and never ramps in zero samples.
                clamped.target = min(max(c.target, 0), Engine.maximumCellGain)
                clamped.rampFrames = max(c.rampFrames, 1)
                (contributions + next).initialize(to: clamped)
                next += 1
            }
        }
        for (r, slot) in description.resetSlots.enumerated() { (resets + r).initialize(to: slot) }

        plan.initialize(to: MixPlan(generation: generation, lookaheadFrames: min(max(description.lookaheadFrames, 0), capacity.maxLookaheadFrames),
                                    lookaheadFadeFrames: max(description.lookaheadFadeFrames, 0),
                                    isScheduled: description.startFrame != nil, startFrame: description.startFrame ?? 0,
                                    inputCount: description.inputs.count, inputs: inputs,
                                    outputCount: description.outputs.count, outputs: outputs,
                                    contributionCount: contributionCount, contributions: contributions,
                                    resetCount: description.resetSlots.count, resets: resets,
                                    delayResetCount: delayResetCount, delayResets: delayResets,
                                    watchClearCount: clearedWatches.count, watchClears: watchClears,
                                    volumeCount: volumeList.count, volumes: volumes, tapCount: tapCount))
        return plan
    }

    /// Frees a plan. Control thread only, and only for a plan the process thread has handed back
    /// (or never received).
    static func destroy(_ plan: UnsafeMutablePointer<MixPlan>) {
        plan.pointee.inputs.deallocate()
        plan.pointee.outputs.deallocate()
        plan.pointee.contributions.deallocate()
        plan.pointee.resets.deallocate()
        plan.pointee.delayResets.deallocate()
        plan.pointee.watchClears.deallocate()
        plan.pointee.volumes.deallocate()
        plan.deallocate()
    }
}

/// One input's look-ahead delay: a ring of past samples and the block read back from it.
///
/// Ownership: made by `Engine.publish` on the control thread, one per input meter slot, the first
/// time a look-ahead plan has that input; used by the process thread through the plans; freed
/// with the engine. Only the process thread writes `writeIndex`, `history` and the samples, except
/// in `Engine.discardPlans`, when no cycle can run.
///
/// The ring outlives the audio it holds: a slot passes to another app, a voice stops being delayed
/// and is delayed again later, the server goes away and comes back. None of that audio may ever be
/// heard after the change, so a line can be reset in O(1) on the audio thread: `history` counts
/// the samples written since the reset, and anything older reads back as silence.
struct DelayLine {
    var buffer: UnsafeMutablePointer<Float>
    var capacity: Int
    var writeIndex: Int
    /// Samples written since the last reset (64 bits: it never wraps in practice).
    var history: Int
    var out: UnsafeMutablePointer<Float>

    static func make(capacity: Int, maxFrames: Int) -> UnsafeMutablePointer<DelayLine> {
        let line = UnsafeMutablePointer<DelayLine>.allocate(capacity: 1)
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
        buffer.initialize(repeating: 0, count: capacity)
        let out = UnsafeMutablePointer<Float>.allocate(capacity: maxFrames)
        out.initialize(repeating: 0, count: maxFrames)
        line.initialize(to: DelayLine(buffer: buffer, capacity: capacity, writeIndex: 0, history: 0, out: out))
        return line
    }

    static func destroy(_ line: UnsafeMutablePointer<DelayLine>) {
        line.pointee.buffer.deallocate()
        line.pointee.out.deallocate()
        line.deallocate()
    }

    /// Forgets every sample written so far: they read back as silence from now on.
    @_noLocks
    static func reset(_ line: UnsafeMutablePointer<DelayLine>) {
        line.pointee.history = 0
    }

    /// Writes `frames` new samples and reads back the `frames` samples written `delay` before
    /// them into `out` (silence for any written before the last reset, and the first `fade`
    /// written after it rising linearly from silence). `delay + frames` must not exceed the
    /// capacity. Block copies (memmove), at most two per direction where the ring wraps.
    @_noLocks
    static func process(_ line: UnsafeMutablePointer<DelayLine>, _ input: UnsafePointer<Float>, frames: Int, delay: Int, fade: Int = 0) {
        let capacity = line.pointee.capacity
        let buffer = line.pointee.buffer
        let w = line.pointee.writeIndex
        let firstWrite = min(frames, capacity &- w)
        copy(buffer + w, input, firstWrite)
        if firstWrite < frames { copy(buffer, input + firstWrite, frames &- firstWrite) }
        var r = w &- delay
        if r < 0 { r &+= capacity }
        let out = line.pointee.out
        let firstRead = min(frames, capacity &- r)
        copy(out, buffer + r, firstRead)
        if firstRead < frames { copy(out + firstRead, buffer, frames &- firstRead) }
        // out[j] was written `delay + frames - 1 - j` samples before the newest one: it is sample
        // number `history - delay - frames + j` since the reset, and the first
        // `frames + delay - history` of them predate the reset.
        let history = line.pointee.history &+ frames
        line.pointee.history = history
        let first = history &- delay &- frames
        let predating = min(max(-first, 0), frames)
        if predating > 0 { out.update(repeating: 0, count: predating) }
        if fade > 0 && first &+ frames > 0 && first < fade {
            var j = predating
            let scale = 1 / Float(fade)
            while j < frames && first &+ j < fade {
                out[j] *= Float(first &+ j &+ 1) * scale
                j &+= 1
            }
        }
        var next = w &+ frames
        if next >= capacity { next &-= capacity }
        line.pointee.writeIndex = next
    }

    /// memmove of `count` samples (no allocation, no lock; the checker cannot see into libc).
    @_noLocks @inline(__always)
    private static func copy(_ destination: UnsafeMutablePointer<Float>, _ source: UnsafePointer<Float>, _ count: Int) {
        _ = _unsafePerformance { memmove(destination, source, count &* MemoryLayout<Float>.stride) }
    }
}
