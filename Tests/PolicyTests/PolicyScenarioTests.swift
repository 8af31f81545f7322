import Testing
import Policy

/// What a scenario expects after its last event.
enum Expect: Sendable {
    /// The app's audio state afterwards.
    case state(String, AppAudioState)
    /// The app's audible gain afterwards, in dB (±0.01).
    case gain(String, Double)
    /// The last event produced this notification.
    case notified(PolicyNotification)
    /// The last event produced no interruption notification for the app.
    case noInterruption(String)
    /// The last event was refused with this code and changed nothing.
    case refused(PolicyError.Code)
    case nowPlaying(String?)
    /// The last event moved the app's gain over this many milliseconds.
    case ramp(String, Double)
    /// The last event did (or did not) ask for a save.
    case saves(Bool)
    /// The last event produced this effect.
    case effect(PolicyEffect)
    /// The last event produced no `/duckrouter/route` notification.
    case noRouteNotification
}

/// One row: the rule it checks, what happened before, the event under test, and what follows.
struct Scenario: Sendable, CustomTestStringConvertible {
    /// The rule's number in docs/POLICY.md ("5.2" for §5.2), or the part of it the row is about.
    var rule: String
    var name: String
    var given: [PolicyEvent] = []
    var when: PolicyEvent
    var expect: [Expect]
    /// Routes whose audio stops when they go (headphones), for the route rows.
    var privateRoutes: Set<String> = []

    var testDescription: String { "§\(rule) \(name)" }
}

private func began(_ app: String) -> Expect {
    .notified(.interruption(app: app, phase: .began, shouldResume: false, reason: .default))
}

private func ended(_ app: String, resume: Bool) -> Expect {
    .notified(.interruption(app: app, phase: .ended, shouldResume: resume, reason: .default))
}

