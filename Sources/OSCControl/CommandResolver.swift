import ControlVocabulary
import Policy
import RouterCore

/// Turns decoded commands into what the router runs, against one reading of the policy state
/// (a message's, or a whole bundle's, taken when it arrives).
///
/// Owns two rules that need the state, which the pure decoder does not know:
/// - `/system/volume` and `/system/gain` name no route: they act on the route current when the
///   message arrives. That route is read here, once, and bound into the command, so the change,
///   the reply and `/duckrouter/volume` all name it, even when another route becomes current
///   before the change applies (a bundle with a time tag applies later).
/// - `/app/register` of an app that exists says only its category, options and mode: the app
///   keeps its remote commands, its resume setting and its activation (a session app registered
///   again by the program that plays it keeps what its session file declared). Only a new app
///   starts from the defaults.
///
/// Does not touch the router or the server: ControlServer runs what it returns.
struct CommandResolver {
    /// A command ready to run.
    struct Resolved: Equatable {
        /// The command as it is answered: what the reply and the ownership rules read.
        var command: ControlCommand
        /// What the router applies for it (nil: nothing, as for a notify address or a query).
        var change: Router.Change?
    }

    /// What it needs of the state, read at the first command that needs it.
    private var reading: (currentRoute: String?, apps: Set<String>)?
    private let read: () -> PolicyState
    /// Apps the commands resolved so far register or unregister.
    private var added: Set<String> = []
    private var removed: Set<String> = []

    /// `read` is called at most once, and only for a command that needs the state (most do not,
    /// which spares them a trip to the control queue).
    init(reading read: @escaping () -> PolicyState) {
        self.read = read
    }

    private mutating func state() -> (currentRoute: String?, apps: Set<String>) {
        if let reading { return reading }
        let state = read()
        let now = (currentRoute: state.currentRoute, apps: Set(state.apps.map(\.name)))
        reading = now
        return now
    }

    /// Whether `app` exists once the commands resolved so far have applied.
    private mutating func exists(_ app: String) -> Bool {
        if added.contains(app) { return true }
        if removed.contains(app) { return false }
        return state().apps.contains(app)
    }

    /// Resolves the next command of a message or bundle; commands of one bundle go through one
    /// resolver, in order, so a registration sees the apps the bundle added or removed before it.
    mutating func resolve(_ command: ControlCommand) throws(PolicyError) -> Resolved {
        switch command {
        case let .systemVolume(volume):
            guard let route = state().currentRoute else { throw PolicyError(.unknownRoute, "no route is available") }
            let event = PolicyEvent.setSystemVolume(route: route, volume)
            return Resolved(command: .change(event, channels: nil), change: Router.Change(event))
        case let .change(.register(configuration), channels):
            guard exists(configuration.name) else {
                added.insert(configuration.name)
                removed.remove(configuration.name)
                return Resolved(command: command, change: Router.Change(.register(configuration), channelCount: channels))
            }
            let event = PolicyEvent.setCategory(app: configuration.name, category: configuration.category,
                                                options: configuration.options, mode: configuration.mode)
            return Resolved(command: command, change: Router.Change(event))
        case let .change(event, channels):
            if case let .unregister(app) = event {
                removed.insert(app)
                added.remove(app)
            }
            return Resolved(command: command, change: Router.Change(event, channelCount: channels))
        default:
            return Resolved(command: command, change: nil)
        }
    }
}
