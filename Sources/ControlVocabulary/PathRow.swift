import OSCTransport
import Policy

/// One path of the OSC address space (docs/OSC.md, "Paths"), written once: how it is spelled,
/// what a message to it carries and gets back, who may send it, what OSCQuery says of it, and how
/// its arguments become a `ControlCommand`. `Vocabulary.rows` holds them all; decoding, the
/// ownership check, the OSCQuery namespace, `duckctl` and the docs test read them.
public struct PathRow: Sendable {
    /// A part of the path between two slashes.
    public enum Segment: Sendable, Equatable {
        /// Spelled as is.
        case word(String)
        /// An app's name (any text here: the decoder judges it, -3).
        case app
        /// A route's name (not empty).
        case route
        /// A scene's name (not empty; the answer judges it, -9).
        case scene
    }

    /// What a message to the path may do; OSCQuery's ACCESS (0 none, 1 read, 2 write, 3 both).
    public enum Access: Int, Sendable {
        /// No value: a trigger (it acts, and has nothing to read), or a container of others.
        case none = 0
        /// Read only: a value OSCQuery shows, with no OSC path that sets it; or a path OSC asks
        /// and nothing sets (`/scene/list`, not in the namespace).
        case readOnly = 1
        /// Set only (a value, but none to read back).
        case writeOnly = 2
        /// Set with arguments, queried without.
        case readWrite = 3
    }

    /// Whose the path is: who may send it (docs/OSC.md, "Who may do what").
    public enum Scope: Sendable, Equatable {
        /// The shared controls: any allowed address.
        case shared
        /// The app named in the path: its owner, or an admin, may change it (anyone may read).
        case appInPath
        /// The app named by the first argument (`/app/register`): as `appInPath`.
        case appInFirstArgument
        /// Only an admin (an `osc.admin` address, or the page's key): what says what a recall
        /// does to every app (`/scene/store`, `/scene/delete`).
        case admin
    }

    /// An argument the path takes, in order: OSCQuery's TYPE, RANGE and UNIT come from these.
    public struct Parameter: Sendable, Equatable {
        public enum Kind: String, Sendable { case float = "f", int = "i", string = "s" }
        public enum Values: Sendable, Equatable {
            case numbers(ClosedRange<Double>)
            /// At least this much, no upper bound.
            case atLeast(Double)
            case words([String])
            /// The names of the routes there are (the namespace fills them in).
            case routeNames
        }
        public var name: String
        public var kind: Kind
        public var values: Values?
        /// OSCQuery's UNIT (`gain.db`, `time.millisecond`).
        public var unit: String?

        public init(_ name: String, _ kind: Kind, _ values: Values? = nil, unit: String? = nil) {
            self.name = name
            self.kind = kind
            self.values = values
            self.unit = unit
        }
    }

    /// As docs/OSC.md writes it: `/app/<app>/volume`.
    public let path: String
    public let segments: [Segment]
    public let access: Access
    public let scope: Scope
    /// What a message that sets or triggers it carries (those OSCQuery types; optional ones
    /// beyond the first few may be left out, as for `/app/register`).
    public let parameters: [Parameter]
    /// docs/OSC.md's "arguments" and "reply values" columns, as written there.
    public let arguments: String
    public let reply: String
    /// What OSCQuery's DESCRIPTION says.
    public let description: String
    /// The arguments of one message the path accepts (a change or a trigger; nil for read-only
    /// paths): what tests send to every path.
    public let example: [OSCArgument]?
    /// Whether OSC has the path (false: an OSCQuery node only, such as a meter LISTEN gets).
    public var overOSC: Bool { decoder != nil }
    /// Whether the OSCQuery namespace lists it (not: paths whose arguments OSCQuery's TYPE cannot
    /// say, and the router's services, which are not controls).
    public let inNamespace: Bool

    /// Turns the message's arguments into a command; the text is the name in the path, if any.
    /// It throws only `PolicyError`s (what `Arguments` and the checks throw; a closure's typed
    /// throws are not inferred).
    let decoder: (@Sendable (inout Arguments, String) throws -> ControlCommand)?
    /// What a query of the path replies (nil: it has none), read from the state the question
    /// carries; it throws only `PolicyError`s (an unknown app or route, a missing rule).
    public let answer: (@Sendable (Question) throws -> [OSCArgument])?

    init(_ path: String, _ access: Access, scope: Scope? = nil, inNamespace: Bool = true, _ parameters: [Parameter] = [],
         arguments: String, reply: String, _ description: String, example: [OSCArgument]?,
         decode: (@Sendable (inout Arguments, String) throws -> ControlCommand)?,
         answer: (@Sendable (Question) throws -> [OSCArgument])? = nil) {
        self.path = path
        segments = path.split(separator: "/").map { part in
            switch part {
            case "<app>": .app
            case "<route>": .route
            case "<scene>": .scene
            default: .word(String(part))
            }
        }
        self.access = access
        self.scope = scope ?? (segments.contains(.app) ? .appInPath : .shared)
        self.parameters = parameters
        self.arguments = arguments
        self.reply = reply
        self.description = description
        self.example = example
        self.inNamespace = inNamespace
        decoder = decode
        self.answer = answer
        show = nil
        perChannel = false
    }

    /// A read-only row's VALUE, from a reading (nil for the others: theirs is their query's
    /// answer).
    public private(set) var show: (@Sendable (Shown) -> [OSCArgument])?
    /// Whether the row's one parameter stands for each channel, as many times as it shows values
    /// (a meter: OSCQuery's TYPE, RANGE and UNIT repeat it).
    public private(set) var perChannel: Bool

    /// What a read-only row reads: the app or route its path names (nil: none of that name),
    /// and what the whole router shows.
    public struct Shown {
        public var app: ControlReading.App?
        public var route: ControlReading.Route?
        public var nowPlaying: String?
        public var outsideInterruptions: [String]
        public init(app: ControlReading.App?, route: ControlReading.Route?, nowPlaying: String?, outsideInterruptions: [String]) {
            self.app = app
            self.route = route
            self.nowPlaying = nowPlaying
            self.outsideInterruptions = outsideInterruptions
        }
    }

    /// A read-only node OSCQuery shows, with its VALUE, and OSC has no path for.
    init(readOnly path: String, _ parameters: [Parameter], _ description: String, perChannel: Bool = false,
         show: @escaping @Sendable (Shown) -> [OSCArgument]) {
        self.init(path, .readOnly, parameters, arguments: "", reply: "", description, example: nil, decode: nil)
        self.show = show
        self.perChannel = perChannel
    }

    /// The name the path's `<app>` or `<route>` stands for in `parts` (the path split at its
    /// slashes, the empty part before the first left out), "" if it has none; nil if the parts
    /// are not this path.
    func match(_ parts: [Substring]) -> String? {
        guard parts.count == segments.count else { return nil }
        var name = ""
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case let .word(word): guard part == word else { return nil }
            case .app: name = String(part)
            case .route, .scene: guard !part.isEmpty else { return nil }; name = String(part)
            }
        }
        return name
    }

    /// The path with `name` in place of `<app>` or `<route>`.
    public func path(for name: String) -> String {
        "/" + segments.map { segment in
            switch segment {
            case let .word(word): word
            case .app, .route, .scene: name
            }
        }.joined(separator: "/")
    }

    /// OSCQuery's TYPE: the parameters' tags in order ("" for none).
    public var typeTags: String { parameters.map(\.kind.rawValue).joined() }
}