let scenarios: [Scenario] = [
    // §5.1 and §5.2: mixable and non-mixable sessions.
    Scenario(rule: "5.2", name: "a language-learning app (playback) silences the music app when it plays",
             given: [.activate(app: "music")], when: .activate(app: "language"),
             expect: [.state("music", .interrupted), began("music"), .state("language", .active), .gain("music", -.infinity),
                      .ramp("music", 20)]),
    Scenario(rule: "5.2", name: "a game with ambient sound keeps playing under music",
             given: [.activate(app: "game")], when: .activate(app: "music"),
             expect: [.state("game", .active), .state("music", .active), .noInterruption("game"), .gain("game", 0)]),
    Scenario(rule: "5.2", name: "music activated under an ambient game leaves the game playing",
             given: [.activate(app: "music")], when: .activate(app: "game"),
             expect: [.state("game", .active), .state("music", .active), .noInterruption("music")]),
    Scenario(rule: "5.2", name: "a soloAmbient game interrupts a non-mixable music app",
             given: [.activate(app: "music")], when: .activate(app: "sologame"),
             expect: [.state("music", .interrupted), began("music"), .state("sologame", .active)]),
    Scenario(rule: "5.2", name: "a soloAmbient game leaves mixable apps playing",
             given: [.activate(app: "radio"), .activate(app: "game")], when: .activate(app: "sologame"),
             expect: [.state("radio", .active), .state("game", .active), .noInterruption("radio"), .noInterruption("game")]),
    Scenario(rule: "5.2", name: "activating a mixable app interrupts nobody",
             given: [.activate(app: "music")], when: .activate(app: "radio"),
             expect: [.state("music", .active), .state("radio", .active), .noInterruption("music")]),
    Scenario(rule: "5.1", name: "playback with mixWithOthers is mixable and is not interrupted by music",
             given: [.activate(app: "radio")], when: .activate(app: "music"),
             expect: [.state("radio", .active), .noInterruption("radio")]),
    Scenario(rule: "5.2", name: "a music player interrupted by a second music player gets shouldResume=0 when it ends",
             given: [.activate(app: "music"), .activate(app: "player2")], when: .deactivate(app: "player2", notifyOthers: false),
             expect: [ended("music", resume: false), .state("music", .inactive)]),
    Scenario(rule: "5.2", name: "a second music player interrupts the first",
             given: [.activate(app: "music")], when: .activate(app: "player2"),
             expect: [began("music"), .state("music", .interrupted), .state("player2", .active)]),
    Scenario(rule: "5.8", name: "a recording session is non-mixable: it interrupts music",
             given: [.activate(app: "music")], when: .activate(app: "recorder"),
             expect: [began("music"), .state("recorder", .active)]),

    // §5.3: the end of an interruption.
    Scenario(rule: "5.3", name: "a VoIP call (playAndRecord) interrupts music",
             given: [.activate(app: "music")], when: .activate(app: "voip"),
             expect: [began("music"), .state("music", .interrupted), .state("voip", .active)]),
    Scenario(rule: "5.3", name: "the call ends with notifyOthers: music gets ended with shouldResume=1",
             given: [.activate(app: "music"), .activate(app: "voip")], when: .deactivate(app: "voip", notifyOthers: true),
             expect: [ended("music", resume: true), .state("music", .inactive), .state("voip", .inactive)]),
    Scenario(rule: "5.3", name: "the call ends without notifyOthers: music gets ended with shouldResume=0",
             given: [.activate(app: "music"), .activate(app: "voip")], when: .deactivate(app: "voip", notifyOthers: false),
             expect: [ended("music", resume: false), .state("music", .inactive)]),
    Scenario(rule: "5.3", name: "an interrupted app plays again only when activated again",
             given: [.activate(app: "music"), .activate(app: "voip"), .deactivate(app: "voip", notifyOthers: true)],
             when: .activate(app: "music"),
             expect: [.state("music", .active), .gain("music", 0)]),
    Scenario(rule: "5.3", name: "reconfiguring an interrupted app keeps it interrupted",
             given: [.activate(app: "sologame"), .activate(app: "voip")],
             when: .register(AppConfiguration(name: "sologame", category: .soloAmbient, resume: .auto)),
             expect: [.state("sologame", .interrupted)]),
    Scenario(rule: "5.3", name: "the auto app resumes when the call ends with notifyOthers",
             given: [.register(AppConfiguration(name: "jukebox", category: .playback, resume: .auto)),
                     .activate(app: "jukebox"), .activate(app: "voip")],
             when: .deactivate(app: "voip", notifyOthers: true),
             expect: [ended("jukebox", resume: true), .state("jukebox", .active), .gain("jukebox", 0)]),
    Scenario(rule: "5.3", name: "the auto app stays inactive when the call ends without notifyOthers",
             given: [.register(AppConfiguration(name: "jukebox", category: .playback, resume: .auto)),
                     .activate(app: "jukebox"), .activate(app: "voip")],
             when: .deactivate(app: "voip", notifyOthers: false),
             expect: [ended("jukebox", resume: false), .state("jukebox", .inactive)]),
    Scenario(rule: "5.3", name: "unregistering the interrupter ends its interruptions without resume",
             given: [.activate(app: "music"), .activate(app: "voip")], when: .unregister(app: "voip"),
             expect: [ended("music", resume: false), .state("music", .inactive), .saves(true)]),

    // §5.4: ducking.
    Scenario(rule: "5.4", name: "navigation prompts duck music by 14 dB over the 100 ms attack",
             given: [.activate(app: "music")], when: .activate(app: "nav"),
             expect: [.state("music", .ducked), .gain("music", -14), .ramp("music", 100), .state("nav", .active),
                      .notified(.appState(app: "music", state: .ducked, gainDecibels: -14.0, reason: .osc,
                                                  heldBy: HeldBack(by: "nav", rule: "session", route: "speaker"))),
                      .noInterruption("music")]),
    Scenario(rule: "5.4", name: "music unducks over the 500 ms release when the prompt deactivates",
             given: [.activate(app: "music"), .activate(app: "nav")], when: .deactivate(app: "nav", notifyOthers: false),
             expect: [.state("music", .active), .gain("music", 0), .ramp("music", 500)]),
    Scenario(rule: "5.4", name: "an app activated while a ducker is active comes in ducked",
             given: [.activate(app: "nav")], when: .activate(app: "music"),
             expect: [.state("music", .ducked), .gain("music", -14), .ramp("music", 20)]),
    Scenario(rule: "5.4", name: "ducking follows the session-wide level",
             given: [.setDucking(.level(-20)), .activate(app: "music")], when: .activate(app: "nav"),
             expect: [.gain("music", -20)]),
    Scenario(rule: "5.4", name: "a per-pair rule overrides the level, attack and release",
             given: [.activate(app: "music")], when: .activate(app: "nav"),
             expect: [.gain("music", -20), .ramp("music", 50)]),
    Scenario(rule: "5.4", name: "several duckers duck once, by the deepest level",
             given: [.activate(app: "music"), .activate(app: "nav")], when: .activate(app: "mic"),
             expect: [.gain("music", -20), .state("music", .ducked)]),
    Scenario(rule: "5.4", name: "when the deeper ducker goes, the other's level remains",
             given: [.activate(app: "music"), .activate(app: "nav"), .activate(app: "mic")],
             when: .deactivate(app: "mic", notifyOthers: false),
             expect: [.gain("music", -14), .ramp("music", 500)]),
    Scenario(rule: "5.4", name: "changing the duck level while ducked moves music at the attack time",
             given: [.activate(app: "music"), .activate(app: "nav")], when: .setDucking(.level(-30)),
             expect: [.gain("music", -30), .ramp("music", 100), .saves(true)]),
    Scenario(rule: "5.4", name: "the app volume is relative: ducked music at volume -6 dB plays at -20 dB",
             given: [.setAppVolume(app: "music", .decibels(-6)), .activate(app: "music")], when: .activate(app: "nav"),
             expect: [.gain("music", -20)]),

    // §5.5: spoken audio.
    Scenario(rule: "5.5", name: "a navigation prompt pauses an audiobook (spokenAudio) instead of ducking it",
             given: [.activate(app: "book")], when: .activate(app: "nav"),
             expect: [began("book"), .state("book", .interrupted), .gain("book", -.infinity)]),
    Scenario(rule: "5.5", name: "the audiobook resumes when the prompt ends (resume=auto)",
             given: [.activate(app: "book"), .activate(app: "nav")], when: .deactivate(app: "nav", notifyOthers: false),
             expect: [ended("book", resume: true), .state("book", .active), .gain("book", 0)]),
    Scenario(rule: "5.5", name: "a podcast (resume=app) gets shouldResume=1 and waits to be activated",
             given: [.activate(app: "podcast"), .activate(app: "nav")], when: .deactivate(app: "nav", notifyOthers: false),
             expect: [ended("podcast", resume: true), .state("podcast", .inactive)]),
    Scenario(rule: "5.5", name: "spoken audio cannot start while a prompt interrupts spoken audio",
             given: [.activate(app: "nav")], when: .activate(app: "podcast"),
             expect: [.refused(.insufficientPriority)]),

    // §5.6: the silent switch.
    Scenario(rule: "5.6", name: "the silent switch silences an ambient game",
             given: [.activate(app: "game"), .activate(app: "music")], when: .setSilentSwitch(true),
             expect: [.state("game", .silenced), .gain("game", -.infinity), .ramp("game", 20),
                      .notified(.silentSwitch(true)), .saves(true)]),
    Scenario(rule: "5.6", name: "the silent switch leaves a playback app untouched",
             given: [.activate(app: "game"), .activate(app: "music")], when: .setSilentSwitch(true),
             expect: [.state("music", .active), .gain("music", 0)]),
    Scenario(rule: "5.6", name: "the silent switch silences a soloAmbient game",
             given: [.activate(app: "sologame")], when: .setSilentSwitch(true),
             expect: [.state("sologame", .silenced)]),
    Scenario(rule: "5.6", name: "switching silent off brings the game back",
             given: [.activate(app: "game"), .setSilentSwitch(true)], when: .setSilentSwitch(false),
             expect: [.state("game", .active), .gain("game", 0)]),

    // §5.7: volumes.
    Scenario(rule: "5.7", name: "the system volume is per route and saved",
             when: .setSystemVolume(route: "headphones", .position(0.5)),
             expect: [.notified(.systemVolume(route: "headphones", volume: 0.5)), .saves(true)]),
    Scenario(rule: "5.7", name: "app volume 0.5 is -18 dB on the cubic taper",
             given: [.activate(app: "music")], when: .setAppVolume(app: "music", .position(0.5)),
             expect: [.gain("music", -18.06), .ramp("music", 20), .saves(true)]),
    Scenario(rule: "5.7", name: "app volume of an inactive app is kept for when it plays",
             given: [.setAppVolume(app: "music", .decibels(-10))], when: .activate(app: "music"),
             expect: [.gain("music", -10)]),

    // §5.11: outside interruptions.
    Scenario(rule: "5.11", name: "an outside interruption (phone call) interrupts everything",
             given: [.activate(app: "music"), .activate(app: "game"), .activate(app: "nav")],
             when: .outsideInterruptionBegan(source: "phone"),
             expect: [began("music"), began("game"), began("nav"), .state("game", .interrupted)]),
    Scenario(rule: "5.11", name: "a non-mixable app is refused while the call lasts",
             given: [.outsideInterruptionBegan(source: "phone")], when: .activate(app: "music"),
             expect: [.refused(.insufficientPriority)]),
    Scenario(rule: "5.11", name: "a mixable app may still start during the call",
             given: [.outsideInterruptionBegan(source: "phone")], when: .activate(app: "radio"),
             expect: [.state("radio", .active)]),
    Scenario(rule: "5.11", name: "after the call, activation works again",
             given: [.outsideInterruptionBegan(source: "phone"), .outsideInterruptionEnded(source: "phone", shouldResume: false)],
             when: .activate(app: "music"),
             expect: [.state("music", .active)]),
    Scenario(rule: "5.11", name: "the call's end with shouldResume re-activates auto apps and tells the others",
             given: [.activate(app: "music"), .activate(app: "game"), .outsideInterruptionBegan(source: "phone")],
             when: .outsideInterruptionEnded(source: "phone", shouldResume: true),
             expect: [ended("music", resume: true), ended("game", resume: true), .state("game", .active),
                      .state("music", .inactive)]),
    Scenario(rule: "5.11", name: "with two outside interruptions, apps wait for the last to end",
             given: [.activate(app: "game"), .outsideInterruptionBegan(source: "phone"), .outsideInterruptionBegan(source: "alarm")],
             when: .outsideInterruptionEnded(source: "phone", shouldResume: true),
             expect: [.state("game", .interrupted), .noInterruption("game")]),
    Scenario(rule: "5.11", name: "ending an interruption that never began is an error",
             when: .outsideInterruptionEnded(source: "phone", shouldResume: true),
             expect: [.refused(.general)]),

    // §5.12: remote commands.
    Scenario(rule: "5.12", name: "remote commands go to the now-playing app",
             given: [.activate(app: "music")], when: .remoteCommand(.pause, value: nil),
             expect: [.notified(.remote(app: "music", command: .pause, value: nil)), .nowPlaying("music")]),
    Scenario(rule: "5.12", name: "an interrupted now-playing app still owns remote control",
             given: [.activate(app: "music"), .activate(app: "voip")], when: .remoteCommand(.play, value: nil),
             expect: [.notified(.remote(app: "music", command: .play, value: nil))]),
    Scenario(rule: "5.12", name: "a newer eligible player replaces the owner",
             given: [.activate(app: "music"), .activate(app: "player2")], when: .remoteCommand(.pause, value: nil),
             expect: [.notified(.remote(app: "player2", command: .pause, value: nil)), .nowPlaying("player2")]),
    Scenario(rule: "5.12", name: "mixable apps and apps without commands never own remote control",
             given: [.activate(app: "music"), .activate(app: "radio"), .activate(app: "language")],
             when: .remoteCommand(.nextTrack, value: nil),
             expect: [.notified(.remote(app: "music", command: .nextTrack, value: nil))]),
    Scenario(rule: "5.12", name: "no eligible app: error -8",
             given: [.activate(app: "language")], when: .remoteCommand(.play, value: nil),
             expect: [.refused(.noEligibleApp)]),
    Scenario(rule: "5.12", name: "a command the owner did not declare is refused, not re-purposed",
             given: [.activate(app: "player2")], when: .remoteCommand(.togglePlayPause, value: nil),
             expect: [.refused(.noEligibleApp)]),
    Scenario(rule: "5.12", name: "seek carries its position",
             given: [.activate(app: "music")], when: .remoteCommand(.seek, value: 42.5),
             expect: [.notified(.remote(app: "music", command: .seek, value: 42.5))]),

    // Signal activation (issue 8, docs/POLICY.md).
    Scenario(rule: "signal", name: "a signal-activated mic is heard while it waits for its sound, and ducks no one",
             given: [.register(voice), .activate(app: "music")], when: .setAppVolume(app: "voice", .position(1)),
             expect: [.state("voice", .listening), .gain("voice", 0), .state("music", .active), .gain("music", 0)]),
    Scenario(rule: "signal", name: "its sound activates it: music is ducked, and the reason is signal",
             given: [.register(voice), .activate(app: "music")], when: .signal(app: "voice", active: true),
             expect: [.state("voice", .active), .state("music", .ducked), .gain("music", -14), .ramp("music", 100),
                      .notified(.appState(app: "voice", state: .active, gainDecibels: 0, reason: .signal))]),
    Scenario(rule: "signal", name: "silence deactivates it and music comes back over the release",
             given: [.register(voice), .activate(app: "music"), .signal(app: "voice", active: true)],
             when: .signal(app: "voice", active: false),
             expect: [.state("voice", .listening), .state("music", .active), .ramp("music", 500)]),
    Scenario(rule: "signal", name: "a signal-activated announcement (non-mixable) interrupts music; silence lets auto music resume",
             given: [.register(AppConfiguration(name: "jukebox", category: .playback, resume: .auto)), .activate(app: "jukebox"),
                     .register(AppConfiguration(name: "announce", category: .playback, activation: .signal)),
                     .signal(app: "announce", active: true)],
             when: .signal(app: "announce", active: false),
             expect: [ended("jukebox", resume: true), .state("jukebox", .active), .state("announce", .listening),
                      .notified(.appState(app: "jukebox", state: .active, gainDecibels: 0, reason: .autoResume))]),
    Scenario(rule: "signal", name: "a request outlasts the sound: silence does not deactivate an app activated over OSC",
             given: [.register(voice), .activate(app: "voice")], when: .signal(app: "voice", active: false),
             expect: [.state("voice", .active)]),
    Scenario(rule: "signal", name: "a non-mixable signal app is not heard while an outside interruption would refuse it",
             given: [.register(AppConfiguration(name: "announce", category: .playback, activation: .signal)),
                     .outsideInterruptionBegan(source: "call")],
             when: .setAppVolume(app: "announce", .position(1)),
             expect: [.state("announce", .inactive), .gain("announce", -.infinity)]),
    Scenario(rule: "signal", name: "unduckAfter: a silent ducker releases its duck and says so; its sound brings the duck back",
             given: [.activate(app: "music"), .activate(app: "nav")], when: .releaseDuck(app: "nav", true),
             expect: [.state("music", .active), .gain("music", 0), .ramp("music", 500), .state("nav", .active),
                      .notified(.duckReleased(app: "nav", released: true))]),
    Scenario(rule: "signal", name: "a released duck holds again when the ducker sounds",
             given: [.activate(app: "music"), .activate(app: "nav"), .releaseDuck(app: "nav", true)],
             when: .releaseDuck(app: "nav", false),
             expect: [.state("music", .ducked), .ramp("music", 100), .notified(.duckReleased(app: "nav", released: false))]),
]

