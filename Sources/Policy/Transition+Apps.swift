/// Routes, apps and their interruptions, within one event (`Transition`).
extension Transition {
    // MARK: Routes (last in wins; a selection wins until its route goes away)

    func checkRoute(_ route: String) throws(PolicyError) {
        guard state.systemVolumes.contains(where: { $0.route == route }) else { throw .unknownRoute(route) }
    }

    mutating func selectRoute(_ route: String) throws(PolicyError) {
        try checkRoute(route)
        guard state.availableRoutes.contains(route) else {
            throw PolicyError(.unknownRoute, "route '\(route)' is not available")
        }
        let previous = state.currentRoute
        state.selectedRoute = route
        announceRoute(from: previous, reason: .override)
        save = true
    }

    mutating func setRouteAvailable(_ route: String, _ available: Bool) throws(PolicyError) {
        try checkRoute(route)
        guard available != state.availableRoutes.contains(route) else { return }
        let previous = state.currentRoute
        if available {
            state.availableRoutes.append(route)
        } else {
            state.availableRoutes.removeAll { $0 == route }
            if state.selectedRoute == route {
                // A setting that changed: saved, or a restart would select the route again.
                state.selectedRoute = nil
                save = true
            }
            // Headphones pulled: what played through them stops, everywhere (it must not jump to
            // the speaker). multiRoute apps play to every route at once and just lose this one.
            if previous == route && state.privateRoutes.contains(route) {
                for index in state.apps.indices where state.apps[index].isActive
                    && state.apps[index].configuration.category != .multiRoute {
                    interrupt(index, by: .routeDisconnected(route))
                }
            }
        }
        announceRoute(from: previous, reason: available ? .newDeviceAvailable : .oldDeviceUnavailable)
    }

    mutating func announceRoute(from previous: String?, reason: RouteChangeReason) {
        let current = state.currentRoute
        guard current != previous else { return }
        ordered.append(.currentRoute(current, rampMilliseconds: state.fadeMilliseconds))
        ordered.append(.notify(.route(reason: reason, route: current ?? "", previous: previous ?? "")))
    }

    // MARK: Apps

    mutating func register(_ configuration: AppConfiguration) throws(PolicyError) {
        try configuration.validate()
        guard let index = state.apps.firstIndex(where: { $0.name == configuration.name }) else {
            state.apps.append(AppSession(configuration: configuration))
            ordered.append(.appAdded(configuration))
            save = true
            return
        }
        let previous = state.apps[index].configuration
        // `/app/register` says nothing of activation: a signal-activated app stays one.
        var configuration = configuration
        configuration.activation = previous.activation
        guard previous != configuration else { return }
        let previousRoutes = state.routes(of: state.apps[index])
        state.apps[index].configuration = configuration
        ordered.append(.appChanged(configuration))
        save = true
        announceCategoryChange(of: index, from: previousRoutes)
        guard state.apps[index].isActive else { return }
        // An active app that changes category keeps playing under its new rules, as if it had
        // just been activated; spoken audio it paused and may no longer pause gets to resume.
        if previous.interruptsSpokenAudio && !configuration.interruptsSpokenAudio {
            endInterruptions(by: configuration.name, shouldResume: true, everything: false)
        }
        interruptOthers(for: index)
    }

    /// A category change that moves the app to other routes (to or from multiRoute) says so to
    /// the app: `categoryChange`, its routes now and before.
    mutating func announceCategoryChange(of index: Int, from previous: [String]) {
        let routes = state.routes(of: state.apps[index])
        guard routes != previous else { return }
        ordered.append(.notify(.route(reason: .categoryChange, route: routes.joined(separator: ","),
                                      previous: previous.joined(separator: ","), app: state.apps[index].name)))
    }

    /// setActive(true): may interrupt others (§5.2, §5.5) or be refused (§5.11). An app that
    /// plays where no route can carry it is told so, and is active all the same: it is heard as
    /// soon as a route comes. A `record` app is there for the input route, which the policy does
    /// not track, so it needs none.
    mutating func activate(_ index: Int) throws(PolicyError) {
        let app = state.apps[index]
        guard !app.isActive else { return }
        if let refusal = state.activationRefusal(app.configuration) { throw refusal }
        state.apps[index].activity = .active
        state.apps[index].duckReleased = false
        state.apps[index].activationSequence = state.nextActivationSequence
        state.nextActivationSequence += 1
        if app.configuration.category != .record && state.routes(of: app).isEmpty {
            ordered.append(.notify(.route(reason: .noSuitableRouteForCategory, route: "", previous: "", app: app.name)))
        }
        interruptOthers(for: index)
    }

