import Engine

/// Turns "which input channel feeds which output channel at what gain" into engine plans, keeping
/// each mix cell on the same gain slot for as long as it lives so ramps carry across plans.
///
/// Owns: the mix cells and their gain slots. Must not touch: the engine, ports, the policy.
/// `compile` changes nothing: it returns a draft, and only `commit` (called once the engine has
/// taken the draft's plan) makes it the compiler's state, so a plan that is refused anywhere
/// leaves every cell and slot as it was.
///
/// A cell that is no longer wanted is not dropped at once (that would be a step to silence): it
/// stays in the plans with target 0 while it fades. Its slot is freed only after the audio thread
/// has adopted the plan that started the fade (by plan generation, however long that plan waited
/// behind a scheduled one) and the ramp has run out. New cells are marked for reset, so they ramp
/// up from silence.
struct PlanCompiler {
    /// One input channel, named by its stable meter slot.
    struct Input: Equatable {
        var port: PortHandle
        var meterSlot: Int32
        /// The level watch its peak goes to each cycle, or -1.
        var watch: Int32 = -1
        /// Heard late on look-ahead routes.
        var delayed = false
        /// Its loudness tap group (its app's), or -1.
        var tapGroup: Int32 = -1
        /// Its volume stage's target (its app's volume); nil: the stage stays as it is.
        var volume: VolumeTarget? = nil
    }

    /// What one input channel contributes to an output channel.
    struct Feed: Equatable {
        var input: Int32
        var gain: Float
        var rampFrames: Int32
    }

    /// One output channel and what it should receive.
    struct Output: Equatable {
        var port: PortHandle
        var meterSlot: Int32
        /// A gain of 0 fades the cell out over its ramp and then frees it; the ramp applies when
        /// the gain differs from the cell's target. Several feeds of one input add up.
        var feeds: [Feed]
        /// Mixed from the delayed inputs (a look-ahead route).
        var delayed = false
        /// Its loudness tap group (its route's), or -1.
        var tapGroup: Int32 = -1
        /// Its volume stage's target (its route's volume); nil: the stage stays as it is.
        var volume: VolumeTarget? = nil
    }

    /// A cell is one input heard on one output, on one path: on a look-ahead output an input is
    /// heard either delayed or at once, and a change between the two crossfades two cells
    /// instead of jumping in time.
    fileprivate struct CellKey: Hashable, Comparable {
        var output: Int32
        var input: Int32
        var delayed: Bool
        static func < (a: CellKey, b: CellKey) -> Bool {
            (a.output, a.input, a.delayed ? 1 : 0) < (b.output, b.input, b.delayed ? 1 : 0)
        }
    }

    fileprivate enum Fade: Equatable {
        /// The plan being drafted starts the fade.
        case starting(rampFrames: Int32)
        /// The plan of that generation started it; the audio thread may not have it yet.
        case published(generation: UInt64, rampFrames: Int32)
        /// Finished (with margin) once the audio thread has processed this many frames.
        case endsAt(UInt64)
    }

    fileprivate struct Cell {
        var gainSlot: Int32
        var inputPort: PortHandle
        var outputPort: PortHandle
        /// nil while the cell is wanted.
        var fade: Fade?
    }

    private var cells: [CellKey: Cell] = [:]
    private var gainSlots: SlotAllocator
    /// Cells fading (so `noteAdoption` has nothing to look at when there are none).
    private var fadingCount = 0
    /// Whether any cell is fading (published, or adopted and not yet over).
    var isFading: Bool { fadingCount > 0 }

    init(slotCapacity: Int) {
        gainSlots = SlotAllocator(capacity: slotCapacity)
    }

    enum CompileError: Error, Equatable, CustomStringConvertible {
        case outOfGainSlots(capacity: Int)
        var description: String {
            switch self {
            case let .outOfGainSlots(capacity): "the mix needs more than \(capacity) cells (engine gain-slot capacity)"
            }
        }
    }

