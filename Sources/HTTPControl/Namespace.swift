import OSCTransport
import Policy

/// Builds the OSCQuery namespace of the router's OSC address space (docs/OSC.md, docs/HTTP.md)
/// from one reading of the control plane.
///
/// Pure: the apps and routes, and a function that answers an OSC query path with its reply
/// values (in the daemon, `ControlServer.Reader.value`, the same decoder and answers as OSC).
/// Values of OSC paths come only from that function, so a VALUE is what the OSC query replies,
/// never a second opinion. Two read-only nodes have no OSC path of their own and come from the
/// reading: an app's `state` and a route's `volume`.
public struct Namespace {
    public struct App: Sendable, Equatable {
        public var name: String
        /// `inactive`, `listening`, `active`, `ducked`, `interrupted` or `silenced`.
        public var state: String
        /// What holds it back ("ducked by nav"), or "".
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

    public var apps: [App]
    public var routes: [Route]
    /// The app remote commands go to (Now Playing), if any.
    public var nowPlaying: String?
    /// The outside interruptions under way, by source, oldest first.
    public var outsideInterruptions: [String]
    /// The reply values of an OSC query path (nil: it has none now, such as `/system/volume`
    /// while no route is available).
    public var answer: (String) -> [OSCArgument]?

    public init(apps: [App], routes: [Route], nowPlaying: String? = nil, outsideInterruptions: [String] = [],
                answer: @escaping (String) -> [OSCArgument]?) {
        self.apps = apps
        self.routes = routes
        self.nowPlaying = nowPlaying
        self.outsideInterruptions = outsideInterruptions
        self.answer = answer
    }

    /// The states an app may be in, as `/duckrouter/app` and `/state` name them.
    static let appStates = ["inactive", "listening", "active", "ducked", "interrupted", "silenced"]

    /// The whole namespace, rooted at `/`.
    public func build() -> OSCQueryNode {
        .container("/", "duckrouter: audio sessions, routes and ducking (docs/OSC.md)", [
            appsNode(), systemNode(), routeNode(), remoteNode(), duckNode(),
        ])
    }

    // MARK: Parts

    private func appsNode() -> OSCQueryNode {
        var children = [
            method("/app/register", "create or reconfigure an app: s app, s category, [s options], [s mode], [i channels]; the sender owns it",
                   type: "ss", access: .writeOnly, range: [.unbounded, Self.categories]),
        ]
        children += apps.map(appNode)
        return .container("/app", "app sessions; each app is owned by the address that registered it", children)
    }

    private func appNode(_ app: App) -> OSCQueryNode {
        let base = "/app/\(app.name)"
        return .container(base, "the app '\(app.name)'", [
            method("\(base)/volume", "relative volume: slider position, cubic taper (0.5 is about -18 dB)",
                   type: "f", access: .readWrite, valueOf: "\(base)/volume", range: [Range(minimum: 0, maximum: 1)]),
            method("\(base)/gain", "relative volume in dB; -144 or less is silence",
                   type: "f", access: .readWrite, valueOf: "\(base)/gain", range: [Range(minimum: -144, maximum: 24)], unit: ["gain.db"]),
            method("\(base)/category", "category, options (comma-separated) and mode",
                   type: "sss", access: .readWrite, valueOf: "\(base)/category",
                   range: [Self.categories, .unbounded, Range(values: Mode.allCases.map(\.rawValue))]),
            OSCQueryNode(fullPath: "\(base)/state", description: "what the app is doing now (read only; /duckrouter/app notifies changes)",
                         type: "s", access: .readOnly, value: [.string(app.state)], range: [Range(values: Self.appStates)]),
            Self.meter("\(base)/meter", "the app's input peak per channel, dBFS; LISTEN gets it at 20 Hz (read only)", app.peaks),
            OSCQueryNode(fullPath: "\(base)/why", description: "what holds the app back now: \"ducked by nav\", \"interrupted by phone (outside)\", \"silenced by the silent switch\"; \"\" when nothing does (read only)",
                         type: "s", access: .readOnly, value: [.string(app.why)]),
            method("\(base)/activate", "setActive(true): may interrupt or duck others, or be refused (-6)", access: .none),
            method("\(base)/deactivate", "setActive(false); an optional i notifyOthers=1 lets interrupted apps resume", access: .none),
            method("\(base)/activation", "what activates the app (osc or signal) and the signal detection: threshold dBFS, attack ms, hold ms, hysteresis dB",
                   type: "sffff", access: .readWrite, valueOf: "\(base)/activation",
                   range: [Range(values: Activation.allCases.map(\.rawValue)), Range(minimum: -120, maximum: 0), Range(minimum: 0, maximum: 10000),
                           Range(minimum: 0, maximum: 60000), Range(minimum: 0, maximum: 40)],
                   unit: [nil, "gain.db", "time.millisecond", "time.millisecond", "gain.db"]),
            method("\(base)/remote", "remote commands the app handles, comma-separated",
                   type: "s", access: .readWrite, valueOf: "\(base)/remote"),
            method("\(base)/notify", "where the app's notifications go: osc.udp://host:port/ or osc.tcp://host:port/ (\"\" for none)",
                   type: "s", access: .readWrite, valueOf: "\(base)/notify"),
            method("\(base)/unregister", "removes the app and its ports", access: .none),
        ])
    }

