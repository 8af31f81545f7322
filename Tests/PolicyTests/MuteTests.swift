import Foundation
import Policy
import Testing

/// Mute (`/app/<app>/mute`), in the policy's words: a muted app is silent whatever its volume,
/// keeps that volume, ducks no one, and says so in its why; the policy's other rules go on.
@Suite("Mute: silent, its volume kept, ducking no one")
struct MuteTests {
    @Test("a muted app's gain is 0 while its volume stays; unmuted, it is heard at that volume again, with a fade")
    func silentVolumeKept() throws {
        var policy = makePolicy()
        try policy.apply(.activate(app: "music"))
        try policy.apply(.setAppVolume(app: "music", .position(0.5)))
        let volume = try #require(policy.state.app("music")).volume
        let muting = try policy.apply(.setAppSetting(app: "music", .muted(true)))
        #expect(policy.mix["music"]?.gain == 0)
        #expect(policy.state.app("music")?.volume == volume, "the volume is kept")
        #expect(policy.state.app("music")?.settings.muted == true)
        #expect(policy.audioState("music") == .active, "muting is not a state of the session")
        #expect(muting.contains(.save), "kept in the state file")
        #expect(muting.contains { if case let .appGain("music", 0, _, ramp) = $0 { ramp > 0 } else { false } }, "faded out: \(muting)")
        let unmuting = try policy.apply(.setAppSetting(app: "music", .muted(false)))
        #expect(policy.mix["music"]?.gain == volume)
        // The cells come back to full; the volume stage kept the volume all along.
        #expect(unmuting.contains { if case let .appGain("music", gain, _, ramp) = $0 { gain == 1 && ramp > 0 } else { false } }, "\(unmuting)")
        #expect(!muting.contains { if case .appVolume = $0 { true } else { false } } && !unmuting.contains { if case .appVolume = $0 { true } else { false } })
    }

    @Test("a muted ducker ducks no one; unmuted while active, it ducks again")
    func mutedDuckerDoesNotDuck() throws {
        var policy = makePolicy()
        try policy.apply(.activate(app: "music"))
        try policy.apply(.setAppSetting(app: "nav", .muted(true)))
        try policy.apply(.activate(app: "nav"))
        #expect(policy.audioState("nav") == .active && policy.mix["nav"]?.gain == 0)
        #expect(policy.audioState("music") == .active && policy.gainDecibels("music") == 0, "not ducked by a muted nav")
        try policy.apply(.setAppSetting(app: "nav", .muted(false)))
        #expect(policy.audioState("music") == .ducked && policy.gainDecibels("music")! < -10)
        try policy.apply(.setAppSetting(app: "nav", .muted(true)))
        #expect(policy.audioState("music") == .active, "muted again, its duck is released")
    }

    @Test("a muted app still follows the rules: it interrupts a non-mixable app and is interrupted")
    func rulesGoOn() throws {
        var policy = makePolicy()
        try policy.apply(.activate(app: "music"))
        try policy.apply(.setAppSetting(app: "player2", .muted(true)))
        try policy.apply(.activate(app: "player2"))
        #expect(policy.audioState("music") == .interrupted, "activation is the policy's, mute only silences")
        #expect(policy.state.why("music") == "interrupted by player2")
    }

    @Test("why: muted, unless interrupted or silenced, which say more")
    func why() throws {
        var policy = makePolicy()
        try policy.apply(.setAppSetting(app: "game", .muted(true)))
        #expect(policy.state.why("game") == "muted", "inactive and muted")
        try policy.apply(.activate(app: "game"))
        #expect(policy.state.why("game") == "muted")
        try policy.apply(.activate(app: "nav"))
        #expect(policy.state.why("game") == "muted", "ducked, but not heard at all")
        try policy.apply(.setSilentSwitch(true))
        #expect(policy.state.why("game") == "silenced by the silent switch")
        #expect(policy.state.whyAll()["game"] == "silenced by the silent switch")
    }

    @Test("an unknown app is -3 and changes nothing; the same setting again saves nothing")
    func refusals() throws {
        var policy = makePolicy()
        let before = policy.state
        #expect(throws: PolicyError.self) { try policy.apply(.setAppSetting(app: "ghost", .muted(true))) }
        #expect(policy.state == before)
        do {
            _ = try policy.apply(.setAppSetting(app: "ghost", .muted(true)))
        } catch {
            #expect(error.code == .unknownApp)
        }
        #expect(try policy.apply(.setAppSetting(app: "music", .muted(false))).isEmpty, "already unmuted: nothing to do")
    }

    @Test("settings in a file: a field the file lacks keeps its default; every field comes back")
    func settingsInAFile() throws {
        #expect(try JSONDecoder().decode(AppSettings.self, from: Data("{}".utf8)) == AppSettings())
        var settings = AppSettings()
        settings.muted = true
        let data = try JSONEncoder().encode(settings)
        #expect(try JSONDecoder().decode(AppSettings.self, from: data) == settings)
        #expect(settings.changes.reduce(into: AppSettings()) { result, change in
            if case let .muted(on) = change { result.muted = on }
        } == settings, "its changes set every setting")
    }
}
