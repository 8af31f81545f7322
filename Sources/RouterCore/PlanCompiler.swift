import Engine

/// Turns "which input channel feeds which output channel at what gain" into engine plans, keeping
/// each mix cell on the same gain slot for as long as it lives so ramps carry across plans.
///
/// A cell that is no longer wanted is not dropped at once (that would be a step to silence): it
/// stays in the plans with target 0 until its fade has certainly finished on the audio thread, then
/// its slot is freed. New cells are marked for reset, so they ramp up from silence.
struct PlanCompiler {
    /// One input channel, named by its stable meter slot.
    struct Input: Equatable {
        var port: PortHandle
        var key: Int32
        /// The level watch its peak goes to each cycle, or -1.
        var watch: Int32 = -1
        /// Heard late on look-ahead routes.
        var delayed = false
    }

    /// One output channel and what it should receive.
    struct Output: Equatable {
        var port: PortHandle
        var key: Int32
        /// (input key, linear gain, ramp length) triples. A gain of 0 fades the cell out over its
        /// ramp and then frees it; the ramp applies when the gain differs from the cell's target.
        var feeds: [(input: Int32, gain: Float, rampFrames: Int32)]

        static func == (a: Output, b: Output) -> Bool {
            a.port == b.port && a.key == b.key && a.feeds.elementsEqual(b.feeds) { $0 == $1 }
        }
    }

    private struct CellKey: Hashable {
        var input: Int32
        var output: Int32
    }

    private struct Cell {
        var gainSlot: Int32
        var inputPort: PortHandle
        var outputPort: PortHandle
        /// When fading out: the processed-frame count after which the slot can be freed.
        var dropAfter: UInt64?
    }

    private var cells: [CellKey: Cell] = [:]
    private var freeSlots: [Int32] = []
    private var nextSlot: Int32 = 0
    let slotCapacity: Int

    init(slotCapacity: Int) {
        self.slotCapacity = slotCapacity
    }

    enum CompileError: Error, Equatable, CustomStringConvertible {
        case outOfGainSlots(capacity: Int)
        var description: String {
            switch self {
            case let .outOfGainSlots(capacity): "the mix needs more than \(capacity) cells (engine gain-slot capacity)"
            }
        }
    }

    /// The result of one compilation.
    struct Result {
        var plan: MixPlanDescription
        /// The earliest processed-frame count at which a recompilation would free a fading cell.
        var nextDrop: UInt64?
        /// Cells alive (audible or fading) in this plan.
        var cellCount: Int
    }

    /// Whether any cell (audible or fading) still reads the input with this key.
    func hasCells(input key: Int32) -> Bool {
        cells.keys.contains { $0.input == key }
    }

    /// Whether any cell (audible or fading) still writes the output with this key.
    func hasCells(output key: Int32) -> Bool {
        cells.keys.contains { $0.output == key }
    }

    /// Builds the next plan.
    /// - Parameters:
    ///   - now: frames the audio thread has processed so far.
    ///   - rampFrames: the ramp of cells whose feed is gone altogether (a removed app or route).
    ///   - settleFrames: extra frames to wait before freeing a faded cell (covers the plan's
    ///     adoption delay: at least two periods).
    mutating func compile(inputs: [Input], outputs: [Output], rampFrames: Int32,
                          now: UInt64, settleFrames: UInt64) throws(CompileError) -> Result {
        var wanted: [CellKey: Float] = [:]
        var ramps: [CellKey: Int32] = [:]
        for output in outputs {
            for feed in output.feeds {
                let key = CellKey(input: feed.input, output: output.key)
                ramps[key] = max(ramps[key] ?? 1, feed.rampFrames, 1)
                if feed.gain > 0 { wanted[key, default: 0] += feed.gain }
            }
        }

        var resets: [Int32] = []
        for key in wanted.keys.sorted(by: { ($0.output, $0.input) < ($1.output, $1.input) }) {
            if var cell = cells[key] {
                cell.dropAfter = nil
                cells[key] = cell
                continue
            }
            let slot: Int32
            if let reused = freeSlots.popLast() {
                slot = reused
            } else if Int(nextSlot) < slotCapacity {
                slot = nextSlot
                nextSlot += 1
            } else {
                throw .outOfGainSlots(capacity: slotCapacity)
            }
            let inputPort = inputs.first { $0.key == key.input }!.port
            let outputPort = outputs.first { $0.key == key.output }!.port
            cells[key] = Cell(gainSlot: slot, inputPort: inputPort, outputPort: outputPort, dropAfter: nil)
            resets.append(slot)
        }

        var nextDrop: UInt64?
        for (key, var cell) in cells where wanted[key] == nil {
            if let dropAfter = cell.dropAfter {
                if now >= dropAfter {
                    cells[key] = nil
                    freeSlots.append(cell.gainSlot)
                    continue
                }
                nextDrop = min(nextDrop ?? dropAfter, dropAfter)
            } else {
                cell.dropAfter = now + UInt64(ramps[key] ?? max(rampFrames, 1)) + settleFrames
                cells[key] = cell
                nextDrop = min(nextDrop ?? cell.dropAfter!, cell.dropAfter!)
            }
        }

        // Every current input and output is in the plan (outputs must be written every cycle, and
        // inputs are metered), plus any port a fading cell still needs.
        var planInputs = inputs.map { MixPlanDescription.Input(port: $0.port, meterSlot: $0.key, watch: $0.watch, delayed: $0.delayed) }
        var inputIndex: [Int32: Int32] = [:]
        for (i, input) in inputs.enumerated() { inputIndex[input.key] = Int32(i) }
        var planOutputs = outputs.map { MixPlanDescription.Output(port: $0.port, meterSlot: $0.key, contributions: []) }
        var outputIndex: [Int32: Int] = [:]
        for (o, output) in outputs.enumerated() { outputIndex[output.key] = o }

        for key in cells.keys.sorted(by: { ($0.output, $0.input) < ($1.output, $1.input) }) {
            let cell = cells[key]!
            if inputIndex[key.input] == nil {
                inputIndex[key.input] = Int32(planInputs.count)
                planInputs.append(.init(port: cell.inputPort, meterSlot: key.input))
            }
            if outputIndex[key.output] == nil {
                outputIndex[key.output] = planOutputs.count
                planOutputs.append(.init(port: cell.outputPort, meterSlot: key.output, contributions: []))
            }
            planOutputs[outputIndex[key.output]!].contributions.append(
                MixContribution(input: inputIndex[key.input]!, gainSlot: cell.gainSlot,
                                target: wanted[key] ?? 0, rampFrames: ramps[key] ?? max(rampFrames, 1)))
        }
        return Result(plan: MixPlanDescription(inputs: planInputs, outputs: planOutputs, resetSlots: resets),
                      nextDrop: nextDrop, cellCount: cells.count)
    }
}
