import CWake
import Dispatch
import Engine
import Foundation

/// Signal activation's side of the control queue (docs/POLICY.md, "Signal activation"): the
/// level watches apps get, the millisecond timer that reads their peaks and turns them into
/// policy changes, and its sleep.
///
/// The timer runs only while some app is watched, and not even then while every watched app is
/// silent and settled (`SignalWatcher.isSettled`): the audio thread then reports no level until a
/// watch's peak reaches its detector's silence level, and wakes the control queue once through
/// the engine's eventfd (`levelWakeSource`), which starts the timer again. So a session with a
/// signal-activated mic costs a thousand wake-ups a second only while something sounds on it.
/// Control queue only.
extension Router {
    /// Gives level watches to the apps that need one and runs the level timer (every
    /// millisecond) while any exists and it is not asleep; a change of watches wakes it (a new
    /// app may be sounding already).
    func updateWatches() {
        if signals.update(apps: inventory.apps, policy: policy.state, published: publisher.publishedGeneration) {
            publisher.needsPublish = true
        }
        for (slot, level) in signals.wakeLevels { engine.setWatchWakeLevel(Int(slot), level) }
        if signals.isWatching {
            if levelWakeSource == nil { startLevelWakeSource() }
            wakeLevelWatching()
        } else {
            if let timer = levelTimer {
                timer.cancel()
                levelTimer = nil
            }
            engine.wakeLevels()
        }
    }

    /// Starts (or keeps) the level timer, and level reports on every cycle. Not while no server
    /// runs the client (`attach` calls this again).
    func wakeLevelWatching() {
        engine.wakeLevels()
        guard signals.isWatching, levelTimer == nil, !stopped, link.client != nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(1), repeating: .milliseconds(1), leeway: .microseconds(200))
        timer.setEventHandler { [weak self] in self?.watchLevels() }
        timer.resume()
        levelTimer = timer
    }

    /// Whether the level timer sleeps (for tests and diagnostics; not from the control queue).
    public var levelWatchingIsAsleep: Bool { queue.sync { signals.isWatching && levelTimer == nil } }

    /// Watches the engine's wake-up eventfd; made once, with the first watch. The cancel handler
    /// holds the engine, so the descriptor stays open until the source is done with it.
    private func startLevelWakeSource() {
        let descriptor = engine.levelWakeDescriptor
        guard descriptor >= 0 else { return }
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        let engine = engine
        source.setEventHandler { [weak self] in
            engine.drainLevelWake()
            self?.wakeLevelWatching()
        }
        source.setCancelHandler { withExtendedLifetime(engine) {} }
        source.resume()
        levelWakeSource = source
    }

    /// Brings the policy in line with what the watched apps' sound says (docs/POLICY.md); then,
    /// when more silence can change nothing, puts the timer to sleep. With no server, the timer
    /// stops (`attach` starts it again).
    private func watchLevels() {
        guard !stopped else { return }
        guard link.client != nil else {
            levelTimer?.cancel()
            levelTimer = nil
            return
        }
        guard let rose = signals.feed(from: engine, sampleRate: sampleRate) else { return }
        if !decide(rose: rose) { sleepIfSettled() }
    }

    /// The policy changes the watched apps' sound asks for, applied; returns whether any was
    /// asked (applied or not: a refused or failed one is asked again at the next reading, so the
    /// timer must not sleep on it).
    private func decide(rose: Set<String>) -> Bool {
        var asked = false
        var changed = false
        for name in signals.watchedApps {
            if let session = policy.state.app(name),
               let change = signals.activationChange(name, session: session, rose: rose.contains(name), sampleRate: sampleRate) {
                asked = true
                do throws(RouterError) {
                    _ = try performOnQueue([change])
                    changed = true
                    signals.noteActivation(name, refusal: nil)
                } catch {
                    if case .signal(_, true) = change.event { signals.noteActivation(name, refusal: error) }
                }
            }
            if let session = policy.state.app(name), let change = signals.duckChange(name, session: session, sampleRate: sampleRate) {
                asked = true
                changed = (try? performOnQueue([change])) != nil || changed
            }
        }
        // Talkover must not wait for the end of an OSC burst or the next housekeeping tick.
        if changed && publisher.needsPublish { republish() }
        return asked
    }

    /// Stops the timer when every watched app is silent and settled. Readings of cycles that
    /// began before the sleep are read first: if one was not silent, the timer goes on and what
    /// they ask is decided now. A cycle whose readings arrive after that wakes the timer itself
    /// (`Engine.sleepLevels`), and an eventfd that finds the timer running only restarts nothing.
    private func sleepIfSettled() {
        guard levelWakeSource != nil, let timer = levelTimer, signals.isSettled(sampleRate: sampleRate) else { return }
        engine.sleepLevels()
        if let rose = signals.feed(from: engine, sampleRate: sampleRate), !signals.isSettled(sampleRate: sampleRate) {
            engine.wakeLevels()
            _ = decide(rose: rose)
            return
        }
        timer.cancel()
        levelTimer = nil
    }
}