    private func systemNode() -> OSCQueryNode {
        .container("/system", "the person's controls: system volume, silent switch, outside interruptions", [
            method("/system/volume", "system volume of the current route: slider position, cubic taper",
                   type: "f", access: .readWrite, valueOf: "/system/volume", range: [Range(minimum: 0, maximum: 1)]),
            method("/system/gain", "system volume of the current route in dB; -144 or less is silence",
                   type: "f", access: .readWrite, valueOf: "/system/gain", range: [Range(minimum: -144, maximum: 0)], unit: ["gain.db"]),
            method("/system/silent", "the silent switch: silences ambient and soloAmbient apps",
                   type: "i", access: .readWrite, valueOf: "/system/silent", range: [Range(minimum: 0, maximum: 1)]),
            .container("/system/interruption", "outside interruptions (a phone call, an alarm)", [
                OSCQueryNode(fullPath: "/system/interruption/sources", description: "the outside interruptions under way, comma-separated (read only)",
                             type: "s", access: .readOnly, value: [.string(outsideInterruptions.joined(separator: ","))]),
                method("/system/interruption/begin", "an outside interruption begins: s source",
                       type: "s", access: .writeOnly),
                method("/system/interruption/end", "it ends: s source, i shouldResume",
                       type: "si", access: .writeOnly, range: [.unbounded, Range(minimum: 0, maximum: 1)]),
            ]),
        ])
    }

    private func routeNode() -> OSCQueryNode {
        var children = [
            method("/route/select", "the current route; setting it is a person's choice (reason override)",
                   type: "s", access: .readWrite, valueOf: "/route/select", range: [Range(values: routes.map(\.name))]),
        ]
        children += routes.map { route in
            let base = "/route/\(route.name)"
            return .container(base, "the route '\(route.name)'", [
                method("\(base)/available", "whether the route's device is there (settable for devices JACK cannot show)",
                       type: "i", access: .readWrite, valueOf: "\(base)/available", range: [Range(minimum: 0, maximum: 1)]),
                OSCQueryNode(fullPath: "\(base)/volume", description: "the route's system volume, kept per route (read only; /system/volume sets the current route's)",
                             type: "f", access: .readOnly, value: [.float(Float(route.volume))], range: [Range(minimum: 0, maximum: 1)]),
                Self.meter("\(base)/meter", "the route's output peak per channel, dBFS; LISTEN gets it at 20 Hz (read only)", route.peaks),
            ])
        }
        return .container("/route", "output routes", children)
    }

