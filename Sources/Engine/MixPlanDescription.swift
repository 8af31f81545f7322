/// What the control thread wants the audio thread to do, in plain Swift values.
///
/// Ports are opaque handles (the JACK host's `jack_port_t *`); the engine only hands them back to
/// the port-buffer function. `Engine.publish` checks the description and copies it into a `MixPlan`
/// in unmanaged memory that the process thread can read without retaining anything.
public struct MixPlanDescription: Sendable {
    public struct Input: Sendable {
        public var port: PortHandle
        /// The stable index of this channel in the input meters.
        public var meterSlot: Int32
        /// The level watch this channel's peak goes to each cycle (`Engine.collectLevels`), or -1.
        /// A watch whose channels change between plans starts its peak afresh.
        public var watch: Int32
        /// Delayed outputs hear this channel `lookaheadFrames` late (others hear it at once). A
        /// channel that was not delayed in the plan published before (or whose meter slot was
        /// another port's) starts from silence: its look-ahead never replays older audio.
        public var delayed: Bool
        /// Its samples go to its meter slot's loudness tap (`Engine.loudnessTap(input:)`), as part
        /// of tap group `tapGroup` (an app's channels; -1: not tapped). A group's taps get a span
        /// all together or, when one is full, not at all, so its channels stay aligned.
        public var tapGroup: Int32 = -1
        /// Where its meter slot's volume stage goes (the app's volume, applied before the mix),
        /// nil: it stays as it is (a removed app's channel, still read while its cells fade).
        /// A slot whose port is not the one it had in the plan published before starts at the
        /// target (its cells are new and rise from silence).
        public var volume: VolumeTarget?
        public init(port: PortHandle, meterSlot: Int32, watch: Int32 = -1, delayed: Bool = false) {
            self.port = port
            self.meterSlot = meterSlot
            self.watch = watch
            self.delayed = delayed
        }
    }

    public struct Output: Sendable {
        public var port: PortHandle
        /// The stable index of this channel in the output meters.
        public var meterSlot: Int32
        /// The contributions summed into this output; their `input` indexes `inputs`.
        public var contributions: [MixContribution]
        /// Mixed from the delayed inputs as they were `lookaheadFrames` ago (gains apply now): a
        /// look-ahead route, whose ducks land before the voice that caused them is heard.
        public var delayed = false
        /// What it carries goes to its meter slot's loudness tap (`Engine.loudnessTap(output:)`),
        /// as part of tap group `tapGroup` (a route's channels; -1: not tapped).
        public var tapGroup: Int32 = -1
        /// Where its meter slot's volume stage goes (the route's volume, applied to the mixed
        /// samples); nil: it stays as it is. A new port on the slot starts at the target.
        public var volume: VolumeTarget?
        public init(port: PortHandle, meterSlot: Int32, contributions: [MixContribution]) {
            self.port = port
            self.meterSlot = meterSlot
            self.contributions = contributions
        }
    }

    public var inputs: [Input]
    public var outputs: [Output]
    /// Gain slots that are new to this plan (or reused): the audio thread sets them to silence
    /// before applying targets, so every new cell ramps up from zero.
    public var resetSlots: [Int32]
    /// The frame (on the engine's frame clock, JACK's frame time under JACK) at which the plan
    /// takes over, sample-accurately; nil: at the start of the next cycle. Plans are taken in the
    /// order they are published, so a scheduled plan also holds back the plans behind it.
    public var startFrame: UInt32?
    /// How far behind delayed outputs hear their inputs, in frames (0: no delay lines). At most
    /// `Engine.Configuration.maxLookaheadFrames`.
    public var lookaheadFrames = 0
    /// A delay line that starts afresh (silent for `lookaheadFrames`) fades its first samples in
    /// over this many frames, so a voice that becomes delayed comes back without a step.
    public var lookaheadFadeFrames = 0

    public init(inputs: [Input] = [], outputs: [Output] = [], resetSlots: [Int32] = [], startFrame: UInt32? = nil) {
        self.inputs = inputs
        self.outputs = outputs
        self.resetSlots = resetSlots
        self.startFrame = startFrame
    }
}

/// An opaque, `Sendable` wrapper for a port pointer owned by the JACK host.
public struct PortHandle: Hashable, Sendable {
    public let bits: UInt
    public init(_ pointer: UnsafeMutableRawPointer) { bits = UInt(bitPattern: pointer) }
    public var pointer: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: bits)! }
}

/// Why a description cannot become a plan. These are programming errors on the control side,
/// reported rather than trapped so a running show keeps its previous plan.
public enum MixPlanError: Error, Equatable, CustomStringConvertible {
    case tooManyInputs(Int, capacity: Int)
    case tooManyOutputs(Int, capacity: Int)
    case inputIndexOutOfRange(Int32, output: Int)
    case gainSlotOutOfRange(Int32)
    case gainSlotUsedTwice(Int32)
    case meterSlotOutOfRange(Int32)
    case targetNotFinite(gainSlot: Int32)
    case volumeNotFinite(meterSlot: Int32)

    public var description: String {
        switch self {
        case let .tooManyInputs(n, capacity): "plan has \(n) input channels, engine capacity is \(capacity)"
        case let .tooManyOutputs(n, capacity): "plan has \(n) output channels, engine capacity is \(capacity)"
        case let .inputIndexOutOfRange(i, output): "output \(output) names input \(i), which the plan does not have"
        case let .gainSlotOutOfRange(s): "gain slot \(s) is outside the engine's gain table"
        case let .gainSlotUsedTwice(s): "gain slot \(s) is used by two contributions"
        case let .meterSlotOutOfRange(s): "meter slot \(s) is outside the engine's meter table"
        case let .targetNotFinite(s): "gain slot \(s) was given a target that is not a finite number"
        case let .volumeNotFinite(s): "the volume of meter slot \(s) is not a finite number"
        }
    }
}
