/// Scenes and the cue list, within one event (`Transition`).
extension Transition {
    // MARK: Scenes

    /// Applies a scene: the ducking settings, the silent switch and the routes' volumes first,
    /// then the route, then each app's mute and volume, then the deactivations and the
    /// activations (so a non-mixable app a scene starts interrupts the others, as it would
    /// itself). What cannot apply now (an app not registered, a route not available, an
    /// activation the policy refuses) is passed over and reported in the effect; anything else
    /// that fails refuses the whole recall.
    mutating func recall(_ name: String, fade requested: Double?, curve requestedCurve: FadeCurve?,
                         continueAfter: Double? = nil) throws(PolicyError) {
        guard let scene = state.show.scene(name) else {
            throw state.show.sceneNames.isEmpty ? PolicyError(.unknownScene, "no scenes are defined (the session file's `scenes`, or /scene/store)")
                                                : .unknownScene(name)
        }
        if let requested, !(requested.isFinite && Limits.fadeMilliseconds.contains(requested)) {
            throw badValue("fade", requested, "milliseconds from 0 to \(Int(Limits.fadeMilliseconds.upperBound))")
        }
        let milliseconds = requested ?? scene.fade
        // No fade is still a ramp: the fast fade, never a step.
        fade = milliseconds > 0 ? (milliseconds, requestedCurve ?? scene.curve) : (state.fadeMilliseconds, .linear)
        defer { fade = nil }
        let untouched = Set(state.show.safe + scene.safe)
        var skipped: [String] = []

        if let level = scene.ducking.level { try setDucking(.level(level)) }
        if let target = scene.ducking.target { try setDucking(.target(target)) }
        if let attack = scene.ducking.attack { try setDucking(.attack(attack)) }
        if let release = scene.ducking.release { try setDucking(.release(release)) }
        if let silent = scene.silent { try apply(.setSilentSwitch(silent)) }
        for route in scene.routes where !untouched.contains(route.name) {
            if let volume = route.volume { try apply(.setSystemVolume(route: route.name, volume)) }
        }
        switch scene.route {
        case let .select(route)? where !untouched.contains(route):
            if route == state.selectedRoute && state.currentRoute == route { break }
            guard state.availableRoutes.contains(route) else {
                skipped.append("route '\(route)' is not available")
                break
            }
            try selectRoute(route)
        case .followGraph?:
            followGraph()
        default:
            break
        }
        let apps = scene.apps.filter { !untouched.contains($0.name) }
        for app in apps {
            guard state.app(app.name) != nil else {
                skipped.append("app '\(app.name)' is not registered")
                continue
            }
            if let muted = app.muted { try apply(.setAppSetting(app: app.name, .muted(muted))) }
            if let volume = app.volume { try apply(.setAppVolume(app: app.name, volume)) }
        }
        for app in apps where app.active == false && state.app(app.name) != nil {
            try apply(.deactivate(app: app.name, notifyOthers: true))
        }
        for app in apps where app.active == true && state.app(app.name)?.isActive == false {
            // The policy's own check, before anything is changed: a refused activation is passed
            // over, not a refused recall.
            do {
                var trial = self
                try trial.apply(.activate(app: app.name))
                self = trial
            } catch {
                skipped.append("app '\(app.name)' was not activated: \(error.message)")
            }
        }
        state.show.currentScene = name
        state.show.fading = true
        state.show.fadeMilliseconds = fade!.milliseconds
        state.show.recallSerial += 1
        save = true
        ordered.append(.notify(.scene(name: name, phase: .began)))
        ordered.append(.sceneFade(name: name, recall: state.show.recallSerial, milliseconds: fade!.milliseconds,
                                  continueAfter: continueAfter, skipped: skipped))
    }

    mutating func sceneFadeDone(_ recall: Int) {
        guard recall == state.show.recallSerial, state.show.fading, let name = state.show.currentScene else { return }
        state.show.fading = false
        ordered.append(.notify(.scene(name: name, phase: .done)))
    }

    /// The route is the graph's again: no selection, the newest available route wins.
    mutating func followGraph() {
        guard state.selectedRoute != nil else { return }
        let previous = state.currentRoute
        state.selectedRoute = nil
        announceRoute(from: previous, reason: .newDeviceAvailable)
        save = true
    }

