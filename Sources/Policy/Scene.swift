/// A scene: a named set of a person's settings, recalled at once with a fade (docs/SESSIONS.md,
/// "Scenes"). It names only what it changes; everything else is left as it is.
public struct Scene: Equatable, Sendable {
    /// What a scene sets on one app.
    public struct App: Equatable, Sendable {
        public var name: String
        /// Its volume (a slider position or a gain in dB).
        public var volume: Volume?
        public var muted: Bool?
        /// Activated (as `/app/<app>/activate`, with the policy's rules) or deactivated (letting
        /// the apps it interrupted resume).
        public var active: Bool?
        public init(name: String, volume: Volume? = nil, muted: Bool? = nil, active: Bool? = nil) {
            self.name = name
            self.volume = volume
            self.muted = muted
            self.active = active
        }
    }

    /// What a scene sets on one route: its volume (a slider position or a gain in dB).
    public struct Route: Equatable, Sendable {
        public var name: String
        public var volume: Volume?
        public init(name: String, volume: Volume? = nil) {
            self.name = name
            self.volume = volume
        }
    }

    /// Which route the scene selects.
    public enum RouteChoice: Equatable, Sendable {
        /// None: the graph decides again (the last device to appear wins).
        case followGraph
        case select(String)
    }

    /// The ducking settings a scene sets (`/duck/level`, `/duck/target`, `/duck/attack`,
    /// `/duck/release`).
    public struct Ducking: Equatable, Sendable {
        public var level: Double?
        /// Some(nil): ducks by level (`off`).
        public var target: Double??
        public var attack: Double?
        public var release: Double?
        public init(level: Double? = nil, target: Double?? = nil, attack: Double? = nil, release: Double? = nil) {
            self.level = level
            self.target = target
            self.attack = attack
            self.release = release
        }
        public var isEmpty: Bool { level == nil && target == nil && attack == nil && release == nil }
    }

    public var name: String
    /// How long its volumes take to get there, in ms, unless the recall says.
    public var fade: Double = 0
    public var curve: FadeCurve = .fader
    public var apps: [App] = []
    public var routes: [Route] = []
    /// nil: the route is left as it is.
    public var route: RouteChoice?
    public var silent: Bool?
    public var ducking = Ducking()
    /// Apps and routes its recall never touches (besides the show's own `safe` list).
    public var safe: [String] = []

    public init(name: String) {
        self.name = name
    }

    /// Words of `/scene/...` paths, which no scene may be named (`/scene/<name>` is its query).
    public static let reservedNames: Set<String> = ["recall", "store", "delete", "list", "current"]

    /// Why `name` cannot be a scene's (it is a part of an OSC path): nil when it can.
    public static func nameProblem(_ name: String) -> String? {
        if let problem = AppConfiguration.nameProblem(name) { return problem }
        if reservedNames.contains(name) {
            return "'\(name)' is a word of the /scene paths (\(reservedNames.sorted().joined(separator: ", "))): name the scene otherwise"
        }
        return nil
    }
}

/// One entry of the cue list: a scene, and whether the next cue follows by itself.
public struct Cue: Equatable, Sendable {
    public var scene: String
    /// The next cue is fired `wait` ms after this one's fade ends.
    public var continues: Bool
    public var wait: Double

    public init(scene: String, continues: Bool = false, wait: Double = 0) {
        self.scene = scene
        self.continues = continues
        self.wait = wait
    }
}

/// The show: its scenes, the list of cues, and where the show stands in it.
public struct Show: Equatable, Sendable {
    /// The session file's scenes, in its order.
    public var scenes: [Scene] = []
    /// Scenes stored at run time (`/scene/store`), in the order they were first stored; one with
    /// a session scene's name stands in for it until deleted.
    public internal(set) var stored: [Scene] = []
    /// Apps and routes no recall touches.
    public var safe: [String] = []
    public var cues: [Cue] = []
    /// The playhead: the index of the cue the next GO fires (`cues.count`: past the end).
    public internal(set) var next = 0
    /// The cue last fired (nil: none since the list was loaded).
    public internal(set) var current: Int?
    /// The scene last recalled, by a cue or on its own.
    public internal(set) var currentScene: String?
    /// Whether its fade is still running (the router says when it is done: `sceneFadeDone`).
    public internal(set) var fading = false
    /// Counts recalls, so that the end of a fade a later recall took over is told apart.
    public internal(set) var recallSerial = 0
    /// Counts moves of the playhead (GO, back, goto, a new list), so that an auto-continue cue
    /// scheduled before a move, even one away and back, is told apart.
    public internal(set) var playheadMoves = 0
    /// How long the fade of the scene last recalled takes, ms.
    public internal(set) var fadeMilliseconds: Double = 0

    public init(scenes: [Scene] = [], safe: [String] = [], cues: [Cue] = []) {
        self.scenes = scenes
        self.safe = safe
        self.cues = cues
    }

    /// The scene of that name: a stored one, else the session file's.
    public func scene(_ name: String) -> Scene? {
        stored.first { $0.name == name } ?? scenes.first { $0.name == name }
    }

    /// Every scene's name: the session file's in order, then those only stored.
    public var sceneNames: [String] {
        let declared = scenes.map(\.name)
        return declared + stored.map(\.name).filter { !declared.contains($0) }
    }

    /// Whether the scene of that name is a stored one.
    public func isStored(_ name: String) -> Bool { stored.contains { $0.name == name } }

    /// The stored scenes and the playhead as a state file brings them back. `nextScene`: the
    /// scene of the cue the playhead was on: when the list changed since (a cue put in above
    /// it), the playhead goes to the cue of that scene nearest to where it was, so the next GO
    /// fires what it would have.
    public mutating func restore(stored: [Scene], next: Int?, current: Int?, currentScene: String?, nextScene: String? = nil) {
        self.stored = stored
        if let next { self.next = min(max(next, 0), cues.count) }
        if let nextScene, self.next >= cues.count || cues[self.next].scene != nextScene {
            let at = self.next
            if let nearest = cues.indices.filter({ cues[$0].scene == nextScene }).min(by: { abs($0 - at) < abs($1 - at) }) {
                self.next = nearest
            }
        }
        self.current = current.flatMap { cues.indices.contains($0) ? $0 : nil }
        self.currentScene = currentScene.flatMap { scene($0) == nil ? nil : $0 }
    }

    /// The scene of the cue at the playhead (nil: past the end).
    public var nextScene: String? { next < cues.count ? cues[next].scene : nil }

    mutating func store(_ scene: Scene) {
        if let index = stored.firstIndex(where: { $0.name == scene.name }) {
            stored[index] = scene
        } else {
            stored.append(scene)
        }
    }

    mutating func delete(_ name: String) -> Bool {
        guard let index = stored.firstIndex(where: { $0.name == name }) else { return false }
        stored.remove(at: index)
        return true
    }
}
