import Dispatch
import Foundation
import Policy
import SessionStore

/// Persistence: what a restart should find (SessionStore.SavedState), and when to hand it over.
/// Save requests of the policy are coalesced: the state is taken 200 ms after the first of a
/// burst, and once more on stop if one is pending. A save the receiver could not write (a full or
/// read-only disk, no descriptor left) stays pending: it is tried again at housekeeping, at
/// growing intervals (`retryDelays`), at stop, and once more after stop when a write under way
/// at stop failed (`takeAfterStop`); failures are logged at a bounded rate.
///
/// Owns: whether a save is pending, how many were asked for, the hand-overs and their outcomes.
/// Must not touch: the file (the `onSave` receiver writes it elsewhere), the policy (it is handed
/// a copy). Control queue only.
struct StateKeeper {
    /// Writes a state elsewhere and calls its second argument with nil once written, or with why
    /// not (`Router.Configuration.onSave`).
    typealias Receiver = @Sendable (SavedState, _ done: @escaping @Sendable (_ failure: String?) -> Void) -> Void

    typealias Failure = RouterStatus.SaveFailure

    /// What the log should say about a hand-over's outcome (`finished`).
    enum Report: Equatable {
        case none
        /// The first failure of a run of them, or one after `failureLogInterval` of silence.
        case failed(reason: String, attempts: Int)
        /// Written after `attempts` failed hand-overs.
        case recovered(attempts: Int)
    }

    let onSave: Receiver?
    private(set) var pending = false
    private(set) var requests = 0
    /// Hand-overs so far: the newest one's outcome says whether the state is written.
    private(set) var handedOver = 0
    private(set) var lastFailure: Failure?
    /// When (monotonic seconds) the newest hand-over went, and the last failure was logged.
    private var lastHandOver = -Double.infinity
    private var lastFailureLogged = -Double.infinity
    /// The one try after stop is spent.
    private var triedAfterStop = false

    /// Waits before trying a failed save again: the first, doubling up to the last.
    static let retryDelays = (first: 1.0, maximum: 30.0)
    /// A run of failures is logged at its first, then at most once in this many seconds.
    static let failureLogInterval = 60.0

    init(onSave: Receiver?) {
        self.onSave = onSave
    }

    /// A save was asked for: true when the caller should arrange `take` 200 ms from now.
    mutating func request() -> Bool {
        requests += 1
        guard onSave != nil, !pending else { return false }
        pending = true
        return true
    }

    /// Takes the pending save for handing over (at `now`, monotonic seconds): its number for
    /// `finished`, or nil when none is pending.
    mutating func take(now: Double) -> Int? {
        guard pending, onSave != nil else { return nil }
        pending = false
        handedOver += 1
        lastHandOver = now
        return handedOver
    }

    /// After stop, once the receiver has finished the writes handed over: the save once more if
    /// it is pending again (a write under way at stop failed, so the hand-over at stop had
    /// nothing to take), as `take` does; once only, so stopping never waits on a dead disk.
    mutating func takeAfterStop(now: Double) -> Int? {
        guard !triedAfterStop, let number = take(now: now) else { return nil }
        triedAfterStop = true
        return number
    }

    /// Whether a save that failed should be tried again now (housekeeping).
    func shouldRetry(now: Double) -> Bool {
        guard pending, let failure = lastFailure, failure.retrying else { return false }
        let delay = min(Self.retryDelays.first * pow(2, Double(min(failure.attempts - 1, 16))), Self.retryDelays.maximum)
        return now - lastHandOver >= delay
    }

    /// The receiver's outcome for hand-over `number` (nil: written), at `now` (monotonic
    /// seconds) and `date`. A failure of the newest hand-over makes the save pending again; an
    /// older one's outcome is overtaken by the newer hand-over's.
    mutating func finished(_ number: Int, failure: String?, now: Double, date: Date = Date()) -> Report {
        guard number == handedOver else { return .none }
        guard let failure else {
            guard let last = lastFailure, last.retrying else { return .none }
            lastFailure?.retrying = false
            return .recovered(attempts: last.attempts)
        }
        pending = true
        let attempts = lastFailure?.retrying == true ? lastFailure!.attempts + 1 : 1
        lastFailure = Failure(at: date, reason: failure, retrying: true, attempts: attempts)
        guard attempts == 1 || now - lastFailureLogged >= Self.failureLogInterval else { return .none }
        lastFailureLogged = now
        return .failed(reason: failure, attempts: attempts)
    }

    /// A save was taken some other way (a session manager's save): the pending one is answered.
    mutating func cancelPending() { pending = false }

    /// What a restart should find, from the policy and each app's channel count. The ducking
    /// target, floor and rules are kept only where they differ from the session file's
    /// (`fileDucking`): changed at run time (`/duck/...`). An edit of the file then counts at the
    /// next start, as long as no run-time change of that setting stands over it.
    static func savedState(_ state: PolicyState, channels: [String: Int], defaultChannelCount: Int,
                           fileDucking: DuckingSettings? = nil) -> SavedState {
        // Slider positions to 6 decimals: 0.3, not 0.30000001192092896 (the policy keeps floats).
        func position(_ linear: Float) -> Double { (Double(Decibels.sliderPosition(linear: linear)) * 1e6).rounded() / 1e6 }
        var saved = SavedState(
            silent: state.silentSwitch, selectedRoute: state.selectedRoute,
            ducking: .init(level: state.ducking.level, attack: state.ducking.attack, release: state.ducking.release,
                           target: fileDucking?.target == state.ducking.target ? nil : .init(state.ducking.target),
                           floor: fileDucking?.floor == state.ducking.floor ? nil : state.ducking.floor,
                           rules: fileDucking?.rules == state.ducking.rules ? nil : state.ducking.rules.map(SavedState.Ducking.Rule.init)),
            routeVolumes: Dictionary(state.systemVolumes.map { ($0.route, position($0.volume)) }, uniquingKeysWith: { a, _ in a }),
            appVolumes: Dictionary(state.apps.map { ($0.name, position($0.volume)) }, uniquingKeysWith: { a, _ in a }),
            apps: state.apps.map { app in
                let c = app.configuration
                var saved = SavedState.App(name: app.name, category: c.category.rawValue, options: c.options.map(\.rawValue).sorted(),
                                           mode: c.mode.rawValue, remote: c.remoteCommands.map(\.rawValue).sorted(),
                                           resume: c.resume.rawValue, channels: channels[app.name] ?? defaultChannelCount,
                                           channelmap: app.channelMap?.map { .init(channel: $0.appChannel, target: "\($0.route):\($0.routeChannel)") })
                if c.activation != .osc { saved.activation = c.activation.rawValue }
                if app.signal != SignalDetection() { saved.signal = .init(app.signal) }
                if app.settings != AppSettings() { saved.settings = app.settings }
                return saved
            })
        let show = state.show
        if !show.stored.isEmpty || show.next > 0 || show.current != nil || show.currentScene != nil { saved.show = .init(show) }
        return saved
    }
}
