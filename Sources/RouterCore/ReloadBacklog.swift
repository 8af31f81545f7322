import Policy
import SessionStore

/// What of the session file's edits (SIGHUP reloads) waits for a restart: the edits only a restart
/// applies (routes, the input, the client name...), and the steps the running router refused (a
/// ducking rule on a route the file added). The restart reads the file, so each applies then, as
/// long as the state file does not hold the running value over it: `laid(over:)` puts in the
/// saved state what the waiting steps set, so a save never keeps the value they were to replace
/// as a change made at run time. A change made at run time of all a step sets ends its wait
/// (the run-time change wins, as it does over any value of the file); one of a part of it (a
/// single ducking rule, an app's category) goes into the step, which waits on; removing an app
/// ends the wait of every step about it.
///
/// Owns: the list. Pure; a field of the router, control queue only.
struct ReloadBacklog: Equatable {
    struct Step: Equatable {
        /// What the step sets ("ducking rules", "channel map of 'x'"): a later reload's step on
        /// the same subject takes its place, or ends its wait when it applies.
        var subject: String
        /// Why it waits, as the log says it.
        var reason: String
        /// The change it is to make at the restart: the file's (`fileEvent`), with the parts
        /// changes made at run time set since (`runTimeChange`); nil: none the state file keeps.
        var event: PolicyEvent?
        /// The change as the file asked for it.
        let fileEvent: PolicyEvent?
        /// The app it is about (nil: none): it goes with the app.
        var app: String?
        /// An app the file added whose ports JACK refused (the server went away under the
        /// request): carried out again when the router next joins the server, not left for a
        /// restart of the router (`Router.retryAdditions`).
        var addition: SessionReload.Step?

        init(subject: String, reason: String, event: PolicyEvent?, app: String? = nil, addition: SessionReload.Step? = nil) {
            self.subject = subject
            self.reason = reason
            self.event = event
            self.fileEvent = event
            self.app = app ?? event?.app
            self.addition = addition
        }

        /// What it waits for, as the log says it.
        var waitsFor: String { addition == nil ? "waits for a restart" : "tried again when the router joins the JACK server again" }

        /// Whether changes made at run time left it other than the file's: the restart must
        /// then find the edited value, not the file's.
        var editedAtRunTime: Bool { event != fileEvent }
    }

    /// Edits of the file that only a restart applies, as of the last reload ("routes changed").
    private(set) var restartEdits: [String] = []
    /// Steps refused, oldest first.
    private(set) var steps: [Step] = []

    /// What waits, for the log and `/state`: the edits, then the refused steps.
    var descriptions: [String] {
        restartEdits.map { "\($0) changed: restart to apply" } + steps.map { "\($0.subject): \($0.reason); \($0.waitsFor)" }
    }

    /// The apps the file added that JACK refused, to carry out again now the router has joined
    /// the server (each leaves the list when it applies, as any step does).
    var additions: [SessionReload.Step] { steps.compactMap(\.addition) }

    /// The edits that need a restart, found by the last reload (in place of those found before).
    mutating func setRestartEdits(_ edits: [String]) { restartEdits = edits }

    /// A step that did not apply: it waits, in place of any earlier one on its subject. Returns
    /// the one it replaces when changes made at run time had edited it (the file's newer value
    /// wins over those edits at the restart, as a reload's does over any run-time value).
    @discardableResult
    mutating func refused(_ step: Step) -> Step? {
        let replaced = steps.first { $0.subject == step.subject }
        steps.removeAll { $0.subject == step.subject }
        steps.append(step)
        return replaced.flatMap { $0.editedAtRunTime ? $0 : nil }
    }

    /// A step that applied, or a change made at run time of what it sets: an earlier step on
    /// its subject no longer waits. Returns that step (nil: none waited).
    @discardableResult
    mutating func applied(subject: String) -> Step? {
        guard let index = steps.firstIndex(where: { $0.subject == subject }) else { return nil }
        return steps.remove(at: index)
    }

    /// App `name` was removed: the steps about it no longer wait. Returns their subjects.
    mutating func appRemoved(_ name: String) -> [String] {
        let gone = steps.filter { $0.app == name }.map(\.subject)
        steps.removeAll { $0.app == name }
        return gone
    }

    /// What a change made at run time did to a waiting step.
    enum RunTimeOutcome: Equatable {
        /// It set all the step was to set: the step no longer waits (the run-time change wins,
        /// as it does over any value of the file).
        case ended(Step)
        /// It set a part of it (one ducking rule, an app's category or remote commands): the
        /// part goes into the step, which waits on with the rest of the file's value. What the
        /// restart finds changed: save.
        case edited(subject: String)

        var subject: String {
            switch self {
            case let .ended(step): step.subject
            case let .edited(subject): subject
            }
        }
    }

    /// A change made at run time (`event`, one that stood): the step it takes the place of ends
    /// its wait; the step of which it sets a part takes that part and waits on, so that neither
    /// the change nor the rest of the file's value is lost at the restart (a change that leaves
    /// the step as it was, such as removing a rule it does not hold, is no edit).
    mutating func runTimeChange(_ event: PolicyEvent) -> [RunTimeOutcome] {
        if let subject = Self.subject(replacedBy: event) {
            return applied(subject: subject).map { [.ended($0)] } ?? []
        }
        guard let subject = Self.subject(editedBy: event),
              let index = steps.firstIndex(where: { $0.subject == subject }),
              let edited = Self.edit(steps[index].event, with: event),
              edited != steps[index].event else { return [] }
        steps[index].event = edited
        return [.edited(subject: subject)]
    }

