import Dispatch
import Engine
import Foundation
import JackHost
import Policy
import SessionStore

/// How a change goes through the control plane, as one transaction: checked on a copy of the
/// policy (`ChangeTransaction`), ports registered, the policy committed, its effects carried out,
/// and the plan published. If ports cannot be had or the plan cannot be built, everything goes
/// back as it was (ports registered meanwhile are unregistered; ports taken back from a fading
/// app stay where the live plan reads them) and the change is refused. Notifications and save
/// requests go out only once the change stands.
///
/// Owns no state of its own. Control queue only.
extension Router {
    var rampFrames: Int32 { frames(milliseconds: rampMilliseconds) }

    /// The look-ahead of the routes that have one, in frames (0: none).
    var lookaheadFrames: Int {
        inventory.routes.first { $0.lookahead > 0 }.map { Int(frames(milliseconds: $0.lookahead)) } ?? 0
    }

    func frames(milliseconds: Double) -> Int32 {
        Int32(max(1, min((milliseconds * Double(sampleRate) / 1000).rounded(), Double(Int32.max / 2))))
    }

    /// - Parameter reloadStep: the change is a session reload's step (`carryOut`), not one made
    ///   at run time.
    func performOnQueue(_ changes: [Change], connect: [PortPattern] = [],
                        startFrame: UInt32? = nil, fromGraph: Bool = false, reloadStep: Bool = false) throws(RouterError) -> [PolicyEffect] {
        guard !stopped else { throw .stopped }
        let transaction = try ChangeTransaction(changes, policy: policy, inventory: inventory,
                                                defaultChannelCount: defaultChannelCount, fromGraph: fromGraph)
        // A scheduled plan carries everything before it: changes still being coalesced go out
        // now, in a plan of their own, or they would wait for the scheduled frame.
        if startFrame != nil && publisher.needsPublish { republish() }
        let before = (inventory: inventory, policy: policy, currentRoute: currentRoute, signals: signals)
        func rollBack() {
            for port in inventory.registeredSince { link.client?.unregister(port) }
            (inventory, policy, currentRoute, signals) = before
            followMeters()
        }
        inventory.beginJournal()
        // Effects in order, so an app removed and registered again in one batch hands its ports
        // over. Ports first: if JACK refuses them, the policy keeps its old state and no new port
        // stays.
        policy = transaction.policy
        for (r, flag) in transaction.enabled { inventory.routes[r].enabled = flag }
        do {
            // One addition per `.appAdded`, in the same order (an app may come, go and come again).
            var additions = transaction.additions[...]
            for effect in transaction.effects {
                guard case let .appAdded(configuration) = effect else {
                    apply(effect)
                    continue
                }
                let channels = additions.popFirst()?.channels ?? defaultChannelCount
                try inventory.addApp(configuration.name, channelCount: channels, connect: connect, on: link.client,
                                     records: configuration.category.recordsInput)
            }
        } catch {
            rollBack()
            throw RouterError(error)
        }
        updateWatches()
        updateLoudnessDucking()
        do {
            if startFrame != nil {
                try publish(startFrame: startFrame)
            } else if coalescing {
                // Published at the end of the burst; refused now if that plan could not be held.
                let slots = inventory.slotsInUse
                if link.client != nil && publisher.mayOverflow(inputSlots: slots.inputs, outputSlots: slots.outputs) {
                    try publisher.check(matrix(), on: engine)
                }
                publisher.needsPublish = true
            } else {
                try publish()
            }
        } catch {
            rollBack()
            updateWatches()
            updateLoudnessDucking()
            throw error
        }
        // The change stands: connections, notifications, saves.
        if let client = link.client {
            for addition in transaction.additions {
                if let index = inventory.appIndex(addition.name) { patchbay.connectSources(of: inventory.apps[index], on: client) }
            }
        }
        if transaction.effects.contains(where: { if case .appAdded = $0 { true } else if case .appRemoved = $0 { true } else { false } }) {
            updateLatencies()
        }
        followBacklog(changes, effects: transaction.effects, runTime: !reloadStep)
        withdrawTimedChanges(actingOnAppsRemovedIn: transaction.effects)
        for effect in transaction.effects { announce(effect) }
        followScenes(transaction.effects, startFrame: startFrame)
        return transaction.effects
    }