    /// A compiled plan and the compiler state that goes with it, not yet in force.
    struct Draft {
        var plan: MixPlanDescription
        /// Cells alive (audible or fading) in this plan.
        var cellCount: Int
        fileprivate var cells: [CellKey: Cell]
        fileprivate var gainSlots: SlotAllocator
    }

    /// Cells alive (audible or fading) in the last committed plan.
    var cellCount: Int { cells.count }

    /// Gain slots the engine has: cells alive at once.
    var slotCapacity: Int { gainSlots.capacity }

    /// Input meter slots and output meter slots that some cell of the committed plan uses.
    func slotsInUse() -> (inputs: Set<Int32>, outputs: Set<Int32>) {
        var inputs = Set<Int32>(), outputs = Set<Int32>()
        for key in cells.keys {
            inputs.insert(key.input)
            outputs.insert(key.output)
        }
        return (inputs, outputs)
    }

    /// Builds the next plan without changing anything.
    /// - Parameters:
    ///   - rampFrames: the ramp of cells whose feed is gone altogether (a removed app or route).
    ///   - now: frames the audio thread has processed so far (fades that ended by then are freed).
    func compile(inputs: [Input], outputs: [Output], rampFrames: Int32, now: UInt64) throws(CompileError) -> Draft {
        var cells = self.cells
        var gainSlots = self.gainSlots
        let delayedInput = Dictionary(inputs.map { ($0.meterSlot, $0.delayed) }, uniquingKeysWith: { a, _ in a })
        let inputPorts = Dictionary(inputs.map { ($0.meterSlot, $0.port) }, uniquingKeysWith: { a, _ in a })
        var wanted: [CellKey: Float] = [:]
        var ramps: [CellKey: Int32] = [:]
        var outputPorts: [Int32: PortHandle] = [:]
        var delayedOutput: [Int32: Bool] = [:]
        for output in outputs {
            outputPorts[output.meterSlot] = output.port
            delayedOutput[output.meterSlot] = output.delayed
            for feed in output.feeds {
                let key = CellKey(output: output.meterSlot, input: feed.input,
                                  delayed: output.delayed && delayedInput[feed.input] == true)
                ramps[key] = max(ramps[key] ?? 1, feed.rampFrames, 1)
                if feed.gain > 0 { wanted[key, default: 0] += feed.gain }
            }
        }

        // Fades that are over and not wanted again give their slots back first, so a plan that
        // fits once they are gone is not refused for them.
        for (key, cell) in cells where wanted[key] == nil {
            if case let .endsAt(frame)? = cell.fade, now >= frame {
                cells[key] = nil
                gainSlots.give(cell.gainSlot)
            }
        }
        var resets: [Int32] = []
        for key in wanted.keys.sorted() {
            if cells[key] != nil {
                // The ports may be new ones (the client was opened again).
                cells[key]!.fade = nil
                cells[key]!.inputPort = inputPorts[key.input]!
                cells[key]!.outputPort = outputPorts[key.output]!
                continue
            }
            guard let slot = gainSlots.take() else { throw .outOfGainSlots(capacity: gainSlots.capacity) }
            cells[key] = Cell(gainSlot: slot, inputPort: inputPorts[key.input]!, outputPort: outputPorts[key.output]!)
            resets.append(slot)
        }
        for (key, cell) in cells where wanted[key] == nil && cell.fade == nil {
            cells[key]!.fade = .starting(rampFrames: ramps[key] ?? max(rampFrames, 1))
        }

        // Every current input and output is in the plan (outputs must be written every cycle, and
        // inputs are metered), plus any input path or port a fading cell still needs.
        var planInputs = inputs.map { input in
            var planned = MixPlanDescription.Input(port: input.port, meterSlot: input.meterSlot, watch: input.watch, delayed: input.delayed)
            planned.tapGroup = input.tapGroup
            planned.volume = input.volume
            return planned
        }
        var inputIndex: [InputPath: Int32] = [:]
        for (i, input) in inputs.enumerated() where inputIndex[InputPath(slot: input.meterSlot, delayed: input.delayed)] == nil {
            inputIndex[InputPath(slot: input.meterSlot, delayed: input.delayed)] = Int32(i)
        }
        var planOutputs = outputs.map { output in
            var o = MixPlanDescription.Output(port: output.port, meterSlot: output.meterSlot, contributions: [])
            o.delayed = output.delayed
            o.tapGroup = output.tapGroup
            o.volume = output.volume
            return o
        }
        var outputIndex: [Int32: Int] = [:]
        for (o, output) in outputs.enumerated() { outputIndex[output.meterSlot] = o }

        for key in cells.keys.sorted() {
            let cell = cells[key]!
            // An undelayed cell on a look-ahead output reads the input's undelayed path, and the
            // other way round; the input's current path serves both where it matches.
            let onDelayedOutput = delayedOutput[key.output] ?? key.delayed
            let path = InputPath(slot: key.input, delayed: onDelayedOutput ? key.delayed : (delayedInput[key.input] ?? false))
            if inputIndex[path] == nil {
                inputIndex[path] = Int32(planInputs.count)
                planInputs.append(.init(port: cell.inputPort, meterSlot: key.input, delayed: path.delayed))
            }
            if outputIndex[key.output] == nil {
                outputIndex[key.output] = planOutputs.count
                var output = MixPlanDescription.Output(port: cell.outputPort, meterSlot: key.output, contributions: [])
                output.delayed = key.delayed
                planOutputs.append(output)
            }
            let ramp: Int32 = switch cell.fade {
            case let .starting(frames)?, let .published(_, frames)?: frames
            default: ramps[key] ?? max(rampFrames, 1)
            }
            planOutputs[outputIndex[key.output]!].contributions.append(
                MixContribution(input: inputIndex[path]!, gainSlot: cell.gainSlot, target: wanted[key] ?? 0, rampFrames: ramp))
        }
        return Draft(plan: MixPlanDescription(inputs: planInputs, outputs: planOutputs, resetSlots: resets),
                     cellCount: cells.count, cells: cells, gainSlots: gainSlots)
    }

