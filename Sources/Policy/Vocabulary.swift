/// The words of an audio session, as apps and session files spell them (../shared/DESIGN.md §3).
///
/// The rules that use them (which sessions mix, duck or interrupt) come with the policy engine;
/// these types are the shared vocabulary that the session file and OSC layers validate against.

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