    /// Stores the settings as they are: each app's volume and mute and each route's volume (all
    /// but the recall-safe ones, or only those named), and, when none are named, the route, the
    /// silent switch and the ducking settings. Whether an app plays is its own business: a
    /// stored scene does not say. A scene stored under an existing name keeps its fade and curve.
    mutating func store(_ name: String, only: [String]?) throws(PolicyError) {
        if let problem = Scene.nameProblem(name) { throw PolicyError(.badArgument, "scene name: \(problem)") }
        if state.show.scene(name) == nil, state.show.sceneNames.count >= Limits.scenes {
            throw PolicyError(.general, "the show has \(Limits.scenes) scenes, the most it may have: delete one first")
        }
        var scene = state.show.scene(name) ?? Scene(name: name)
        scene.name = name
        scene.apps = []
        scene.routes = []
        scene.route = nil
        scene.silent = nil
        scene.ducking = Scene.Ducking()
        let routes = state.systemVolumes.map(\.route)
        if let only {
            for item in only where state.app(item) == nil && !routes.contains(item) {
                throw PolicyError(.badArgument, "'\(item)' is neither an app nor a route: name apps and routes, comma-separated")
            }
        }
        let untouched = Set(state.show.safe + scene.safe)
        func included(_ item: String) -> Bool { only.map { $0.contains(item) } ?? !untouched.contains(item) }
        for app in state.apps where included(app.name) {
            scene.apps.append(Scene.App(name: app.name, volume: .position(Double(Decibels.sliderPosition(linear: app.volume))),
                                        muted: app.settings.muted))
        }
        for (route, volume) in state.systemVolumes where included(route) {
            scene.routes.append(Scene.Route(name: route, volume: .position(Double(Decibels.sliderPosition(linear: volume)))))
        }
        if only == nil {
            scene.route = state.selectedRoute.map { .select($0) } ?? .followGraph
            scene.silent = state.silentSwitch
            scene.ducking = Scene.Ducking(level: state.ducking.level, target: .some(state.ducking.target),
                                          attack: state.ducking.attack, release: state.ducking.release)
        }
        state.show.store(scene)
        save = true
    }

    mutating func deleteScene(_ name: String) throws(PolicyError) {
        guard state.show.delete(name) else {
            if state.show.scene(name) != nil {
                throw PolicyError(.badArgument, "'\(name)' is the session file's scene: only a stored scene can be deleted")
            }
            throw .unknownScene(name)
        }
        if state.show.currentScene == name && state.show.scene(name) == nil { state.show.currentScene = nil }
        save = true
    }

    // MARK: The cue list

    mutating func cueGo() throws(PolicyError) {
        let cues = state.show.cues
        guard !cues.isEmpty else { throw PolicyError(.unknownScene, "there is no cue list (the session file's `cues`)") }
        let index = state.show.next
        guard index < cues.count else {
            throw PolicyError(.unknownScene, "the cue list is at its end (\(cues.count) cues): /cue/goto moves the playhead back")
        }
        let cue = cues[index]
        let more = index + 1 < cues.count
        try recall(cue.scene, fade: nil, curve: nil, continueAfter: cue.continues && more ? cue.wait : nil)
        state.show.current = index
        state.show.next = index + 1
        ordered.append(.notify(.cue(number: index + 1, scene: cue.scene)))
        announcePlayhead()
    }

    mutating func cueBack() {
        guard state.show.next > 0 else { return }
        state.show.next -= 1
        save = true
        announcePlayhead()
    }

    /// Tells where the playhead is now (every surface showing the list follows it), and counts
    /// the move.
    mutating func announcePlayhead() {
        state.show.playheadMoves += 1
        let next = state.show.next
        let cues = state.show.cues
        ordered.append(.notify(.playhead(number: next < cues.count ? next + 1 : 0, scene: next < cues.count ? cues[next].scene : "")))
    }

    mutating func cueGoto(_ place: CuePlace) throws(PolicyError) {
        let cues = state.show.cues
        guard !cues.isEmpty else { throw PolicyError(.unknownScene, "there is no cue list (the session file's `cues`)") }
        let index: Int
        switch place {
        case let .number(number):
            guard (1...cues.count).contains(number) else {
                throw PolicyError(.unknownScene, "no cue \(number): the list has cues 1 to \(cues.count)")
            }
            index = number - 1
        case let .scene(name):
            guard let found = cues.firstIndex(where: { $0.scene == name }) else {
                throw PolicyError(.unknownScene, "no cue recalls a scene named '\(name)'")
            }
            index = found
        }
        guard index != state.show.next else { return }
        state.show.next = index
        save = true
        announcePlayhead()
    }

    /// A new list from the file: the playhead stays on the cue of the same scene where it can
    /// (the nearest, when cues were put in or taken out), else where the new list has room; every
    /// surface showing the list is told, as it is of any move.
    mutating func setShow(_ show: Show) {
        var next = state.show
        next.scenes = show.scenes
        next.safe = show.safe
        next.cues = show.cues
        let current = state.show.current.map { state.show.cues[$0] }
        next.restore(stored: next.stored, next: next.next, current: nil, currentScene: next.currentScene, nextScene: state.show.nextScene)
        // The cue last fired, if the new list still has it where it was.
        if let current, let index = state.show.current, next.cues.indices.contains(index), next.cues[index] == current { next.current = index }
        guard next != state.show else { return }
        state.show = next
        save = true
        announcePlayhead()
    }
}