    /// Makes a draft the compiler's state: the engine has taken its plan as `generation`.
    mutating func commit(_ draft: Draft, generation: UInt64) {
        cells = draft.cells
        gainSlots = draft.gainSlots
        fadingCount = 0
        for (key, cell) in cells where cell.fade != nil {
            fadingCount += 1
            if case let .starting(frames)? = cell.fade { cells[key]!.fade = .published(generation: generation, rampFrames: frames) }
        }
    }

    /// Drops every cell and frees its slot: only when the engine has dropped every plan (a lost
    /// client). Their port handles belong to the dead client; the next plan makes new cells on
    /// the new ports, each rising from silence (the engine fades in after a reconnect anyway).
    mutating func forgetCells() {
        for cell in cells.values { gainSlots.give(cell.gainSlot) }
        cells = [:]
        fadingCount = 0
    }

    /// Starts the clock on fades whose plan the audio thread has adopted. Returns the processed-
    /// frame count at which the earliest fade will have finished (a recompilation then frees
    /// it), or nil when no fade is running or waiting.
    /// - Parameters:
    ///   - processedFrames: read after `adopted`; the adoption happened at most one period before
    ///     it, and the plan that frees the cell takes effect at a later cycle start, so
    ///     `marginFrames` (two periods) covers both.
    mutating func noteAdoption(adopted: UInt64, processedFrames: UInt64, marginFrames: UInt64) -> UInt64? {
        guard fadingCount > 0 else { return nil }
        var earliest: UInt64?
        for (key, cell) in cells {
            switch cell.fade {
            case let .published(generation, frames)? where adopted >= generation:
                let end = processedFrames + UInt64(max(frames, 1)) + marginFrames
                cells[key]!.fade = .endsAt(end)
                earliest = min(earliest ?? end, end)
            case let .endsAt(end)?:
                earliest = min(earliest ?? end, end)
            default:
                break
            }
        }
        return earliest
    }

}

/// One input channel as a plan reads it: at once, or through its delay line.
private struct InputPath: Hashable {
    var slot: Int32
    var delayed: Bool
}
