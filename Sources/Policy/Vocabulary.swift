/// The words of an audio session, as apps and session files spell them (docs/OSC.md, "Paths";
/// docs/SESSIONS.md, "An app").
///
/// The rules that use them (which sessions mix, duck or interrupt) are in `PolicyEngine`; these
/// types are the shared vocabulary that the session file and OSC layers validate against.

/// What an app's sound is for.
public enum Category: String, CaseIterable, Sendable, Codable {
    case ambient, soloAmbient, playback, record, playAndRecord, multiRoute
}

/// Modifiers of a category.
public enum CategoryOption: String, CaseIterable, Sendable, Codable {
    case mixWithOthers, duckOthers, interruptSpokenAudioAndMixWithOthers
}

/// What kind of content an app plays within its category.
public enum Mode: String, CaseIterable, Sendable, Codable {
    case `default`, spokenAudio, voicePrompt, voiceChat, videoChat, moviePlayback, measurement
}

/// Commands a remote control (a control surface, a headset button) can send to the app in charge.
public enum RemoteCommand: String, CaseIterable, Sendable, Codable {
    case play, pause, togglePlayPause, stop, nextTrack, previousTrack
    case skipForward, skipBackward, seek, changePlaybackRate
}

/// Who re-activates an app after a resumable interruption ends.
public enum ResumePolicy: String, CaseIterable, Sendable, Codable {
    /// The app activates itself again (it speaks OSC).
    case app
    /// The router re-activates it (a plain JACK source that speaks no OSC).
    case auto
}

/// What activates an app.
public enum Activation: String, CaseIterable, Sendable, Codable {
    /// A request: the app over OSC, a person, or the session file's `active` at start.
    case osc
    /// Its own sound: active while its input stays above a threshold (docs/POLICY.md, "Signal
    /// activation"). Until then it is heard whenever it could be activated, so its first syllable
    /// is not lost; it ducks and interrupts others only once active.
    case signal
}

/// How a signal-activated app's sound is judged (docs/SESSIONS.md, `signal`).
public struct SignalDetection: Equatable, Sendable {
    /// Peak level, dBFS, the input must reach.
    public var threshold: Double = -40
    /// Milliseconds it must stay at or above the threshold before the app activates.
    public var attack: Double = 10
    /// Milliseconds it must stay below `threshold - hysteresis` before the app deactivates.
    public var hold: Double = 500
    /// dB below the threshold that count as silence (a level between the two changes nothing).
    public var hysteresis: Double = 6

    public init(threshold: Double = -40, attack: Double = 10, hold: Double = 500, hysteresis: Double = 6) {
        self.threshold = threshold
        self.attack = attack
        self.hold = hold
        self.hysteresis = hysteresis
    }

    /// The linear peak levels to activate at and to count as silence.
    public var activateLevel: Float { Decibels.linear(Float(threshold)) }
    public var silenceLevel: Float { Decibels.linear(Float(threshold - hysteresis)) }
}

/// Why an app is active, as notifications and `/state` report it.
public enum ActivationReason: String, Sendable, Codable {
    /// A request over OSC (or the session file's `active` at start).
    case osc
    /// Its input level (signal activation).
    case signal
    /// The router resumed it after an interruption (`resume: auto`).
    case autoResume = "auto-resume"
}

extension Category {
    /// Whether the category receives the input route (docs/POLICY.md §5.8).
    public var recordsInput: Bool { self == .record || self == .playAndRecord }

    /// Whether options may be set: only categories that can choose to mix (docs/POLICY.md §5.1).
    public var acceptsOptions: Bool {
        switch self {
        case .playback, .playAndRecord, .multiRoute: true
        case .ambient, .soloAmbient, .record: false
        }
    }

    /// The modes this category may be combined with.
    public var allowedModes: Set<Mode> {
        switch self {
        case .ambient, .soloAmbient, .multiRoute: [.default]
        case .playback: [.default, .spokenAudio, .voicePrompt, .moviePlayback, .measurement]
        case .record: [.default, .measurement]
        case .playAndRecord: [.default, .spokenAudio, .voicePrompt, .voiceChat, .videoChat, .measurement]
        }
    }

    /// Whether the silent switch silences this category (docs/POLICY.md §5.6).
    public var obeysSilentSwitch: Bool { self == .ambient || self == .soloAmbient }
}

extension CategoryOption {
    /// Whether the option lets an app of a category that can choose to mix play along with others
    /// (docs/POLICY.md §5.1). Each option says so: a new one decides, rather than making an app
    /// mixable by being there.
    public var mixes: Bool {
        switch self {
        case .mixWithOthers, .duckOthers, .interruptSpokenAudioAndMixWithOthers: true
        }
    }
}

extension RemoteCommand {
    /// What the command's optional value means, and which values are valid.
    public enum ValueRule: Sendable { case none, required(ClosedRange<Double>, String), optional(ClosedRange<Double>, String) }

    public var valueRule: ValueRule {
        switch self {
        case .play, .pause, .togglePlayPause, .stop, .nextTrack, .previousTrack: .none
        case .seek: .required(0...Double.greatestFiniteMagnitude, "a position in seconds, 0 or more")
        case .changePlaybackRate: .required(0.0625...16, "a playback rate from 0.0625 to 16")
        case .skipForward, .skipBackward: .optional(0.001...86_400, "an interval in seconds, above 0")
        }
    }
}
