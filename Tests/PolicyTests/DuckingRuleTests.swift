import Policy
import Testing

/// Ducking by route and by loudness (issue 19), in the policy's words: which rule governs a duck,
/// how deep it is on each route, what a loudness-targeted duck starts at and keeps, a volume a
/// person set while ducked, and the bad input refused with nothing changed.
@Suite("Ducking rules: per route, by loudness, and why")
struct DuckingRuleTests {
    static func gainDecibels(_ gain: Float) -> Double { (Double(Decibels.level(gain)) * 100).rounded() / 100 }

    @Test("a rule for one route wins there: the DJ deck is ducked 6 dB on the headphones and 18 dB on the speaker, each at once")
    func perRouteDepth() throws {
        var policy = makePolicy(ducking: DuckingSettings(rules: [
            DuckingRule(ducker: "nav", ducked: "dj", route: "headphones", level: -6),
            DuckingRule(ducker: "nav", ducked: "dj", level: -18),
        ]))
        try policy.apply(.activate(app: "dj"))
        let effects = try policy.apply(.activate(app: "nav"))
        let mix = try #require(policy.mix["dj"])
        #expect(mix.state == .ducked)
        #expect(Self.gainDecibels(mix.gain(on: "speaker")) == -18, "the pair's rule for every route")
        #expect(Self.gainDecibels(mix.gain(on: "headphones")) == -6, "the pair's rule for the headphones")
        #expect(mix.ducks["headphones"]?.rule.scope == .route && mix.ducks["speaker"]?.rule.scope == .pair)
        let gain = effects.first { if case .appGain(app: "dj", _, _, _) = $0 { true } else { false } }
        guard case let .appGain(_, main, routeGains, ramp)? = gain else {
            Issue.record("no gain change for the deck: \(effects)")
            return
        }
        #expect(Self.gainDecibels(main) == -18 && routeGains.mapValues(Self.gainDecibels) == ["headphones": -6] && ramp == 100)
        // The deepest duck names the state and the why.
        #expect(policy.state.heldBack("dj") == HeldBack(by: "nav", rule: "pair", route: "speaker"))
        try policy.apply(.deactivate(app: "nav", notifyOthers: false))
        #expect(policy.mix["dj"]?.routeGains == [:] && policy.mix["dj"]?.gain == 1)
    }

    @Test("a loudness-targeted duck starts at the rule's level, goes where the loop sets it (never past the floor or above 0 dB), and starts afresh at the next duck")
    func loudnessTarget() throws {
        var policy = makePolicy(ducking: DuckingSettings(rules: [DuckingRule(ducker: "nav", ducked: "music", target: 15, floor: -30)]))
        try policy.apply(.activate(app: "music"))
        try policy.apply(.activate(app: "nav"))
        #expect(policy.gainDecibels("music") == -14, "the session's level until measured")
        let ducks = policy.state.loudnessTargetedDucks
        let pair = DuckPair(ducker: "nav", ducked: "music", route: "speaker")
        #expect(ducks.map(\.pair) == [pair] && ducks.first?.rule.target == 15 && ducks.first?.decibels == -14)
        let effects = try policy.apply(.setLoudnessDucks([pair: -21.5]))
        #expect(abs((policy.gainDecibels("music") ?? 0) - -21.5) < 0.01)
        #expect(effects.contains(.appGain(app: "music", gain: Decibels.linear(-21.5), routeGains: [:], rampMilliseconds: 100)), "deeper: at the attack")
        #expect(!effects.contains(.save), "the loop's depths are not settings")
        try policy.apply(.setLoudnessDucks([pair: -60]))
        #expect(policy.state.loudnessDucks[pair] == -30, "the floor")
        // A floor raised while the duck holds lifts it at once.
        try policy.apply(.setDuckingRules([DuckingRule(ducker: "nav", ducked: "music", target: 15, floor: -20)]))
        #expect(abs((policy.gainDecibels("music") ?? 0) - -20) < 0.01)
        let up = try policy.apply(.setLoudnessDucks([pair: 0]))
        #expect(policy.state.loudnessDucks[pair] == 0, "never louder than not ducked")
        #expect(up.contains { if case .appGain(app: "music", _, _, 500) = $0 { true } else { false } }, "back up: at the release")
        #expect(policy.state.heldBack("music") == nil || policy.audioState("music") == .active, "0 dB is not a duck")
        // A pair that does not duck by loudness is passed over.
        try policy.apply(.setLoudnessDucks([DuckPair(ducker: "mic", ducked: "music", route: "speaker"): -10]))
        #expect(policy.state.loudnessDucks.count == 1)
        try policy.apply(.deactivate(app: "nav", notifyOthers: false))
        #expect(policy.state.loudnessDucks.isEmpty, "the duck ended")
        try policy.apply(.activate(app: "nav"))
        #expect(policy.gainDecibels("music") == -14, "the next duck starts from the level again")
    }