    /// What a change that stands does to the reload steps waiting for a restart: one made at run
    /// time of all a step sets takes its place (a run-time change wins over the file's value,
    /// the waiting one too), one of a part of it goes into the step (`ReloadBacklog.runTimeChange`),
    /// and an app removed takes the steps about it along.
    private func followBacklog(_ changes: [Change], effects: [PolicyEffect], runTime: Bool) {
        guard !reloadBacklog.steps.isEmpty else { return }
        if runTime {
            for outcome in changes.flatMap({ reloadBacklog.runTimeChange($0.event) }) {
                switch outcome {
                case let .ended(step):
                    // The file's value is now the one the step was to set (as the file has it,
                    // without edits made at run time since): the running one is saved where it
                    // differs from that.
                    switch step.fileEvent {
                    case let .setDucking(.target(value)): fileDucking?.target = value
                    case let .setDucking(.floor(value)): fileDucking?.floor = value
                    case let .setDuckingRules(rules): fileDucking?.rules = rules
                    default: break
                    }
                    logger.notice("\(step.subject) changed at run time: the reload's step that waited for a restart is dropped, the change made now stands")
                case let .edited(subject):
                    // What the restart finds changed, though perhaps nothing running did.
                    requestSave()
                    logger.notice("a change made at run time also applies to the reload's \(subject), which still wait\(subject.hasSuffix("rules") ? "" : "s") for a restart")
                }
            }
        }
        for case let .appRemoved(name) in effects {
            let dropped = reloadBacklog.appRemoved(name)
            if !dropped.isEmpty { logger.notice("'\(name)' removed: \(dropped.joined(separator: ", ")) no longer wait\(dropped.count == 1 ? "s" : "") for a restart") }
        }
    }

    /// Timed changes that act on an app removed now are withdrawn (their completions refused): an
    /// app registered later under the same name is another app, perhaps another owner's.
    private func withdrawTimedChanges(actingOnAppsRemovedIn effects: [PolicyEffect]) {
        guard !timed.isEmpty else { return }
        for case let .appRemoved(name) in effects {
            for entry in timed.take(actingOn: name) {
                entry.completion(.failure(.policy(PolicyError(.unknownApp, "'\(name)' was removed before the timed change applied"))))
            }
        }
    }

    /// `performOnQueue`, giving a hung server up and trying once more without it
    /// (`givingUpHungServer`): for changes from outside (OSC, the API, a session reload).
    func performGivingUpHungServer(_ changes: [Change], connect: [PortPattern] = [], reloadStep: Bool = false) throws(RouterError) -> [PolicyEffect] {
        try givingUpHungServer { () throws(RouterError) in try performOnQueue(changes, connect: connect, reloadStep: reloadStep) }
    }

    /// What an effect changes in the control state (before the plan is published).
    private func apply(_ effect: PolicyEffect) {
        switch effect {
        case .notify, .save, .appAdded, .channelMap, .sceneFade:
            break
        case let .appChanged(configuration):
            // An app that now records gets capture outputs (kept until it is removed). Refused
            // while the server does not answer, they are made once it does (`followServerAnswers`).
            guard configuration.category.recordsInput, let client = link.client,
                  let index = inventory.appIndex(configuration.name) else { return }
            do {
                try inventory.addCapturePorts(toApp: index, on: client)
            } catch let error as JackError where error.isServerNotAnswering {
                logger.error("'\(configuration.name)' gets its capture ports once the JACK server answers: \(error)")
            } catch {
                logger.error("'\(configuration.name)' gets no capture ports: \(error)")
            }
        case let .appRemoved(name):
            inventory.retire(name)
        case let .appGain(name, gain, routeGains, milliseconds):
            guard let index = inventory.appIndex(name) else { return }
            inventory.apps[index].gain = gain
            inventory.apps[index].routeGains = routeGains
            inventory.apps[index].pendingRamp = frames(milliseconds: milliseconds)
        case let .appVolume(name, _, milliseconds, curve):
            guard let index = inventory.appIndex(name) else { return }
            inventory.apps[index].volumeChange = inventory.stageChange(rampFrames: frames(milliseconds: milliseconds), curve: GainCurve(curve))
        case let .systemVolume(route, gain, milliseconds, curve):
            guard let index = inventory.routeIndex(route) else { return }
            inventory.routes[index].gain = gain
            inventory.routes[index].volumeChange = inventory.stageChange(rampFrames: frames(milliseconds: milliseconds), curve: GainCurve(curve))
        case let .currentRoute(name, milliseconds):
            currentRoute = name.flatMap(inventory.routeIndex)
            for index in inventory.apps.indices { inventory.apps[index].pendingRamp = frames(milliseconds: milliseconds) }
        }
    }

