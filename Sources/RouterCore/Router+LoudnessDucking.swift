import Dispatch
import Policy

/// Ducks that aim at a loudness difference (issue 19): the apps' loudness is metered while any
/// duck may aim at a target, and every 100 ms while one is in force the loop
/// (`LoudnessDucker`) sets their depths through the policy, as any other change. Control queue
/// only.
extension Router {
    /// How often the loop looks at the readings (the meters move in 100 ms blocks).
    static let loudnessDuckInterval = DispatchTimeInterval.milliseconds(100)

    /// Meters loudness when asked to or when a duck may aim at a target, and runs the loop's
    /// timer while a loudness-targeted duck is in force, and not otherwise.
    func updateLoudnessDucking() {
        if loudness.setEnabled(meterLoudness || policy.state.ducking.usesLoudness) { publisher.needsPublish = true }
        let ducks = loudness.enabled ? policy.state.loudnessTargetedDucks : []
        loudnessDucker.keep(only: Set(ducks.map(\.pair)))
        let inForce = !ducks.isEmpty
        if inForce && loudnessDuckTimer == nil {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + Self.loudnessDuckInterval, repeating: Self.loudnessDuckInterval, leeway: .milliseconds(10))
            timer.setEventHandler { [weak self] in self?.stepLoudnessDucks() }
            timer.resume()
            loudnessDuckTimer = timer
        } else if !inForce, let timer = loudnessDuckTimer {
            timer.cancel()
            loudnessDuckTimer = nil
        }
    }

    /// One pass of the loop: depths that moved go through the policy (gains ramp at the rules'
    /// attack and release; notifications as for any gain change).
    private func stepLoudnessDucks() {
        guard !stopped, link.client != nil else { return }
        let ducks = policy.state.loudnessTargetedDucks
        let sessions = policy.state.appsByName
        let changes = loudnessDucker.step(ducks, reading: { loudness.reading(app: $0) },
                                          volume: { Double(Decibels.level(sessions[$0]?.volume ?? 1)) },
                                          threshold: { sessions[$0]?.signal.threshold ?? -40 })
        guard !changes.isEmpty else { return }
        do throws(RouterError) {
            _ = try performOnQueue([Change(.setLoudnessDucks(changes))])
            if publisher.needsPublish { republish() }
        } catch {
            if diagnostics.shouldLogPublishFailure() { logger.error("a loudness-targeted duck could not move: \(error)") }
        }
    }

    /// The loudness difference heard now (ducker minus ducked app, with the duck in force), LU,
    /// for a loudness-targeted duck the loop has measured; nil otherwise.
    func measuredDifference(_ pair: DuckPair) -> Double? {
        guard let estimate = loudnessDucker.estimates[pair], let ducker = estimate.ducker, let ducked = estimate.ducked,
              let depth = policy.state.loudnessDucks[pair] else { return nil }
        return ducker - (ducked + depth)
    }

    /// An app's state notification with the loudness difference measured now, when a
    /// loudness-targeted duck holds it.
    func measured(_ notification: PolicyNotification) -> PolicyNotification {
        guard case .appState(let app, let state, let gain, let reason, var held?) = notification, held.target != nil,
              let route = held.route else { return notification }
        held.difference = measuredDifference(DuckPair(ducker: held.by, ducked: app, route: route))
        return .appState(app: app, state: state, gainDecibels: gain, reason: reason, heldBy: held)
    }
}
