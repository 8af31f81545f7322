/// One input channel feeding one output channel through one gain cell.
///
/// `gainSlot` names the cell's `GainState` in the engine's preallocated table, which outlives plans,
/// so a ramp in progress carries on when a new plan arrives. `target` and `rampFrames` are what the
/// control thread asks for; the audio thread applies them when it adopts the plan.
public struct MixContribution: Equatable, Sendable {
    public var input: Int32
    public var gainSlot: Int32
    public var target: Float
    public var rampFrames: Int32

    public init(input: Int32, gainSlot: Int32, target: Float, rampFrames: Int32) {
        self.input = input
        self.gainSlot = gainSlot
        self.target = target
        self.rampFrames = rampFrames
    }
}
