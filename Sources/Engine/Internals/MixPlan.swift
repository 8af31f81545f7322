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
    }

    struct Output {
        var port: UnsafeMutableRawPointer
        var meterSlot: Int32
        var firstContribution: Int32
        var contributionCount: Int32
    }

    var generation: UInt64
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

    /// Checks `description` against the engine's capacities and copies it into unmanaged memory.
    static func make(_ description: MixPlanDescription, generation: UInt64,
                     capacity: Engine.Configuration) throws(MixPlanError) -> UnsafeMutablePointer<MixPlan> {
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

        let contributionCount = description.outputs.reduce(0) { $0 + $1.contributions.count }
        let plan = UnsafeMutablePointer<MixPlan>.allocate(capacity: 1)
        let inputs = UnsafeMutablePointer<Input>.allocate(capacity: max(description.inputs.count, 1))
        let outputs = UnsafeMutablePointer<Output>.allocate(capacity: max(description.outputs.count, 1))
        let contributions = UnsafeMutablePointer<MixContribution>.allocate(capacity: max(contributionCount, 1))
        let resets = UnsafeMutablePointer<Int32>.allocate(capacity: max(description.resetSlots.count, 1))

        for (i, input) in description.inputs.enumerated() {
            (inputs + i).initialize(to: Input(port: input.port.pointer, meterSlot: input.meterSlot,
                                              watch: (0..<Int32(capacity.maxLevelWatches)).contains(input.watch) ? input.watch : -1))
        }
        var next = 0
        for (o, output) in description.outputs.enumerated() {
            (outputs + o).initialize(to: Output(port: output.port.pointer, meterSlot: output.meterSlot,
                                                firstContribution: Int32(next),
                                                contributionCount: Int32(output.contributions.count)))
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

        plan.initialize(to: MixPlan(generation: generation,
                                    isScheduled: description.startFrame != nil, startFrame: description.startFrame ?? 0,
                                    inputCount: description.inputs.count, inputs: inputs,
                                    outputCount: description.outputs.count, outputs: outputs,
                                    contributionCount: contributionCount, contributions: contributions,
                                    resetCount: description.resetSlots.count, resets: resets))
        return plan
    }

    /// Frees a plan. Control thread only, and only for a plan the process thread has handed back
    /// (or never received).
    static func destroy(_ plan: UnsafeMutablePointer<MixPlan>) {
        plan.pointee.inputs.deallocate()
        plan.pointee.outputs.deallocate()
        plan.pointee.contributions.deallocate()
        plan.pointee.resets.deallocate()
        plan.deallocate()
    }
}
