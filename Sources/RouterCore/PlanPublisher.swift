import Engine

/// Compiles the routing matrix into a plan and hands it to the audio thread, as one step that
/// either takes effect whole or leaves everything as it was.
///
/// Owns: the plan compiler (cells and gain slots), the engine's inbox side, and the record of
/// what was published (generation, cells, whether a newer state still waits). Must not touch:
/// the policy, ports, or anything the matrix is built from; it is handed the matrix.
/// Control queue only.
struct PlanPublisher {
    private var compiler: PlanCompiler
    /// The state changed since the last plan was queued (the queue was full, a plan was refused,
    /// or plans are being coalesced): housekeeping publishes it.
    var needsPublish = false
    private(set) var publishedGeneration: UInt64 = 0
    /// Hand-offs that found the plan queue full (the state waited and was coalesced).
    private(set) var planQueueFull = 0

    init(gainSlotCapacity: Int) {
        compiler = PlanCompiler(slotCapacity: gainSlotCapacity)
    }

    /// What became of a publication.
    enum Outcome: Equatable {
        /// The engine has the plan; its generation.
        case published(UInt64)
        /// The engine's queue is full: nothing changed, the state waits (`needsPublish`).
        case queueFull
    }

    var cellCount: Int { compiler.cellCount }

    /// Whether a fade is under way: `followAdoption` has something to follow.
    var isFading: Bool { compiler.isFading }

    /// Meter slots some cell of the last published plan still reads or writes.
    func slotsInUse() -> (inputs: Set<Int32>, outputs: Set<Int32>) { compiler.slotsInUse() }

    /// Compiles and queues a plan. When compiling or the engine refuses it (capacity), throws
    /// and nothing changes: the audio thread keeps the plan it has, the compiler its cells.
    mutating func publish(_ matrix: RoutingMatrix, on engine: Engine, startFrame: UInt32? = nil) throws(RouterError) -> Outcome {
        var draft: PlanCompiler.Draft
        do {
            draft = try self.draft(matrix, on: engine)
        } catch {
            needsPublish = true
            throw error
        }
        draft.plan.startFrame = startFrame
        draft.plan.lookaheadFrames = matrix.lookaheadFrames
        draft.plan.lookaheadFadeFrames = Int(matrix.rampFrames)
        let generation: UInt64?
        do {
            generation = try engine.publish(draft.plan)
        } catch {
            needsPublish = true
            throw .capacity(error.description)
        }
        guard let generation else {
            needsPublish = true
            planQueueFull += 1
            return .queueFull
        }
        compiler.commit(draft, generation: generation)
        publishedGeneration = generation
        needsPublish = false
        return .published(generation)
    }

    /// The engine dropped every plan (the client went away): every cell's ports died with it, so
    /// the cells are forgotten; the next plan makes them anew on the new ports, from silence.
    mutating func forgetCells() {
        compiler.forgetCells()
    }

    /// Whether some plan could need more gain cells than the engine holds: a cell is one input
    /// slot on one output slot on one of two paths (at once, delayed), and slots stay taken while
    /// any cell uses them.
    func mayOverflow(inputSlots: Int, outputSlots: Int) -> Bool {
        inputSlots * outputSlots * 2 > compiler.slotCapacity
    }

    /// Compiles without publishing or keeping anything: throws when the engine could not hold
    /// the plan. For changes whose plan is published later (coalesced), so that they are refused
    /// now rather than accepted and never heard.
    func check(_ matrix: RoutingMatrix, on engine: Engine) throws(RouterError) {
        _ = try draft(matrix, on: engine)
    }

    /// The matrix compiled against the engine's progress, kept nowhere.
    private func draft(_ matrix: RoutingMatrix, on engine: Engine) throws(RouterError) -> PlanCompiler.Draft {
        do {
            return try compiler.compile(inputs: matrix.inputs, outputs: matrix.outputs,
                                        rampFrames: matrix.rampFrames, now: engine.statistics.processedFrames)
        } catch {
            throw .capacity(error.description)
        }
    }

    /// Follows the audio thread: fades whose plan it has adopted start their clock. Returns
    /// whether a fade has finished, so that a new plan would free cells.
    mutating func followAdoption(on engine: Engine, periodFrames: Int) -> Bool {
        let adopted = engine.adoptedPlanGeneration
        let processed = engine.statistics.processedFrames
        let nextFadeEnd = compiler.noteAdoption(adopted: adopted, processedFrames: processed,
                                                marginFrames: 2 * UInt64(max(periodFrames, 1)))
        return nextFadeEnd.map { processed >= $0 } ?? false
    }
}
