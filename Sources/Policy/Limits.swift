/// The ranges of the numbers the policy checks, written once: the policy checks values against
/// these, and the session loader, the control vocabulary (OSC, OSCQuery, `duckctl`) and the
/// schema's test read them. (A remote command's value range is `RemoteCommand.valueRule`'s;
/// settings only a session file has, such as the ramp or a route's look-ahead, are the loader's.)
public enum Limits {
    /// A volume as a slider position (an app's, a route's, the system's).
    public static let volume: ClosedRange<Double> = 0...1
    /// An app's gain, dB; -144 or less is silence.
    public static let appGain: ClosedRange<Double> = -144...24
    /// The system gain of a route, dB; -144 or less is silence.
    public static let systemGain: ClosedRange<Double> = -144...0
    /// How far a duck lowers the others, and the deepest a loudness-targeted duck goes, dB.
    public static let duckLevel: ClosedRange<Double> = -144...0
    /// The loudness difference a duck aims at, LU.
    public static let duckTarget: ClosedRange<Double> = 0...60
    /// Ramp times: a duck's attack and release, a signal's hold, ms.
    public static let rampMilliseconds: ClosedRange<Double> = 0...60000
    /// Signal activation: the threshold (dBFS), the attack (ms), the hysteresis (dB).
    public static let signalThreshold: ClosedRange<Double> = -120...0
    public static let signalAttack: ClosedRange<Double> = 0...10000
    public static let signalHysteresis: ClosedRange<Double> = 0...40
    /// The input channels of an app.
    public static let appChannels: ClosedRange<Int> = 1...32
    /// The longest name of an app or a route, in bytes (it becomes part of JACK port names).
    public static let nameBytes = 48
    /// The longest free text a message names (an interruption's source, a ducking rule's apps).
    public static let textBytes = 256
    /// A meter's reading, dBFS (the floor is silence).
    public static let meter: ClosedRange<Double> = -144...0
    /// A scene's fade, ms (ten minutes at most).
    public static let fadeMilliseconds: ClosedRange<Double> = 0...600_000
    /// The wait before an auto-continuing cue's next cue, ms (an hour at most).
    public static let cueWaitMilliseconds: ClosedRange<Double> = 0...3_600_000
    /// Scenes in a show, and cues in its list.
    public static let scenes = 1024
    public static let cues = 4096
}