    private func remoteNode() -> OSCQueryNode {
        .container("/remote", "remote commands, forwarded to the app that owns remote control (Now Playing)",
                   [OSCQueryNode(fullPath: "/remote/nowPlaying", description: "the app remote commands go to now; \"\" when none (read only)",
                                 type: "s", access: .readOnly, value: [.string(nowPlaying ?? "")])]
                   + RemoteCommand.allCases.map { command in
                       let path = "/remote/\(command.rawValue)"
                       switch command {
                       case .seek:
                           return method(path, "seek to a position: f seconds", type: "f", access: .writeOnly, range: [Range(minimum: 0)])
                       case .changePlaybackRate:
                           return method(path, "change the playback rate: f rate", type: "f", access: .writeOnly, range: [Range(minimum: 0.0625, maximum: 16)])
                       case .skipForward, .skipBackward:
                           return method(path, "\(command.rawValue): an optional f interval in seconds", type: "f", access: .writeOnly,
                                         range: [Range(minimum: 0.001, maximum: 86_400)])
                       default:
                           return method(path, command.rawValue, access: .none)
                       }
                   })
    }

    private func duckNode() -> OSCQueryNode {
        .container("/duck", "session-wide ducking", [
            method("/duck/level", "how far ducking lowers the others, dB", type: "f", access: .readWrite, valueOf: "/duck/level",
                   range: [Range(minimum: -144, maximum: 0)], unit: ["gain.db"]),
            method("/duck/attack", "how long the duck takes to go down, ms", type: "f", access: .readWrite, valueOf: "/duck/attack",
                   range: [Range(minimum: 0, maximum: 60000)], unit: ["time.millisecond"]),
            method("/duck/release", "how long it takes to come back, ms", type: "f", access: .readWrite, valueOf: "/duck/release",
                   range: [Range(minimum: 0, maximum: 60000)], unit: ["time.millisecond"]),
            method("/duck/floor", "the deepest a loudness-targeted duck goes, dB", type: "f", access: .readWrite, valueOf: "/duck/floor",
                   range: [Range(minimum: -144, maximum: 0)], unit: ["gain.db"]),
        ])
    }

    // MARK: Helpers

    /// Whether `path` is a meter (LISTENed at 20 Hz through the OSC server's meters, not pushed
    /// on change).
    static func isMeter(_ path: String) -> Bool { path.hasSuffix("/meter") && (path.hasPrefix("/app/") || path.hasPrefix("/route/")) }

    private static func meter(_ path: String, _ description: String, _ peaks: [Double]) -> OSCQueryNode {
        OSCQueryNode(fullPath: path, description: description, type: String(repeating: "f", count: peaks.count), access: .readOnly,
                     value: peaks.map { .float(Float(max($0, -144))) },
                     range: peaks.map { _ in Range(minimum: -144, maximum: 0) }, unit: peaks.map { _ in "gain.db" })
    }

    private typealias Range = OSCQueryNode.Range

    private static let categories = OSCQueryNode.Range(values: Category.allCases.map(\.rawValue))

    /// A method node; `valueOf` names the OSC query path whose reply is its VALUE, cut to its TYPE
    /// (`/system/volume` replies f volume, s route: the VALUE is the volume).
    private func method(_ path: String, _ description: String, type: String? = nil, access: OSCQueryNode.Access,
                        valueOf query: String? = nil, range: [OSCQueryNode.Range]? = nil, unit: [String?]? = nil) -> OSCQueryNode {
        var value: [OSCQueryNode.Value]?
        if let query, let type, let reply = answer(query) {
            value = Self.values(reply, matching: type)
        }
        return OSCQueryNode(fullPath: path, description: description, type: type, access: access,
                            value: value, range: range, unit: unit)
    }

    /// The first `type.count` reply arguments as VALUE, or nil if they do not have those types.
    static func values(_ reply: [OSCArgument], matching type: String) -> [OSCQueryNode.Value]? {
        guard reply.count >= type.count else { return nil }
        var values: [OSCQueryNode.Value] = []
        for (tag, argument) in zip(type, reply) {
            switch (tag, argument) {
            case let ("f", .float(f)): values.append(.float(f))
            case let ("i", .int32(i)): values.append(.int(i))
            case let ("s", .string(s)): values.append(.string(s))
            default: return nil
            }
        }
        return values
    }
}