    @Test("a volume a person sets while the app is ducked is the volume it comes back to; the duck never overwrites it")
    func restoreAfterChange() throws {
        var policy = makePolicy(ducking: DuckingSettings(target: 15))
        try policy.apply(.activate(app: "music"))
        try policy.apply(.activate(app: "nav"))
        try policy.apply(.setLoudnessDucks([DuckPair(ducker: "nav", ducked: "music", route: "speaker"): -20]))
        try policy.apply(.setAppVolume(app: "music", .decibels(-6)))
        #expect(abs((policy.gainDecibels("music") ?? 0) - -26) < 0.01, "the duck on top of the new volume")
        try policy.apply(.deactivate(app: "nav", notifyOthers: false))
        #expect(abs((policy.gainDecibels("music") ?? 0) - -6) < 0.01, "back to what the person set")
    }

    @Test("bad rules and settings are refused with nothing changed: NaN or out-of-range target and floor (-2), a route the session lacks (-4), a ducker that ducks no one (-2)")
    func refusals() throws {
        var policy = makePolicy()
        let before = policy.state
        let refused: [(PolicyEvent, PolicyError.Code)] = [
            (.setDucking(.target(.nan)), .badArgument),
            (.setDucking(.target(61)), .badArgument),
            (.setDucking(.target(-1)), .badArgument),
            (.setDucking(.floor(.nan)), .badArgument),
            (.setDucking(.floor(1)), .badArgument),
            (.setDuckingRules([DuckingRule(ducker: "nav", ducked: "music", target: .nan)]), .badArgument),
            (.setDuckingRules([DuckingRule(ducker: "nav", ducked: "music", target: 15, floor: -200)]), .badArgument),
            (.setDuckingRules([DuckingRule(ducker: "nav", ducked: "music", route: "hdmi", level: -6)]), .unknownRoute),
            (.setDuckingRules([DuckingRule(ducker: "nav", ducked: "music")]), .badArgument),
            (.setDuckingRules([DuckingRule(ducker: "nav", ducked: "nav", level: -6)]), .badArgument),
            (.setDuckingRules([DuckingRule(ducker: "nav", ducked: "music", level: -6, floor: -30)]), .badArgument),
            (.setDuckingRule(DuckingRule(ducker: "music", ducked: "game", target: 15)), .badArgument),
            (.setDuckingRule(DuckingRule(ducker: "nav", ducked: "nav", level: -6)), .badArgument),
            (.setDuckingRule(DuckingRule(ducker: "nav", ducked: "music", route: "hdmi", target: 12)), .unknownRoute),
            (.removeDuckingRule(ducker: "nav", ducked: "music", route: nil), .general),
            (.removeDuckingRule(ducker: "nav", ducked: "music", route: "hdmi"), .unknownRoute),
            (.setLoudnessDucks([DuckPair(ducker: "nav", ducked: "music", route: "speaker"): .nan]), .badArgument),
        ]
        for (event, code) in refused {
            #expect(throws: PolicyError.self, "\(event)") { try policy.apply(event) }
            do { try policy.apply(event) } catch { #expect(error.code == code, "\(event): \(error)") }
            #expect(policy.state == before, "\(event) changed the state")
        }
    }

    @Test("/duck/rule's events: a rule for a pair and route is set, replaced, and removed, and each change is saved")
    func setAndRemove() throws {
        var policy = makePolicy()
        let rule = DuckingRule(ducker: "nav", ducked: "music", route: "headphones", level: -6)
        #expect(try policy.apply(.setDuckingRule(rule)).contains(.save))
        var deeper = rule
        deeper.level = -9
        try policy.apply(.setDuckingRule(deeper))
        try policy.apply(.setDuckingRule(DuckingRule(ducker: "nav", ducked: "music", target: 15)))
        #expect(policy.state.ducking.rules == [deeper, DuckingRule(ducker: "nav", ducked: "music", target: 15)])
        #expect(try policy.apply(.removeDuckingRule(ducker: "nav", ducked: "music", route: "headphones")).contains(.save))
        #expect(policy.state.ducking.rules == [DuckingRule(ducker: "nav", ducked: "music", target: 15)])
    }

    @Test("why: the ducker, the rule's scope, its route and target; who interrupts and how")
    func heldBack() throws {
        var policy = makePolicy(ducking: DuckingSettings(rules: [DuckingRule(ducker: "nav", ducked: "music", target: 12)]))
        try policy.apply(.activate(app: "music"))
        let effects = try policy.apply(.activate(app: "nav"))
        let held = HeldBack(by: "nav", rule: "pair", route: "speaker", target: 12)
        #expect(policy.state.heldBack("music") == held)
        #expect(effects.contains(.notify(.appState(app: "music", state: .ducked, gainDecibels: -14, reason: .osc, heldBy: held))))
        try policy.apply(.activate(app: "voip"))
        #expect(policy.state.heldBack("music") == HeldBack(by: "voip", rule: "app"))
    }
}
