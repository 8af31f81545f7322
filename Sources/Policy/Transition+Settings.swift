/// Settings, remote commands and the effects of one event (`Transition`).
extension Transition {
    // MARK: Settings

    mutating func setDucking(_ parameter: DuckingParameter) throws(PolicyError) {
        /// Sets one number of the settings, if it is finite and in `range`; whether it changed.
        func set(_ setting: WritableKeyPath<DuckingSettings, Double>, _ value: Double, _ range: ClosedRange<Double>,
                 _ name: String, _ expected: String) throws(PolicyError) -> Bool {
            guard value.isFinite, range.contains(value) else { throw badValue(name, value, expected) }
            guard value != state.ducking[keyPath: setting] else { return false }
            state.ducking[keyPath: setting] = value
            return true
        }
        let changed: Bool
        switch parameter {
        case let .level(dB): changed = try set(\.level, dB, Limits.duckLevel, "ducking level", "a level in dB from -144 to 0")
        case let .attack(ms): changed = try set(\.attack, ms, Limits.rampMilliseconds, "ducking attack", "milliseconds from 0 to 60000")
        case let .release(ms): changed = try set(\.release, ms, Limits.rampMilliseconds, "ducking release", "milliseconds from 0 to 60000")
        case let .floor(dB): changed = try set(\.floor, dB, Limits.duckLevel, "ducking floor", "a level in dB from -144 to 0")
        case let .target(lu):
            if let lu, !(lu.isFinite && Limits.duckTarget.contains(lu)) {
                throw badValue("ducking target", lu, "a loudness difference in LU from 0 to 60")
            }
            changed = lu != state.ducking.target
            state.ducking.target = lu
        }
        if changed { save = true }
    }

    /// The router's loudness loop sets the depth of loudness-targeted ducks. A pair that no longer
    /// ducks by loudness (it ended while the loop measured) is passed over; a depth that is not a
    /// level is refused. Not a setting: nothing is saved.
    mutating func setLoudnessDucks(_ depths: [DuckPair: Double]) throws(PolicyError) {
        for (pair, dB) in depths where !(dB.isFinite && Limits.duckLevel.contains(dB)) {
            throw PolicyError(.badArgument, "loudness duck \(pair): expected -144 to 0 dB, got \(dB)")
        }
        let current = Dictionary(state.loudnessTargetedDucks.map { ($0.pair, $0.rule) }, uniquingKeysWith: { first, _ in first })
        for (pair, dB) in depths {
            guard let rule = current[pair] else { continue }
            // Never louder than not ducked, never deeper than the floor.
            state.loudnessDucks[pair] = min(0, max(dB, rule.floor))
        }
    }

    /// Depths kept for pairs that no longer duck by loudness are dropped: the next duck of that
    /// pair starts again from its rule's level, as the first did.
    mutating func forgetEndedLoudnessDucks() {
        guard !state.loudnessDucks.isEmpty else { return }
        let current = Set(state.loudnessTargetedDucks.map(\.pair))
        state.loudnessDucks = state.loudnessDucks.filter { current.contains($0.key) }
    }

    func linear(_ volume: Volume, setting: String, maximumDecibels: Double) throws(PolicyError) -> Float {
        switch volume {
        case let .position(position):
            guard position.isFinite, Limits.volume.contains(position) else {
                throw badValue(setting, position, "a slider position from 0 to 1")
            }
            return Decibels.linear(sliderPosition: Float(position))
        case let .decibels(dB):
            guard !dB.isNaN, dB <= maximumDecibels else {
                throw badValue(setting, dB, "a level in dB, at most \(Int(maximumDecibels))")
            }
            return Decibels.linear(Float(max(dB, Double(Decibels.floor))))
        }
    }

    func badValue(_ setting: String, _ value: Double, _ expected: String) -> PolicyError {
        PolicyError(.badArgument, "\(setting): expected \(expected), got \(value)")
    }

    // MARK: Remote commands (§5.12)

    mutating func remote(_ command: RemoteCommand, value: Double?) throws(PolicyError) {
        switch command.valueRule {
        case .none:
            if value != nil { throw PolicyError(.badArgument, "remote command \(command.rawValue) takes no value") }
        case let .required(range, meaning):
            guard let value else { throw PolicyError(.badArgument, "remote command \(command.rawValue) needs a value: \(meaning)") }
            guard value.isFinite, range.contains(value) else { throw badValue("remote command \(command.rawValue)", value, meaning) }
        case let .optional(range, meaning):
            if let value, !(value.isFinite && range.contains(value)) {
                throw badValue("remote command \(command.rawValue)", value, meaning)
            }
        }
        guard let owner = state.nowPlaying, let app = state.app(owner) else {
            throw PolicyError(.noEligibleApp, "no app owns remote control (none is a non-mixable playback app that declared remote commands and was activated)")
        }
        guard app.configuration.remoteCommands.contains(command) else {
            let handled = app.configuration.remoteCommands.map(\.rawValue).sorted().joined(separator: ", ")
            throw PolicyError(.noEligibleApp, "'\(owner)' owns remote control but does not handle \(command.rawValue) (it handles \(handled))")
        }
        ordered.append(.notify(.remote(app: owner, command: command, value: value)))
    }

    // MARK: Effects

    /// The ordered effects, then a gain change and a state notification for every app whose
    /// place in the mix changed, then a save request when persistent settings changed.
    func effects(from old: Mix) -> [PolicyEffect] {
        let new = Mix(of: state)
        var effects = ordered
        for app in state.apps {
            let next = new.apps[app.name]!
            let previous = old.apps[app.name] ?? AppMix(gain: 0, state: .inactive, duck: 1, duckRule: nil)
            if next.factor != previous.factor || next.routeFactors != previous.routeFactors {
                effects.append(.appGain(app: app.name, gain: next.factor, routeGains: next.routeFactors, rampMilliseconds: ramp(from: previous, to: next)))
            }
            if next.state != previous.state || next.gain != previous.gain || old.apps[app.name] == nil {
                effects.append(.notify(.appState(app: app.name, state: next.state, gainDecibels: Double(Decibels.level(next.gain)),
                                                 reason: app.isActive ? app.activatedBy : nil, heldBy: PolicyState.heldBack(app, next))))
            }
        }
        if save { effects.append(.save) }
        return effects
    }

    /// Ducking moves at its attack and release; everything else (starting, stopping, volume) at
    /// the fast fade.
    func ramp(from previous: AppMix, to next: AppMix) -> Double {
        func heard(_ mix: AppMix) -> Bool { mix.state == .active || mix.state == .ducked || mix.state == .listening }
        guard heard(previous), heard(next), next.ducks != previous.ducks else { return state.fadeMilliseconds }
        // Deeper on any route: the attack (one ramp carries every route's change).
        let deeper = next.ducks.contains { route, duck in duck.factor < (previous.ducks[route]?.factor ?? 1) }
        if deeper { return next.duckRule?.attack ?? state.ducking.attack }
        return previous.duckRule?.release ?? state.ducking.release
    }
}