    /// A notification to apps and surfaces (`onNotification`), and into the timeline.
    func tell(_ notification: RouterNotification) {
        timeline.record(notification)
        onNotification(notification)
    }

    /// What an effect tells the world, once the change stands.
    private func announce(_ effect: PolicyEffect) {
        switch effect {
        case let .notify(notification):
            tell(.policy(measured(notification)))
        case .save:
            requestSave()
        default:
            break
        }
    }

    /// A save is asked for: handed over 200 ms from now (with any asked for meanwhile); the
    /// change is told at once (`Configuration.onChange`).
    func requestSave() {
        onChange()
        guard keeper.request() else { return }
        queue.asyncAfter(deadline: .now() + .milliseconds(200)) { [weak self] in
            guard let self, !stopped else { return }
            handOverSave()
        }
    }

    /// The control state as the plan compiler's inputs.
    func matrix() -> RoutingMatrix {
        RoutingMatrix(apps: inventory.apps, routes: inventory.routes, input: inventory.input, policy: policy.state,
                      currentRoute: currentRoute, watches: signals.slotsByApp, rampFrames: rampFrames, lookaheadFrames: lookaheadFrames,
                      loudness: loudness)
    }

    /// Publishes the current state as one all-or-nothing step. While the server is away the state
    /// only changes; the plan goes out with the new ports. A full queue is not an error: the state
    /// waits and housekeeping publishes it (coalesced with any later change).
    func publish(startFrame: UInt32? = nil) throws(RouterError) {
        guard link.client != nil else {
            // Meters are named as the state is while the server is away.
            followMeters()
            publisher.needsPublish = true
            return
        }
        switch try publisher.publish(matrix(), on: engine, startFrame: startFrame) {
        case .published:
            afterPublishing()
        case .queueFull:
            if startFrame != nil {
                logger.warning("the audio thread's plan queue is full: a scheduled change will apply late")
            } else if diagnostics.shouldLogPlanQueueFull() {
                logger.warning("the audio thread's plan queue is full: changes wait and are coalesced into the next plan",
                               metadata: ["times": "\(publisher.planQueueFull)"])
            }
        }
    }

    /// A plan is with the engine: the ramps it carries are spent, and removed apps it no longer
    /// reads are stamped with its generation.
    func afterPublishing() {
        followMeters()
        for index in inventory.apps.indices { inventory.apps[index].pendingRamp = nil }
        for index in inventory.routes.indices { inventory.routes[index].pendingRamp = nil }
        inventory.noteCleared(inPlan: publisher.publishedGeneration, slotsInUse: publisher.slotsInUse())
        loudness.follow(apps: inventory.apps, routes: inventory.routes, engine: engine, sampleRate: sampleRate)
    }

    /// The peak board names meters as the apps and routes are now: after each plan handed to the
    /// engine (every path that publishes goes through `afterPublishing`), and while the server is
    /// away, when a change is undone.
    func followMeters() {
        peakBoard.follow(apps: inventory.apps, routes: inventory.routes)
    }

    /// Publishes, logging (not throwing) a refusal: used where no caller waits. The state keeps
    /// waiting (`needsPublish`) and the audio thread keeps the plan it has.
    func republish() {
        do {
            try publish()
        } catch {
            if diagnostics.shouldLogPublishFailure() { logger.error("could not update the mix: \(error)") }
        }
    }

    /// Applies the timed changes due within the next few periods, each in a plan that starts at
    /// its frame. The lead covers the housekeeping interval and the hand-over to the audio thread.
    func runDueChanges(now: UInt32) {
        guard !timed.isEmpty else { return }
        for entry in timed.takeDue(now: now, lead: Int32(3 * bufferSize + sampleRate / 25)) {
            let late = Int32(bitPattern: entry.frame &- now) <= 0
            do throws(RouterError) {
                entry.completion(.success(try performOnQueue(entry.changes, startFrame: late ? nil : entry.frame)))
            } catch {
                logger.error("a scheduled change was refused when it came due: \(error)")
                entry.completion(.failure(error))
            }
        }
    }

