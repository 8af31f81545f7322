import OSCTransport
import Policy

/// What one OSC message asks for (docs/OSC.md, "Paths"), decoded and checked, before anyone acts
/// on it.
///
/// Decoding is pure: it knows the address space and the argument rules (numbers as i/f/d/h,
/// booleans as i/f/T/F, no NaN or infinity, no arguments to a settable path means a query), but
/// not which apps or routes exist; the router says that when the command runs.
public enum ControlCommand: Equatable, Sendable {
    /// A change to the audio sessions; `channels` for a registration.
    case change(PolicyEvent, channels: Int?)
    /// `/system/volume` and `/system/gain`: the volume of whichever route is current.
    case systemVolume(Volume)
    case setNotify(app: String, url: String)
    case query(Query)
    case subscribe(url: String?)
    case unsubscribe(url: String?)
    /// Peak meters to `url` (nil: the sender) at `rate` Hz (0 stops them).
    case meters(url: String?, rate: Double)
    /// `/meters/loudness [f Hz] [s url]`: every app's and route's loudness (EBU R 128), up to 10 Hz.
    case loudnessMeters(url: String?, rate: Double)
    /// `/meters/levels [f Hz] [s url]`: every channel's peak and RMS, up to 20 Hz.
    case levelMeters(url: String?, rate: Double)
    case state
    /// `/timeline [i after]`: the recent events after that number (docs/OSC.md, "/timeline").
    case timeline(after: Int)
    /// `/ping [token]`: answered with the router's JACK client name, and the token when one was
    /// given (a far router watching this one, which tells its own answers by it; a control
    /// surface's connection light).
    case ping(token: Int?)
    /// `/rights`: what the sender may do (docs/HTTP.md, "Who may do what").
    case rights
    /// `/page`: the control page's address (without its key) and where its key is kept.
    case page
    /// `/page/key/rotate [s key]`: a new key for the page; the old one stops granting anything.
    /// `key` is the current one, for a sender that holds it but has no other right to ask.
    case rotatePageKey(key: String?)

    /// A question to a path's row, which answers it (`PathRow.answer`; `Vocabulary.answer`).
    public struct Query: Equatable, Sendable {
        /// The row, by its path as docs/OSC.md writes it (`/app/<app>/volume`).
        public var path: String
        /// The app's or route's name in the path ("" for none).
        public var name: String
        /// What else it names (`/duck/rule`: ducker, ducked, route).
        public var arguments: [String]

        public init(_ path: String, _ name: String = "", _ arguments: [String] = []) {
            self.path = path
            self.name = name
            self.arguments = arguments
        }
    }

    /// The app the command changes, by what it does (`PolicyEvent.app`, which names every event's
    /// app): with its row's, what `Vocabulary.decode` checks the owner of.
    public var appItChanges: String? {
        switch self {
        case let .change(event, _): event.app
        case let .setNotify(app, _): app
        case .systemVolume, .query, .subscribe, .unsubscribe, .meters, .loudnessMeters, .levelMeters, .state, .timeline, .ping, .rights, .page, .rotatePageKey: nil
        }
    }

    /// Whether the command changes state (bundles apply these together).
    public var isChange: Bool {
        switch self {
        case .change, .systemVolume, .setNotify: true
        default: false
        }
    }

    /// Decodes a message (`Vocabulary.decode`), or throws the `/error` to answer it with.
    public static func decode(_ message: OSCMessage) throws(PolicyError) -> ControlCommand {
        try Vocabulary.decode(message).command
    }
}
