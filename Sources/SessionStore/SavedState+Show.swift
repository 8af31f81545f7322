import Policy

extension SavedState {
    /// The show as a restart should find it: the scenes stored at run time and where the cue list
    /// stands. The session file's scenes and cues are the file's.
    public struct Show: Codable, Equatable, Sendable {
        /// Scenes stored with `/scene/store`, in the order first stored.
        public var scenes: [Scene] = []
        /// The playhead (the cue the next GO fires) and the cue last fired, counting from 1, and
        /// the scene of the cue at the playhead (so a list changed since finds its place again).
        /// Each may be missing in a hand-edited file: the list's start, none.
        public var next: Int?
        public var current: Int?
        public var nextScene: String?
        /// The scene last recalled.
        public var scene: String?

        public init(_ show: Policy.Show) {
            scenes = show.stored.map(Scene.init)
            next = show.next + 1
            nextScene = show.nextScene
            current = show.current.map { $0 + 1 }
            scene = show.currentScene
        }
    }

    /// A stored scene, with the session file's field names.
    public struct Scene: Codable, Equatable, Sendable {
        public struct Level: Codable, Equatable, Sendable {
            public var volume: Double?
            public var gain: Double?
            public var mute: Bool?
            public var active: Bool?
        }

        public struct Ducking: Codable, Equatable, Sendable {
            public var level: Double?
            public var target: SavedState.Ducking.Target?
            public var attack: Double?
            public var release: Double?
        }

        public var name: String
        /// Written always; missing (a scene pasted in the session file's form): 0, `fader`.
        public var fade: Double?
        public var curve: String?
        public var apps: [String: Level]?
        public var routes: [String: Level]?
        /// The route it selects; `followGraph` true: none, the graph decides.
        public var route: String?
        public var followGraph: Bool?
        public var silent: Bool?
        public var ducking: Ducking?
        public var safe: [String]?

        public init(_ scene: Policy.Scene) {
            func level(_ volume: Volume?) -> Level {
                switch volume {
                case let .position(p)?: Level(volume: p)
                case let .decibels(dB)?: Level(gain: dB)
                case nil: Level()
                }
            }
            name = scene.name
            fade = scene.fade
            curve = scene.curve.rawValue
            apps = scene.apps.isEmpty ? nil : Dictionary(scene.apps.map { app in
                var saved = level(app.volume)
                saved.mute = app.muted
                saved.active = app.active
                return (app.name, saved)
            }, uniquingKeysWith: { first, _ in first })
            routes = scene.routes.isEmpty ? nil : Dictionary(scene.routes.map { ($0.name, level($0.volume)) }, uniquingKeysWith: { first, _ in first })
            switch scene.route {
            case let .select(route)?: self.route = route
            case .followGraph?: followGraph = true
            case nil: break
            }
            silent = scene.silent
            if !scene.ducking.isEmpty {
                ducking = Ducking(level: scene.ducking.level, target: scene.ducking.target.map { SavedState.Ducking.Target($0) },
                                  attack: scene.ducking.attack, release: scene.ducking.release)
            }
            safe = scene.safe.isEmpty ? nil : scene.safe
        }

        /// The scene, if the session still has what it names: a route no longer in the session is
        /// left out, and said in `notes`, as is a value out of range (a hand-edited file).
        func scene(routes: [Session.Route], notes: inout [String]) -> Policy.Scene? {
            let routeNames = routes.map(\.name)
            let fade = self.fade ?? 0
            guard Policy.Scene.nameProblem(name) == nil, let curve = FadeCurve(rawValue: curve ?? FadeCurve.fader.rawValue),
                  fade.isFinite, Limits.fadeMilliseconds.contains(fade) else {
                notes.append("stored scene '\(name)': unreadable, left out")
                return nil
            }
            func volume(_ level: Level, gains: ClosedRange<Double>, _ what: String) -> Volume? {
                if let v = level.volume {
                    if v.isFinite, Limits.volume.contains(v) { return .position(v) }
                    notes.append("stored scene '\(name)': \(what) volume \(v) is out of range, left out")
                } else if let dB = level.gain {
                    if !dB.isNaN, dB <= gains.upperBound { return .decibels(max(dB, gains.lowerBound)) }
                    notes.append("stored scene '\(name)': \(what) gain \(dB) dB is out of range, left out")
                }
                return nil
            }
            var scene = Policy.Scene(name: name)
            scene.fade = fade
            scene.curve = curve
            for (app, level) in (apps ?? [:]).sorted(by: { $0.key < $1.key }) where AppConfiguration.nameProblem(app) == nil {
                scene.apps.append(.init(name: app, volume: volume(level, gains: Limits.appGain, "app '\(app)'"),
                                        muted: level.mute, active: level.active))
            }
            for (route, level) in (self.routes ?? [:]).sorted(by: { (routeNames.firstIndex(of: $0.key) ?? 0) < (routeNames.firstIndex(of: $1.key) ?? 0) }) {
                guard routeNames.contains(route) else {
                    notes.append("stored scene '\(name)': route '\(route)' is no longer in the session, left out")
                    continue
                }
                scene.routes.append(.init(name: route, volume: volume(level, gains: Limits.systemGain, "route '\(route)'")))
            }
            if followGraph == true {
                scene.route = .followGraph
            } else if let route {
                if routeNames.contains(route) {
                    scene.route = .select(route)
                } else {
                    notes.append("stored scene '\(name)': route '\(route)' is no longer in the session, its selection left out")
                }
            }
            scene.silent = silent
            if let ducking {
                func inRange(_ value: Double?, _ range: ClosedRange<Double>) -> Double? { value.flatMap { $0.isFinite && range.contains($0) ? $0 : nil } }
                scene.ducking = .init(level: inRange(ducking.level, Limits.duckLevel), attack: inRange(ducking.attack, Limits.rampMilliseconds),
                                      release: inRange(ducking.release, Limits.rampMilliseconds))
                if let target = ducking.target {
                    if let lu = target.lu {
                        if lu.isFinite, Limits.duckTarget.contains(lu) { scene.ducking.target = .some(lu) }
                    } else {
                        scene.ducking.target = .some(nil)
                    }
                }
            }
            scene.safe = (safe ?? []).filter { AppConfiguration.nameProblem($0) == nil }
            return scene
        }
    }
}

extension Session {
    /// The stored scenes and the cue list's place a state file keeps, laid over the show.
    func applyingShow(_ saved: SavedState.Show, notes: inout [String]) -> Policy.Show {
        var show = self.show
        var stored: [Policy.Scene] = []
        for scene in saved.scenes.prefix(Limits.scenes) {
            guard let restored = scene.scene(routes: routes, notes: &notes) else { continue }
            guard !stored.contains(where: { $0.name == restored.name }) else { continue }
            stored.append(restored)
        }
        let next = (saved.next ?? 1) - 1
        show.restore(stored: stored, next: next, current: saved.current.map { $0 - 1 }, currentScene: saved.scene, nextScene: saved.nextScene)
        if let scene = saved.nextScene, show.nextScene != scene {
            notes.append("the cue list has no cue of scene '\(scene)' now: the playhead is at cue \(show.next + 1)")
        } else if saved.nextScene == nil, next > show.cues.count {
            notes.append("the cue list is shorter than it was: the playhead is at its end")
        }
        return show
    }
}