/// A presenter's microphone activated by its own sound, ducking the others.
private let voice = AppConfiguration(name: "voice", category: .playback, options: [.duckOthers, .mixWithOthers], activation: .signal)

@Suite("Policy rules (docs/POLICY.md)")
struct PolicyScenarioTests {
    @Test(arguments: scenarios + routeScenarios)
    func scenario(_ scenario: Scenario) throws {
        var ducking = DuckingSettings()
        if scenario.name.contains("per-pair") {
            ducking.rules = [DuckingRule(ducker: "nav", ducked: "music", level: -20, attack: 50)]
        }
        if scenario.name.contains("several duckers") || scenario.name.contains("deeper ducker") {
            ducking.rules = [DuckingRule(ducker: "mic", ducked: "music", level: -20)]
        }
        var policy = makePolicy(ducking: ducking, privateRoutes: scenario.privateRoutes)
        for event in scenario.given { try policy.apply(event) }
        let before = policy.state
        var effects: [PolicyEffect] = []
        var refusal: PolicyError?
        do { effects = try policy.apply(scenario.when) } catch { refusal = error }

        for expectation in scenario.expect {
            switch expectation {
            case let .state(app, state):
                #expect(policy.audioState(app) == state, "\(app)")
            case let .gain(app, dB):
                let actual = try #require(policy.gainDecibels(app))
                if dB == -.infinity { #expect(actual == -.infinity, "\(app)") } else { #expect(abs(actual - dB) < 0.01, "\(app): \(actual) dB") }
            case let .notified(notification):
                #expect(effects.contains(.notify(notification)), "\(notification) in \(effects)")
            case let .noInterruption(app):
                #expect(!effects.contains { if case let .notify(.interruption(a, _, _, _)) = $0 { a == app } else { false } })
            case let .refused(code):
                #expect(refusal?.code == code, "\(String(describing: refusal))")
                #expect(policy.state == before, "a refused event changes nothing")
                #expect(refusal.map { !$0.message.isEmpty } ?? false)
            case let .nowPlaying(app):
                #expect(policy.state.nowPlaying == app)
            case let .ramp(app, ms):
                // Its cells' ramps and its volume's.
                let ramps = effects.compactMap { effect -> Double? in
                    switch effect {
                    case let .appGain(a, _, _, r) where a == app, let .appVolume(a, _, r, _) where a == app: r
                    default: nil
                    }
                }
                #expect(ramps == [ms], "\(app): \(ramps)")
            case let .saves(expected):
                #expect(effects.contains(.save) == expected)
            case let .effect(effect):
                #expect(effects.contains(effect), "\(effect) in \(effects)")
            case .noRouteNotification:
                #expect(!effects.contains { if case .notify(.route) = $0 { true } else { false } }, "\(effects)")
            }
        }
        if !scenario.expect.contains(where: { if case .refused = $0 { true } else { false } }) {
            #expect(refusal == nil, "\(String(describing: refusal))")
        }
    }
}
