import Dispatch
import Policy
import SessionStore

/// Persistence: what a restart should find (SessionStore.SavedState), and when to hand it over.
/// Save requests of the policy are coalesced: the state is taken 200 ms after the first of a
/// burst, and once more on stop if one is pending.
///
/// Owns: whether a save is pending, and how many were asked for. Must not touch: the file (the
/// `onSave` receiver writes it elsewhere), the policy (it is handed a copy). Control queue only.
struct StateKeeper {
    let onSave: (@Sendable (SavedState) -> Void)?
    private(set) var pending = false
    private(set) var requests = 0

    init(onSave: (@Sendable (SavedState) -> Void)?) {
        self.onSave = onSave
    }

    /// A save was asked for: true when the caller should arrange `flush` 200 ms from now.
    mutating func request() -> Bool {
        requests += 1
        guard onSave != nil, !pending else { return false }
        pending = true
        return true
    }

    /// Hands `state` to the receiver if a save is pending.
    mutating func flush(_ state: @autoclosure () -> SavedState) {
        guard pending, let onSave else { return }
        pending = false
        onSave(state())
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
        return SavedState(
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
                return saved
            })
    }
}
