import Policy
import Testing

/// What a person reads beside an app (the control page, `/app/<app>/why`): who ducks it, what
/// interrupts it, the silent switch; nothing while nothing holds it back.
@Suite("Why an app is held back")
struct WhyTests {
    @Test("ducked by the strongest ducker, interrupted by whom, silenced by the switch, paused by a route gone; nothing otherwise")
    func why() throws {
        var policy = makePolicy(ducking: DuckingSettings(rules: [DuckingRule(ducker: "mic", ducked: "music", level: -30)]))
        #expect(policy.state.why("music") == "", "inactive")
        #expect(policy.state.why("nosuchapp") == "")
        try policy.apply(.activate(app: "music"))
        #expect(policy.state.why("music") == "")
        try policy.apply(.activate(app: "nav"))
        #expect(policy.state.why("music") == "ducked by nav")
        try policy.apply(.activate(app: "mic"))
        #expect(policy.state.why("music") == "ducked by mic", "the deeper rule")
        try policy.apply(.deactivate(app: "mic", notifyOthers: false))
        try policy.apply(.deactivate(app: "nav", notifyOthers: false))
        try policy.apply(.activate(app: "game"))
        try policy.apply(.setSilentSwitch(true))
        #expect(policy.state.why("game") == "silenced by the silent switch")
        try policy.apply(.setSilentSwitch(false))
        try policy.apply(.outsideInterruptionBegan(source: "phone"))
        #expect(policy.state.why("music") == "interrupted by phone (outside)")
        try policy.apply(.outsideInterruptionEnded(source: "phone", shouldResume: false))
        try policy.apply(.activate(app: "music"))
        try policy.apply(.activate(app: "voip"))
        #expect(policy.state.why("music") == "interrupted by voip")
        let all = policy.state.whyAll()
        #expect(all["music"] == "interrupted by voip" && all["voip"] == "" && all.count == policy.state.apps.count)
    }
}