    /// Interrupts the apps an active app must interrupt: every other active non-mixable app when
    /// it is non-mixable, every active spokenAudio app when it interrupts spoken audio.
    mutating func interruptOthers(for index: Int) {
        let interrupter = state.apps[index].configuration
        for other in state.apps.indices where other != index && state.apps[other].isActive {
            let victim = state.apps[other].configuration
            if !interrupter.isMixable && !victim.isMixable {
                interrupt(other, by: .app(interrupter.name))
            } else if interrupter.interruptsSpokenAudio && victim.isSpokenAudio {
                interrupt(other, by: .spokenAudio(interrupter.name))
            }
        }
    }

    /// setActive(false).
    mutating func deactivate(_ index: Int, notifyOthers: Bool) {
        state.apps[index].activity = .inactive
        state.apps[index].activatedByRequest = false
        state.apps[index].activatedBy = nil
        state.apps[index].duckReleased = false
        endInterruptions(by: state.apps[index].name, shouldResume: notifyOthers, everything: true)
    }

    mutating func interrupt(_ index: Int, by interrupter: Interrupter) {
        state.apps[index].activity = .interrupted(by: interrupter)
        state.apps[index].activatedByRequest = false
        state.apps[index].activatedBy = nil
        state.apps[index].duckReleased = false
        let reason: InterruptionReason = if case .routeDisconnected = interrupter { .routeDisconnected } else { .default }
        ordered.append(.notify(.interruption(app: state.apps[index].name, phase: .began, shouldResume: false, reason: reason)))
    }

    /// Ends the interruptions an app caused. Spoken audio it paused always may resume (§5.5);
    /// apps it interrupted may when `shouldResume` (§5.3). With `everything` false, only the
    /// spoken-audio interruptions end.
    mutating func endInterruptions(by name: String, shouldResume: Bool, everything: Bool) {
        var ended: [(Int, Bool)] = []
        for index in state.apps.indices {
            switch state.apps[index].activity {
            case .interrupted(by: .app(name)) where everything: ended.append((index, shouldResume))
            case .interrupted(by: .spokenAudio(name)): ended.append((index, true))
            default: continue
            }
        }
        finish(ended)
    }

    /// Marks interrupted apps inactive, tells them, and re-activates the resumable `auto` ones
    /// in the order they were first activated.
    mutating func finish(_ ended: [(index: Int, shouldResume: Bool)]) {
        for (index, shouldResume) in ended {
            state.apps[index].activity = .inactive
            state.apps[index].activatedBy = nil
            ordered.append(.notify(.interruption(app: state.apps[index].name, phase: .ended, shouldResume: shouldResume, reason: .default)))
        }
        let resuming = ended.filter { $0.shouldResume && state.apps[$0.index].configuration.resume == .auto }
            .map(\.index)
            .sorted { (state.apps[$0].activationSequence ?? 0) < (state.apps[$1].activationSequence ?? 0) }
        for index in resuming {
            // A refusal (another outside interruption began meanwhile) leaves the app inactive.
            if (try? activate(index)) != nil { state.apps[index].activatedBy = .autoResume }
        }
    }

    // MARK: Outside interruptions (§5.11)

    mutating func beginOutsideInterruption(_ source: String) throws(PolicyError) {
        guard !source.isEmpty else { throw PolicyError(.badArgument, "an outside interruption needs a source name") }
        guard !state.outsideInterruptions.contains(source) else {
            throw PolicyError(.general, "the outside interruption '\(source)' is already in progress")
        }
        state.outsideInterruptions.append(source)
        for index in state.apps.indices where state.apps[index].isActive {
            interrupt(index, by: .outside(source))
        }
    }

    mutating func endOutsideInterruption(_ source: String, shouldResume: Bool) throws(PolicyError) {
        guard let position = state.outsideInterruptions.firstIndex(of: source) else {
            throw PolicyError(.general, "no outside interruption '\(source)' is in progress")
        }
        state.outsideInterruptions.remove(at: position)
        let victims = state.apps.indices.filter { state.apps[$0].activity == .interrupted(by: .outside(source)) }
        if let remaining = state.outsideInterruptions.last {
            // Another interruption still lasts: its end decides whether these apps may resume.
            for index in victims { state.apps[index].activity = .interrupted(by: .outside(remaining)) }
            return
        }
        finish(victims.map { ($0, shouldResume) })
    }
}
