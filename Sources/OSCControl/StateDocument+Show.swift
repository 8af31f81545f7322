import Policy

extension StateDocument {
    /// The show in `/state` (`settings.show`): its scenes, the cue list and where it stands.
    struct ShowState: Encodable {
        struct CueEntry: Encodable {
            var scene: String
            var `continue`: Bool
            var wait: Double
        }
        /// Every scene's name (the session file's in order, then those only stored), and those
        /// stored at run time.
        var scenes: [String]
        var stored: [String]
        /// The apps and routes no recall touches (the show's own list).
        var safe: [String]
        /// The scene last recalled (absent: none), whether its fade still runs, and how long that
        /// fade takes (ms).
        var scene: String?
        var fading: Bool
        var fade: Double
        var cues: [CueEntry]
        /// The cue last fired and the cue at the playhead, counting from 1 (absent: none; the
        /// playhead past the last cue).
        var cue: Int?
        var next: Int?

        init(_ show: Show) {
            scenes = show.sceneNames
            stored = show.stored.map(\.name)
            safe = show.safe
            scene = show.currentScene
            fading = show.fading
            fade = show.fadeMilliseconds
            cues = show.cues.map { CueEntry(scene: $0.scene, continue: $0.continues, wait: $0.wait) }
            cue = show.current.map { $0 + 1 }
            next = show.next < show.cues.count ? show.next + 1 : nil
        }
    }
}
