import Policy
import Testing

/// Scenes and the cue list in the policy's words: a recall sets what the scene names, moves its
/// volumes over the fade along the curve, leaves the recall-safe alone, follows the rules for
/// activations, and refuses what it cannot know; the cue list walks, steps back and jumps.
@Suite("Scenes and cues")
struct SceneTests {
    /// The fixture policy with a show: `preshow` (music at 0.5 over 2 s, the fader curve, the
    /// radio active, the headphones' volume), `act1` (music out, linear, nav active, silent on,
    /// ducking), `safe-test` (naming the recall-safe radio), and a cue list of them.
    static func policy(safe: [String] = ["radio"]) throws -> PolicyEngine {
        var policy = makePolicy()
        var preshow = Scene(name: "preshow")
        preshow.fade = 2000
        preshow.apps = [Scene.App(name: "music", volume: .position(0.5), active: true), Scene.App(name: "game", muted: true)]
        preshow.routes = [Scene.Route(name: "headphones", volume: .decibels(-6))]
        var act1 = Scene(name: "act1")
        act1.fade = 5000
        act1.curve = .linear
        act1.apps = [Scene.App(name: "music", volume: .position(0))]
        act1.silent = true
        act1.ducking = Scene.Ducking(level: -20, target: .some(nil), attack: 50)
        var safeTest = Scene(name: "safe-test")
        safeTest.apps = [Scene.App(name: "radio", volume: .position(0.1)), Scene.App(name: "player2", volume: .position(0.2))]
        safeTest.safe = ["player2"]
        let show = Show(scenes: [preshow, act1, safeTest], safe: safe,
                        cues: [Cue(scene: "preshow"), Cue(scene: "act1", continues: true, wait: 1000), Cue(scene: "preshow")])
        try policy.apply(.setShow(show))
        return policy
    }

    static func volumes(_ effects: [PolicyEffect]) -> [String: (Float, Double, FadeCurve)] {
        var found: [String: (Float, Double, FadeCurve)] = [:]
        for effect in effects {
            if case let .appVolume(app, gain, ms, curve) = effect { found[app] = (gain, ms, curve) }
            if case let .systemVolume(route, gain, ms, curve) = effect { found["route:" + route] = (gain, ms, curve) }
        }
        return found
    }

    @Test("a recall sets what the scene names, its volumes over its fade along its curve, and says it began")
    func recall() throws {
        var policy = try Self.policy()
        let effects = try policy.apply(.recallScene("preshow", fade: nil, curve: nil))
        let volumes = Self.volumes(effects)
        #expect(volumes["music"].map { $0.0 == 0.125 && $0.1 == 2000 && $0.2 == .fader } == true, "\(volumes)")
        #expect(volumes["route:headphones"].map { abs(Double(Decibels.level($0.0)) + 6) < 1e-4 && $0.1 == 2000 } == true)
        #expect(policy.state.app("music")?.isActive == true && policy.state.app("game")?.settings.muted == true)
        #expect(effects.contains(.notify(.scene(name: "preshow", phase: .began))))
        #expect(effects.contains { if case .sceneFade("preshow", 1, 2000, nil, []) = $0 { true } else { false } }, "\(effects)")
        #expect(effects.contains(.save))
        #expect(policy.state.show.currentScene == "preshow" && policy.state.show.fading)

        // The recall's own fade and curve win; the same volume is moved again (a fade running
        // there starts from where the sound is), and no "volume changed" is said for it.
        let again = try policy.apply(.recallScene("preshow", fade: 300, curve: .equalPower))
        #expect(Self.volumes(again)["music"].map { $0.0 == 0.125 && $0.1 == 300 && $0.2 == .equalPower } == true)
        #expect(!again.contains { if case .notify(.systemVolume) = $0 { true } else { false } })
        #expect(policy.state.show.recallSerial == 2)

        // Settings of the session as a whole.
        let act1 = try policy.apply(.recallScene("act1", fade: nil, curve: nil))
        #expect(Self.volumes(act1)["music"].map { $0.0 == 0 && $0.1 == 5000 && $0.2 == .linear } == true)
        #expect(policy.state.silentSwitch && policy.state.ducking.level == -20 && policy.state.ducking.attack == 50 && policy.state.ducking.target == nil)
    }

