import OSCTransport
import Policy

/// One reading of the control plane, as a front end other than OSC sees it (OSCQuery's
/// namespace, its LISTEN values): taken on the OSC server's thread at one moment, a value from
/// then on. Its `value` answers a path exactly as an OSC message without arguments is answered:
/// the same decoder, the same row's `answer`.
public struct ControlReading: Sendable {
    public struct App: Sendable, Equatable {
        public var name: String
        /// One of `AppAudioState`'s words: `inactive`, `listening`, `active`, …
        public var state: String
        /// What holds it back ("ducked by nav"), or "" (also until `withWhy` works it out).
        public var why: String
        /// Input peak per channel, dBFS (the latest meter interval).
        public var peaks: [Double]
        public init(name: String, state: String, why: String = "", peaks: [Double] = []) {
            self.name = name
            self.state = state
            self.why = why
            self.peaks = peaks
        }
    }

    public struct Route: Sendable, Equatable {
        public var name: String
        /// The route's system volume, a slider position 0...1.
        public var volume: Double
        /// Output peak per channel, dBFS (the latest meter interval).
        public var peaks: [Double]
        public init(name: String, volume: Double, peaks: [Double] = []) {
            self.name = name
            self.volume = volume
            self.peaks = peaks
        }
    }

    /// The policy's state: what the queries answer from.
    public var policy: PolicyState
    /// In registration order, and in the session's route order.
    public var apps: [App] = []
    public var routes: [Route] = []
    /// The app remote commands go to (Now Playing), if any.
    public var nowPlaying: String?
    /// The outside interruptions under way, by source, oldest first.
    public var outsideInterruptions: [String] = []
    /// Each app's notify address, by app (what `/app/<name>/notify` replies; the OSC server
    /// keeps these, not the policy).
    public var notify: [String: String]

    /// A reading of `policy` and the notify addresses; the apps, routes and the rest are set
    /// after, from the router's status.
    public init(policy: PolicyState, notify: [String: String]) {
        self.policy = policy
        self.notify = notify
    }

    /// The reading with each app's why worked out from the policy (a mix of every app: done by
    /// a reader that shows it, not for every reading).
    public func withWhy() -> ControlReading {
        let why = policy.whyAll()
        var reading = self
        for index in reading.apps.indices { reading.apps[index].why = why[reading.apps[index].name] ?? "" }
        return reading
    }

    /// What `path` replies to an OSC message without arguments, when that is a query:
    /// `.success` with the reply values, `.failure` with the `/error` it would get (an unknown
    /// path, app or route; or a path that is not a query, such as `/app/x/activate`, which is
    /// refused here instead of run).
    public func value(_ path: String) -> Result<[OSCArgument], PolicyError> {
        do throws(PolicyError) {
            guard case let .query(query) = try Vocabulary.decode(OSCMessage(path)).command else {
                return .failure(PolicyError(.badArgument, "\(path) is not a query"))
            }
            return .success(try Vocabulary.answer(query, policy, notify: { [notify] in notify[$0] ?? "" }))
        } catch {
            return .failure(error)
        }
    }
}
