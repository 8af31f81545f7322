import Policy

/// The apps the scenarios use, named as a phone user would know them.
enum Apps {
    static let music = AppConfiguration(name: "music", category: .playback,
                                        remoteCommands: [.play, .pause, .togglePlayPause, .nextTrack, .seek])
    static let player2 = AppConfiguration(name: "player2", category: .playback, remoteCommands: [.play, .pause])
    static let language = AppConfiguration(name: "language", category: .playback)
    static let voip = AppConfiguration(name: "voip", category: .playAndRecord, mode: .voiceChat)
    static let game = AppConfiguration(name: "game", category: .ambient, resume: .auto)
    static let soloGame = AppConfiguration(name: "sologame", category: .soloAmbient)
    static let radio = AppConfiguration(name: "radio", category: .playback, options: [.mixWithOthers])
    static let nav = AppConfiguration(name: "nav", category: .playback,
                                      options: [.duckOthers, .interruptSpokenAudioAndMixWithOthers], mode: .voicePrompt)
    static let mic = AppConfiguration(name: "mic", category: .playAndRecord, options: [.duckOthers])
    static let book = AppConfiguration(name: "book", category: .playback, mode: .spokenAudio, resume: .auto)
    static let podcast = AppConfiguration(name: "podcast", category: .playback, mode: .spokenAudio)
    static let recorder = AppConfiguration(name: "recorder", category: .record)
    /// A DJ deck playing to every route at once (a cue on the headphones, the mix on the speaker).
    static let dj = AppConfiguration(name: "dj", category: .multiRoute, options: [.mixWithOthers])

    static let all = [music, player2, language, voip, game, soloGame, radio, nav, mic, book, podcast, recorder, dj]
}

/// A policy with every fixture app registered, two routes, and the default ducking.
func makePolicy(ducking: DuckingSettings = DuckingSettings(), privateRoutes: Set<String> = []) -> PolicyEngine {
    var policy = PolicyEngine(routes: [("speaker", 1), ("headphones", 0.5)], ducking: ducking, fadeMilliseconds: 20,
                              privateRoutes: privateRoutes)
    for app in Apps.all { try! policy.apply(.register(app)) }
    return policy
}

extension PolicyEngine {
    func audioState(_ app: String) -> AppAudioState? { mix[app]?.state }
    func gainDecibels(_ app: String) -> Double? { mix[app].map { Double(Decibels.level($0.gain)) } }
}