    @Test("a scene without a fade still takes the fast fade, linear, never a step")
    func noFade() throws {
        var policy = try Self.policy()
        let effects = try policy.apply(.recallScene("preshow", fade: 0, curve: .fader))
        #expect(Self.volumes(effects)["music"].map { $0.1 == 20 && $0.2 == .linear } == true)
        #expect(effects.contains { if case .sceneFade(_, _, 20, _, _) = $0 { true } else { false } })
    }

    @Test("the show's recall-safe apps and a scene's own are never touched by it")
    func recallSafe() throws {
        var policy = try Self.policy()
        let effects = try policy.apply(.recallScene("safe-test", fade: nil, curve: nil))
        #expect(Self.volumes(effects).isEmpty, "\(effects)")
        #expect(policy.state.app("radio")?.volume == 1 && policy.state.app("player2")?.volume == 1)
        var open = try Self.policy(safe: [])
        _ = try open.apply(.recallScene("safe-test", fade: nil, curve: nil))
        #expect(open.state.app("radio")?.volume == Decibels.linear(sliderPosition: 0.1) && open.state.app("player2")?.volume == 1)
    }

    @Test("what cannot apply now is passed over and said; the rest applies")
    func passedOver() throws {
        var policy = try Self.policy()
        try policy.apply(.outsideInterruptionBegan(source: "phone"))
        try policy.apply(.unregister(app: "game"))
        try policy.apply(.setRouteAvailable(route: "headphones", false))
        var show = policy.state.show
        var scene = Scene(name: "stage")
        scene.apps = [Scene.App(name: "music", volume: .position(0.5), active: true), Scene.App(name: "game", muted: true)]
        scene.route = .select("headphones")
        show.scenes.append(scene)
        try policy.apply(.setShow(show))
        let effects = try policy.apply(.recallScene("stage", fade: nil, curve: nil))
        guard case let .sceneFade(_, _, _, _, skipped)? = effects.first(where: { if case .sceneFade = $0 { true } else { false } }) else {
            Issue.record("no fade in \(effects)")
            return
        }
        #expect(skipped.count == 3, "\(skipped)")
        #expect(skipped.contains { $0.contains("'music' was not activated") && $0.contains("phone") })
        #expect(skipped.contains("app 'game' is not registered") && skipped.contains("route 'headphones' is not available"))
        #expect(policy.state.app("music")?.volume == 0.125, "the rest applied")
    }

    @Test("a non-mixable app a scene activates interrupts the others, as it would itself")
    func activationFollowsPolicy() throws {
        var policy = try Self.policy()
        try policy.apply(.activate(app: "player2"))
        _ = try policy.apply(.recallScene("preshow", fade: nil, curve: nil))
        #expect(policy.state.app("music")?.isActive == true)
        #expect(policy.state.app("player2")?.activity == .interrupted(by: .app("music")))
    }

    @Test("the selected route, and following the graph again")
    func routes() throws {
        var policy = try Self.policy()
        var show = policy.state.show
        var pin = Scene(name: "pin")
        pin.route = .select("headphones")
        var follow = Scene(name: "follow")
        follow.route = .followGraph
        show.scenes += [pin, follow]
        try policy.apply(.setShow(show))
        try policy.apply(.setRouteAvailable(route: "headphones", false))
        try policy.apply(.setRouteAvailable(route: "headphones", true))
        try policy.apply(.selectRoute("speaker"))
        #expect(policy.state.currentRoute == "speaker")
        _ = try policy.apply(.recallScene("pin", fade: nil, curve: nil))
        #expect(policy.state.currentRoute == "headphones" && policy.state.selectedRoute == "headphones")
        try policy.apply(.selectRoute("speaker"))
        let effects = try policy.apply(.recallScene("follow", fade: nil, curve: nil))
        #expect(policy.state.selectedRoute == nil && policy.state.currentRoute == "headphones", "the newest available route wins again")
        #expect(effects.contains { if case .currentRoute("headphones", _) = $0 { true } else { false } }, "\(effects)")
    }