    /// The subject of the step a change made at run time sets all of (nil: none).
    private static func subject(replacedBy event: PolicyEvent) -> String? {
        switch event {
        case .setDucking, .setDuckingRules, .register, .setChannelMap, .setActivation, .setAppVolume, .setSystemVolume:
            subject(of: event, label: "")
        default:
            nil
        }
    }

    /// The subject of the step a change made at run time sets a part of (nil: none).
    private static func subject(editedBy event: PolicyEvent) -> String? {
        switch event {
        case .setDuckingRule, .removeDuckingRule:
            subject(of: .setDuckingRules([]), label: "")
        case let .setCategory(app, _, _, _), let .setRemoteCommands(app, _):
            subject(of: .register(AppConfiguration(name: app)), label: "")
        default:
            nil
        }
    }

    /// A waiting step's change with the part a run-time change set (nil: it sets none of it).
    private static func edit(_ waiting: PolicyEvent?, with change: PolicyEvent) -> PolicyEvent? {
        switch (waiting, change) {
        case let (.setDuckingRules(rules)?, .setDuckingRule(rule)):
            return .setDuckingRules(rules.setting(rule))
        case let (.setDuckingRules(rules)?, .removeDuckingRule(ducker, ducked, route)):
            return .setDuckingRules(rules.removing(ducker: ducker, ducked: ducked, route: route))
        case (.register(var configuration)?, let .setCategory(_, category, options, mode)):
            (configuration.category, configuration.options, configuration.mode) = (category, options, mode)
            return .register(configuration)
        case (.register(var configuration)?, let .setRemoteCommands(_, commands)):
            configuration.remoteCommands = commands
            return .register(configuration)
        default:
            return nil
        }
    }

    /// What a reload step's event sets, in the words of the log.
    static func subject(of event: PolicyEvent, label: String) -> String {
        switch event {
        case let .setDucking(parameter):
            switch parameter {
            case .level: "ducking level"
            case .attack: "ducking attack"
            case .release: "ducking release"
            case .target: "ducking target"
            case .floor: "ducking floor"
            }
        case .setDuckingRules: "ducking rules"
        case let .register(configuration): "configuration of '\(configuration.name)'"
        case let .unregister(app): "app '\(app)'"
        case let .setChannelMap(app, _): "channel map of '\(app)'"
        case let .setActivation(app, _, _): "activation of '\(app)'"
        case let .setAppVolume(app, _): "volume of '\(app)'"
        case let .setSystemVolume(route, _): "volume of route '\(route)'"
        case let .activate(app): "'\(app)' active at start"
        default: label
        }
    }

    /// `state` with what the waiting steps set: the values the restart's file brings where the
    /// state file would keep them, and nothing where the file's own stands when the state is
    /// silent (the target, floor and rules).
    func laid(over state: SavedState) -> SavedState {
        var state = state
        func app(_ name: String, _ change: (inout SavedState.App) -> Void) {
            guard let index = state.apps.firstIndex(where: { $0.name == name }) else { return }
            change(&state.apps[index])
        }
        for step in steps {
            guard let event = step.event else { continue }
            switch event {
            case let .setDucking(.level(value)): state.ducking.level = value
            case let .setDucking(.attack(value)): state.ducking.attack = value
            case let .setDucking(.release(value)): state.ducking.release = value
            case .setDucking(.target): state.ducking.target = nil
            case .setDucking(.floor): state.ducking.floor = nil
            case let .setDuckingRules(rules): state.ducking.rules = step.editedAtRunTime ? rules.map(SavedState.Ducking.Rule.init) : nil
            case let .setAppVolume(name, volume):
                if case let .position(position) = volume { state.appVolumes[name] = position } else { state.appVolumes[name] = nil }
            case let .setSystemVolume(route, volume):
                if case let .position(position) = volume { state.routeVolumes[route] = position } else { state.routeVolumes[route] = nil }
            case let .unregister(name):
                state.apps.removeAll { $0.name == name }
                state.appVolumes[name] = nil
            case let .register(configuration):
                app(configuration.name) { saved in
                    saved.category = configuration.category.rawValue
                    saved.options = configuration.options.map(\.rawValue).sorted()
                    saved.mode = configuration.mode.rawValue
                    saved.remote = configuration.remoteCommands.map(\.rawValue).sorted()
                    saved.resume = configuration.resume.rawValue
                    saved.activation = configuration.activation == .osc ? nil : configuration.activation.rawValue
                }
            case let .setChannelMap(name, links):
                app(name) { $0.channelmap = links?.map { .init(channel: $0.appChannel, target: "\($0.route):\($0.routeChannel)") } }
            case let .setActivation(name, activation, signal):
                app(name) { saved in
                    saved.activation = activation == .osc ? nil : activation.rawValue
                    let detection = signal ?? SignalDetection()
                    saved.signal = detection == SignalDetection() ? nil : .init(detection)
                }
            default:
                break
            }
        }
        return state
    }
}