    /// Carries out a session reload's steps in order; returns a note for each step refused. A
    /// step that applies ends the wait of an earlier one on its subject; one refused waits for a
    /// restart (`reloadBacklog`). The file's ducking settings in force (`fileDucking`) follow
    /// `ducking.new` only where its step applied, so a save does not take the running value for
    /// a change made at run time.
    func carryOut(_ reload: SessionReload, ducking: (old: DuckingSettings, new: DuckingSettings)) -> [String] {
        var notes: [String] = []
        var fileDucking = self.fileDucking ?? ducking.old
        func refused(_ subject: String, _ error: RouterError, _ event: PolicyEvent?, app: String? = nil, addition: SessionReload.Step? = nil) {
            let step = ReloadBacklog.Step(subject: subject, reason: "\(error)", event: event, app: app, addition: addition)
            if reloadBacklog.refused(step) != nil {
                logger.notice("reload: the file's new \(subject) take\(subject.hasSuffix("rules") ? "" : "s") the place of the waiting ones and of the changes made to them at run time (those stay in force until the restart)")
            }
            notes.append("\(subject): \(error); \(step.waitsFor)")
        }
        func apply(_ events: [PolicyEvent], _ label: String) {
            for event in events {
                let subject = ReloadBacklog.subject(of: event, label: label)
                do throws(RouterError) {
                    _ = try performGivingUpHungServer([Change(event)], reloadStep: true)
                } catch {
                    refused(subject, error, event)
                    continue
                }
                reloadBacklog.applied(subject: subject)
                switch event {
                case .setDucking(.level): fileDucking.level = ducking.new.level
                case .setDucking(.attack): fileDucking.attack = ducking.new.attack
                case .setDucking(.release): fileDucking.release = ducking.new.release
                case .setDucking(.target): fileDucking.target = ducking.new.target
                case .setDucking(.floor): fileDucking.floor = ducking.new.floor
                case .setDuckingRules: fileDucking.rules = ducking.new.rules
                default: break
                }
            }
        }
        for step in reload.steps {
            switch step {
            case let .events(events, label):
                apply(events, label)
            case let .add(app, volume):
                // Adding and removing an app share a subject: the later one decides.
                let subject = ReloadBacklog.subject(of: .unregister(app: app.name), label: "")
                do throws(RouterError) {
                    _ = try performGivingUpHungServer([Change(.register(app.configuration), channelCount: app.channelCount)], connect: app.connect,
                                                      reloadStep: true)
                } catch {
                    // JACK refused its ports (a server going away under the request, as a show's
                    // USB interface may): tried again when the router joins the server again.
                    let jack = if case .jack = error { true } else { false }
                    refused(subject, error, nil, app: app.name, addition: jack ? step : nil)
                    continue
                }
                reloadBacklog.applied(subject: subject)
                setPatchbay(app.name, connect: app.connect, exclusive: app.exclusive)
                setUnduckAfter(app.name, app.unduckAfter)
                apply(SessionReload.setup(of: app, volume: volume), "'\(app.name)'")
            case let .unduckAfter(app, value):
                setUnduckAfter(app, value)
            case let .patchbay(app, connect, exclusive):
                setPatchbay(app, connect: connect, exclusive: exclusive)
            }
        }
        self.fileDucking = fileDucking
        return notes
    }

    /// Carries out again the apps a reload added that JACK refused, now the router runs on the
    /// server again (`ReloadBacklog.additions`); each that applies no longer waits.
    func retryAdditions() {
        let additions = reloadBacklog.additions
        guard !additions.isEmpty else { return }
        // Additions carry no ducking step: the file's ducking in force stays as it is.
        let inForce = fileDucking
        let notes = carryOut(SessionReload(steps: additions), ducking: (DuckingSettings(), DuckingSettings()))
        fileDucking = inForce
        let names = additions.compactMap { step -> String? in if case let .add(app, _) = step { app.name } else { nil } }
        if notes.isEmpty {
            logger.notice("reload: the apps the file added are there now the router runs on the JACK server again", metadata: ["apps": "\(names)"])
        } else {
            logger.warning("reload: \(notes.joined(separator: "; "))")
        }
    }

    private func setUnduckAfter(_ name: String, _ value: Double?) {
        guard let index = inventory.appIndex(name), inventory.apps[index].unduckAfter != value else { return }
        inventory.apps[index].unduckAfter = value
        updateWatches()
    }

    private func setPatchbay(_ name: String, connect: [PortPattern], exclusive: Bool) {
        guard let index = inventory.appIndex(name) else { return }
        inventory.apps[index].connect = connect
        inventory.apps[index].exclusive = exclusive
        if let client = link.client { patchbay.connectSources(of: inventory.apps[index], on: client) }
    }
}
