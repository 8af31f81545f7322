import Engine
import Foundation
import Logging
import Policy

/// Signal activation (docs/POLICY.md): which apps are watched, their detectors, and the decisions
/// their sound leads to. A signal-activated app is activated when its sound turns the detector on
/// and deactivated when it has been silent for the hold time; an active ducking app with
/// `unduckAfter` releases its duck after that much silence and takes it back when it sounds again.
///
/// Owns: the level watches (slots the engine reports peaks for) and one detector per watched app.
/// Must not touch: the policy or plans; its decisions go out as changes for the router to apply.
/// A value type (the router's millisecond timer reads it), so a change transaction can keep a
/// copy and put it back. Control queue only.
///
/// A watch given back is not handed to another app until the audio thread has adopted a plan
/// without it and every reading it made under the old owner has been read: readings carry only
/// the watch's number.
struct SignalWatcher {
    private struct Watch {
        var slot: Int32
        var detector: SignalDetector
        /// The app's `unduckAfter`, in ms (nil: none).
        var unduckAfter: Double?
        /// The last signal activation tried (refusals are retried every 250 ms while it sounds).
        var lastAttempt = Date.distantPast
        var refusalLogged = false
    }

    private var watches: [String: Watch] = [:]
    private var slots: SlotAllocator
    /// Watches given back, each free once a plan published after `published` has been adopted.
    private var quarantined: [(slot: Int32, published: UInt64)] = []
    private var readings: [Engine.LevelReading] = []
    private let logger: Logger

    init(capacity: Int, logger: Logger) {
        slots = SlotAllocator(capacity: capacity)
        self.logger = logger
    }

    /// The watch slot of each watched app, for the plan.
    var slotsByApp: [String: Int32] { watches.mapValues(\.slot) }

    /// Whether any app is watched (the router runs its level timer while so, unless it sleeps).
    var isWatching: Bool { !watches.isEmpty }

    /// Watches every app that is activated by its sound or has `unduckAfter` (and frees the watches
    /// of apps that no longer need one, or are gone). Returns whether the plan must change.
    /// - Parameter published: the newest plan published so far (a watch given back now is in it).
    mutating func update(apps: [AppState], policy: PolicyState, published: UInt64) -> Bool {
        var changed = false
        var wanted: [String: (detection: SignalDetection, unduckAfter: Double?)] = [:]
        // One lookup table, not a search per app: this runs on every change (256 apps, 256 searches).
        let sessions = policy.appsByName
        for app in apps {
            let session = sessions[app.name]
            if session?.configuration.activation == .signal || app.unduckAfter != nil {
                wanted[app.name] = (session?.signal ?? SignalDetection(), app.unduckAfter)
            }
        }
        for (name, watch) in watches where wanted[name] == nil {
            quarantined.append((watch.slot, published))
            watches[name] = nil
            changed = true
        }
        for app in apps {
            guard let (settings, unduckAfter) = wanted[app.name] else { continue }
            if watches[app.name] != nil {
                if watches[app.name]!.detector.settings != settings { watches[app.name]!.detector.settings = settings }
                watches[app.name]!.unduckAfter = unduckAfter
                continue
            }
            guard let slot = slots.take() else {
                logger.error("no level watch left for '\(app.name)' (the engine has \(slots.capacity)); it is not watched")
                continue
            }
            watches[app.name] = Watch(slot: slot, detector: SignalDetector(settings: settings), unduckAfter: unduckAfter)
            changed = true
        }
        return changed
    }

    /// Feeds the peaks the audio thread reported since the last call to the detectors. Returns
    /// the apps whose detector turned on, or nil when nothing was reported.
    mutating func feed(from engine: Engine, sampleRate: Int) -> Set<String>? {
        // Adoption first: every reading made under a plan older than the adopted one is in the
        // ring by then, so once drained, a watch no plan since has carried is free again.
        let adopted = engine.adoptedPlanGeneration
        defer {
            for entry in quarantined where adopted > entry.published { slots.give(entry.slot) }
            quarantined.removeAll { adopted > $0.published }
        }
        engine.collectLevels(into: &readings)
        guard !readings.isEmpty else { return nil }
        var owners: [Int32: String] = [:]
        for (name, watch) in watches { owners[watch.slot] = name }
        var rose = Set<String>()
        for reading in readings {
            guard let name = owners[Int32(reading.watch)] else { continue }
            if watches[name]!.detector.feed(peak: reading.peak, frames: reading.frames, sampleRate: sampleRate) { rose.insert(name) }
        }
        return rose
    }

    /// Each watch's slot and the peak that must wake the level reading while it sleeps: the
    /// detector's silence level, so that any sound that could change a detector's state wakes it.
    var wakeLevels: [(slot: Int32, level: Float)] { watches.values.map { ($0.slot, $0.detector.settings.silenceLevel) } }

    /// Whether more silence can change nothing: every detector is off and has been silent for
    /// its hold and its app's `unduckAfter` (the decisions those lead to were taken when they
    /// were reached), and no watch given back waits to be free (that happens only as levels are
    /// read). Then the router stops reading levels until a watch's peak wakes it.
    func isSettled(sampleRate: Int) -> Bool {
        quarantined.isEmpty && watches.values.allSatisfy { watch in
            !watch.detector.on && watch.detector.silentFrames > 0
                && watch.detector.silentMilliseconds(sampleRate: sampleRate) >= max(watch.detector.settings.hold, watch.unduckAfter ?? 0)
        }
    }

    /// The watched apps, in a stable order.
    var watchedApps: [String] { watches.keys.sorted() }

    /// What a signal-activated app's sound asks of the policy now, if anything: activation when
    /// its detector is on (retried every 250 ms while refused), deactivation when it has been
    /// silent for the hold time (unless a person activated it).
    mutating func activationChange(_ name: String, session: AppSession, rose: Bool, sampleRate: Int) -> Router.Change? {
        guard session.configuration.activation == .signal, let watch = watches[name] else { return nil }
        if watch.detector.on && !session.isActive {
            let now = Date()
            guard rose || now.timeIntervalSince(watch.lastAttempt) >= 0.25 else { return nil }
            watches[name]!.lastAttempt = now
            return Router.Change(.signal(app: name, active: true))
        }
        if !watch.detector.on && session.isActive && session.activatedBy != .osc && watch.detector.heldSilent(sampleRate: sampleRate) {
            return Router.Change(.signal(app: name, active: false))
        }
        return nil
    }

    /// Logs a refused activation once until one succeeds.
    mutating func noteActivation(_ name: String, refusal: RouterError?) {
        guard watches[name] != nil else { return }
        if let refusal {
            if !watches[name]!.refusalLogged {
                logger.notice("'\(name)' sounds but cannot be activated: \(refusal)")
                watches[name]!.refusalLogged = true
            }
        } else {
            watches[name]!.refusalLogged = false
        }
    }

    /// An active ducking app with `unduckAfter`: releases its duck after that much silence, takes
    /// it back when it sounds again.
    func duckChange(_ name: String, session: AppSession, sampleRate: Int) -> Router.Change? {
        guard let watch = watches[name], let unduckAfter = watch.unduckAfter, session.isActive,
              session.configuration.ducksOthers else { return nil }
        let detector = watch.detector
        if !session.duckReleased && detector.silentMilliseconds(sampleRate: sampleRate) >= unduckAfter {
            logger.notice("'\(name)' has been silent for \(Int(unduckAfter)) ms: its duck is released")
            return Router.Change(.releaseDuck(app: name, true))
        }
        if session.duckReleased && detector.loudFrames > 0 { return Router.Change(.releaseDuck(app: name, false)) }
        return nil
    }
}