    @Test("bad recalls are refused and change nothing: an unknown scene or none at all (-9), a fade not a number or out of range (-2)")
    func refusals() throws {
        var policy = try Self.policy()
        let before = policy.state
        #expect(throws: PolicyError(.unknownScene, "no scene named 'ghost'")) { try policy.apply(.recallScene("ghost", fade: nil, curve: nil)) }
        for fade in [Double.nan, -1, .infinity, 600_001] {
            do {
                try policy.apply(.recallScene("preshow", fade: fade, curve: nil))
                Issue.record("a fade of \(fade) was taken")
            } catch {
                #expect(error.code == .badArgument && error.message.hasPrefix("fade: expected milliseconds from 0 to 600000"), "\(error)")
            }
        }
        #expect(policy.state == before)
        var empty = makePolicy()
        #expect(throws: PolicyError(.unknownScene, "no scenes are defined (the session file's `scenes`, or /scene/store)")) {
            try empty.apply(.recallScene("preshow", fade: nil, curve: nil))
        }
        #expect(throws: PolicyError(.unknownScene, "there is no cue list (the session file's `cues`)")) { try empty.apply(.cueGo) }
    }

    @Test("storing keeps the settings as they are (all but the recall-safe, or those named); a stored scene stands in for the file's until deleted")
    func storeAndDelete() throws {
        var policy = try Self.policy()
        try policy.apply(.setAppVolume(app: "music", .position(0.8)))
        try policy.apply(.setAppSetting(app: "game", .muted(true)))
        try policy.apply(.storeScene("snap", only: nil))
        let snap = try #require(policy.state.show.scene("snap"))
        #expect(snap.apps.count == Apps.all.count - 1 && !snap.apps.contains { $0.name == "radio" }, "all apps but the recall-safe radio")
        #expect(snap.apps.first { $0.name == "music" }?.volume == .position(Double(Decibels.sliderPosition(linear: Decibels.linear(sliderPosition: 0.8)))))
        #expect(snap.apps.first { $0.name == "game" }?.muted == true && snap.apps.allSatisfy { $0.active == nil })
        #expect(snap.routes.map(\.name) == ["speaker", "headphones"] && snap.route == .followGraph && snap.silent == false)
        #expect(snap.ducking.level == DuckingSettings().level && snap.fade == 0 && snap.curve == .fader)

        try policy.apply(.storeScene("act1", only: ["music", "headphones"]))
        let act1 = try #require(policy.state.show.scene("act1"))
        #expect(act1.apps.map(\.name) == ["music"] && act1.routes.map(\.name) == ["headphones"] && act1.silent == nil && act1.route == nil)
        #expect(act1.fade == 5000 && act1.curve == .linear, "the file's scene's fade and curve are kept")
        #expect(policy.state.show.isStored("act1") && policy.state.show.sceneNames == ["preshow", "act1", "safe-test", "snap"])

        try policy.apply(.setAppVolume(app: "music", .position(0.2)))
        _ = try policy.apply(.recallScene("snap", fade: nil, curve: nil))
        #expect(policy.state.app("music")?.volume == Decibels.linear(sliderPosition: 0.8))

        try policy.apply(.deleteScene("act1"))
        #expect(policy.state.show.scene("act1")?.apps.first?.volume == .position(0), "the file's act1 again")
        #expect(throws: PolicyError(.badArgument, "'act1' is the session file's scene: only a stored scene can be deleted")) {
            try policy.apply(.deleteScene("act1"))
        }
        #expect(throws: PolicyError(.unknownScene, "no scene named 'ghost'")) { try policy.apply(.deleteScene("ghost")) }
        #expect(throws: PolicyError.self) { try policy.apply(.storeScene("list", only: nil)) }
        #expect(throws: PolicyError.self) { try policy.apply(.storeScene("bad name", only: nil)) }
        #expect(throws: PolicyError(.badArgument, "'ghost' is neither an app nor a route: name apps and routes, comma-separated")) {
            try policy.apply(.storeScene("x", only: ["ghost"]))
        }
    }

    @Test("GO walks the cue list; back and goto move the playhead without recalling; the end of the list and places outside it are -9")
    func cues() throws {
        var policy = try Self.policy()
        #expect(policy.state.show.next == 0 && policy.state.show.current == nil)
        var go = try policy.apply(.cueGo)
        #expect(go.contains(.notify(.cue(number: 1, scene: "preshow"))) && policy.state.show.currentScene == "preshow")
        go = try policy.apply(.cueGo)
        #expect(go.contains { if case .sceneFade("act1", _, 5000, 1000, _) = $0 { true } else { false } }, "act1 continues 1 s after its fade: \(go)")
        #expect(policy.state.show.current == 1 && policy.state.show.next == 2)
        let back = try policy.apply(.cueBack)
        #expect(!back.contains { if case .sceneFade = $0 { true } else { false } } && policy.state.show.next == 1)
        #expect(back.contains(.notify(.playhead(number: 2, scene: "act1"))), "every surface is told where the playhead is: \(back)")
        #expect(policy.state.show.currentScene == "act1", "nothing recalled")
        let jump = try policy.apply(.cueGoto(.scene("preshow")))
        #expect(jump.allSatisfy { if case .sceneFade = $0 { false } else { true } } && policy.state.show.next == 0)
        try policy.apply(.cueGoto(.number(3)))
        go = try policy.apply(.cueGo)
        #expect(go.contains(.notify(.cue(number: 3, scene: "preshow"))))
        #expect(go.contains { if case .sceneFade(_, _, _, nil, _) = $0 { true } else { false } }, "the last cue continues into nothing")
        #expect(go.contains(.notify(.playhead(number: 0, scene: ""))), "past the end")
        #expect(throws: PolicyError(.unknownScene, "the cue list is at its end (3 cues): /cue/goto moves the playhead back")) { try policy.apply(.cueGo) }
        #expect(throws: PolicyError(.unknownScene, "no cue 4: the list has cues 1 to 3")) { try policy.apply(.cueGoto(.number(4))) }
        #expect(throws: PolicyError(.unknownScene, "no cue 0: the list has cues 1 to 3")) { try policy.apply(.cueGoto(.number(0))) }
        #expect(throws: PolicyError(.unknownScene, "no cue recalls a scene named 'ghost'")) { try policy.apply(.cueGoto(.scene("ghost"))) }
    }

    @Test("the end of a fade is said once, and only for the recall that is still the latest")
    func fadeDone() throws {
        var policy = try Self.policy()
        _ = try policy.apply(.recallScene("preshow", fade: nil, curve: nil))
        _ = try policy.apply(.recallScene("act1", fade: nil, curve: nil))
        #expect(try policy.apply(.sceneFadeDone(recall: 1)).isEmpty, "taken over by act1")
        #expect(policy.state.show.fading)
        #expect(try policy.apply(.sceneFadeDone(recall: 2)) == [.notify(.scene(name: "act1", phase: .done))])
        #expect(!policy.state.show.fading)
        #expect(try policy.apply(.sceneFadeDone(recall: 2)).isEmpty, "once")
    }

    @Test("a new list keeps the playhead on the cue of the same scene (the nearest, when cues were put in above it), tells every surface, and any move cancels what a continuing cue scheduled")
    func playheadFollowsItsScene() throws {
        var policy = try Self.policy()
        _ = try policy.apply(.cueGo)                       // preshow; the playhead on act1 (cue 2)
        let moves = policy.state.show.playheadMoves
        var show = policy.state.show
        show.cues.insert(Cue(scene: "safe-test"), at: 0)   // a cue put in above it
        let effects = try policy.apply(.setShow(show))
        #expect(policy.state.show.next == 2 && policy.state.show.nextScene == "act1", "still act1, now cue 3")
        #expect(effects.contains(.notify(.playhead(number: 3, scene: "act1"))) && effects.contains(.save))
        #expect(policy.state.show.current == nil, "the cue fired last is not where it was")
        // Away and back is a move all the same.
        try policy.apply(.cueBack)
        try policy.apply(.cueGoto(.number(3)))
        #expect(policy.state.show.next == 2 && policy.state.show.playheadMoves == moves + 3)
    }

    @Test("a new show from the file keeps the stored scenes and the playhead where the list has room")
    func newShow() throws {
        var policy = try Self.policy()
        try policy.apply(.storeScene("snap", only: ["music"]))
        _ = try policy.apply(.cueGo)
        _ = try policy.apply(.cueGo)
        try policy.apply(.setShow(Show(scenes: [Scene(name: "only")], cues: [Cue(scene: "only")])))
        #expect(policy.state.show.sceneNames == ["only", "snap"])
        #expect(policy.state.show.next == 1 && policy.state.show.current == nil, "the playhead at the end of the shorter list")
        #expect(policy.state.show.currentScene == nil, "act1 is no longer a scene")
    }
}
