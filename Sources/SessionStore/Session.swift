import Policy

/// A rig as a session file describes it: routes, apps, and their settings.
/// Every field has a default, so `{}` is a valid session (docs/SESSIONS.md lists them).
public struct Session: Equatable, Sendable {
    /// JACK client name of the router.
    public var client: String = "duckrouter"
    /// Length of every gain ramp the engine makes when a level changes, in milliseconds.
    public var rampMilliseconds: Double = 20
    public var osc = OSCSettings()
    public var http = HTTPSettings()
    public var loudness = LoudnessSettings()
    public var routes: [Route] = []
    /// Where netjack2's master side listens; used when some route is remote over netjack2.
    public var netjack2 = NetJack2Settings()
    public var input = Input()
    /// Session-wide ducking and per-pair rules (the policy's own type).
    public var ducking = DuckingSettings()
    public var apps: [App] = []
    public var volumes = Volumes()
    /// Scenes, the apps and routes no recall touches, and the cue list (`scenes`, `cues`).
    public var show = Show()
    /// What loaded but may not be what was meant, with its field and line (the daemon logs them).
    public var warnings: [SessionError.Problem] = []
    /// Run-time state brought back from the state file (not fields of the session file).
    public var silentSwitch = false
    public var selectedRoute: String?

    /// The routes reached over netjack2 (the router then loads `netmanager`).
    public var netJack2Routes: [String] { routes.filter { $0.kind == .netjack2 }.map(\.name) }
    public var usesNetJack2: Bool { !netJack2Routes.isEmpty }
    /// The routes whose engine needs a sender the daemon runs beside the router.
    public var bridgedRoutes: [(route: Route, bridge: Remote.Bridge)] {
        routes.compactMap { route in route.sender.map { (route, $0) } }
    }

    public init() {}

    public struct OSCSettings: Equatable, Sendable {
        public var port: Int = 9951
        public var bind: String = "127.0.0.1"
        /// Who may send OSC at all: address ranges (default: this machine only).
        public var allow: [String] = ["127.0.0.1/32", "::1/128"]
        /// Control surfaces that may also control apps registered by others.
        public var admin: [String] = []
        /// TCP connections admitted at once, in all and from one address, and the seconds a TCP
        /// peer has to send a complete packet (docs/OSC.md, "Limits").
        public var tcpConnections = 64
        public var tcpConnectionsPerAddress = 32
        public var tcpPacketTimeout = 10.0
        public init() {}
    }

    /// The HTTP server (OSCQuery); it listens on `osc.bind` and admits only `osc.allow`.
    public struct HTTPSettings: Equatable, Sendable {
        /// TCP port; 0 turns the HTTP server off.
        public var port: Int = 9952
        /// Whether the file names the port (false: the default, which a second instance of the
        /// daemon would also try; the daemon then runs without HTTP instead of failing).
        public var isPortSet = false
        public init() {}
    }

    /// Loudness metering (EBU R 128) of every app and route, shown in `/state`.
    public struct LoudnessSettings: Equatable, Sendable {
        /// true: every app and route is metered. Off by default while its cost at scale is being
        /// cut (issue 19): nothing copied on the process thread, no metering thread.
        public var meter = false
        public init() {}
    }

    /// An output destination: the router's `<name>_out_<n>` ports feed these JACK ports.
    public struct Route: Equatable, Sendable {
        public var name: String
        /// Destination port per channel; the route has as many channels as ports.
        public var ports: [String]
        /// A private route (headphones): audio never falls back from it to a public one.
        public var isPrivate: Bool = false
        /// The fallback route when nothing newer is available.
        public var isBuiltIn: Bool = false
        /// Milliseconds this route hears the signal-activated apps late (everything else at once,
        /// ducks at once): the duck a voice causes lands before the voice is heard (talkover).
        public var lookahead: Double = 0
        /// A speaker on another machine, reached through a JACK network engine: the route's
        /// ports are the ones that engine gives the far end here (`Remote.ports`).
        public var remote: Remote?

        public init(name: String, ports: [String], isPrivate: Bool = false, isBuiltIn: Bool = false) {
            self.name = name
            self.ports = ports
            self.isPrivate = isPrivate
            self.isBuiltIn = isBuiltIn
        }

        public var channelCount: Int { ports.count }

        /// What a route is: a device of this JACK graph, or a far end over one of the network
        /// engines. The router asks a route what it needs (`unseenLatency`, `farEndWatched`,
        /// `sender`) rather than which kind it is, so a new kind answers for itself.
        public enum Kind: String, Sendable, CaseIterable {
            case graph
            case netjack2
            case zitaNjbridge = "zita-njbridge"
        }

        public var kind: Kind {
            switch remote {
            case nil: .graph
            case .netjack2: .netjack2
            case .zitaNjbridge: .zitaNjbridge
            }
        }

        /// Milliseconds beyond the route's ports that JACK cannot see, reported on them (nil:
        /// none; netjack2 reports its own latency).
        public var unseenLatency: Double? {
            switch remote {
            case nil, .netjack2: nil
            case let .zitaNjbridge(bridge): bridge.latency
            }
        }

        /// Whether the route is there only while its far end answers a watch (besides its ports).
        public var farEndWatched: Bool {
            switch remote {
            case nil, .netjack2: false
            case let .zitaNjbridge(bridge): bridge.watch != nil
            }
        }

        /// The sender the daemon runs and supervises for the route (nil: its engine needs none).
        public var sender: Remote.Bridge? {
            switch remote {
            case nil, .netjack2: nil
            case let .zitaNjbridge(bridge): bridge
            }
        }
    }

    /// Where a remote route's audio goes: the engine that carries it and the far end.
    public enum Remote: Equatable, Sendable {
        /// jackd2's netjack2: the far end (`jack_load netadapter` beside its device, or
        /// `jackd -d net`) joins this server's `netmanager` under the name `peer`, which becomes a
        /// client here with ports `<peer>:to_slave_<n>`, present while it is joined.
        case netjack2(peer: String)
        /// zita-njbridge: the router runs `zita-j2n` (a JACK client here, ports `<client>:in_<n>`)
        /// sending to `zita-n2j` on the far host, and watches the far end (`Bridge.watch`).
        case zitaNjbridge(Bridge)

        public enum Engine: String, Sendable, CaseIterable {
            case netjack2
            case zitaNjbridge = "zita-njbridge"
        }

        public var engine: Engine {
            switch self {
            case .netjack2: .netjack2
            case .zitaNjbridge: .zitaNjbridge
            }
        }

        /// The destination ports of a route of `channels` channels to this far end.
        public func ports(channels: Int) -> [String] {
            switch self {
            case let .netjack2(peer): (1...channels).map { "\(peer):to_slave_\($0)" }
            case let .zitaNjbridge(bridge): (1...channels).map { "\(bridge.client):in_\($0)" }
            }
        }

        /// A one-way zita-njbridge link: the sender the router runs, and how it knows the far end
        /// is there (the bridge itself says nothing: its sender's ports exist whether or not
        /// anyone receives).
        public struct Bridge: Equatable, Sendable {
            /// Where `zita-n2j` listens: the far host's address (or a multicast group) and port.
            public var host: String
            public var port: Int
            /// The sample format on the wire (zita-j2n's `--16bit`, `--24bit`, `--float`).
            public var format: SampleFormat = .int24
            /// The JACK client name of the sender the router runs (`--jname`): its ports are the
            /// route's. Default `j2n-<route>`.
            public var client: String
            /// The UDP port of the far end's duckrouter, asked `/ping` every `Bridge.pingInterval`:
            /// the route is there while it answers. nil: not watched (the route is there while its
            /// sender runs).
            public var watch: Int? = 9951
            /// Milliseconds the far end adds that JACK cannot see (the far zita-n2j's `--buff`,
            /// whose default is 10): reported to JACK on the route's ports and shown in `/state`.
            public var latency: Double = 10

            public init(host: String, port: Int, client: String) {
                self.host = host
                self.port = port
                self.client = client
            }

            public enum SampleFormat: String, Sendable, CaseIterable {
                case int16 = "16bit", int24 = "24bit", float
            }

            /// How often the far end is asked, and how long it may go without answering before
            /// the route is taken as gone (docs/NETWORK.md gives the detection time from these).
            public static let pingInterval = 0.25
            public static let silenceLimit = 1.0
        }
    }

    /// netjack2's master side in this router's server (`netmanager`, loaded by the router when a
    /// route is remote over netjack2): where it waits for far ends to join.
    public struct NetJack2Settings: Equatable, Sendable {
        /// The address it listens on: a multicast group (netjack2's own default), or this host's
        /// address for far ends that name it (unicast).
        public var address: String = "225.3.19.154"
        public var port: Int = 19000
        public init() {}
    }

    public struct Input: Equatable, Sendable {
        public var ports: [String] = []
        public init() {}
    }

    /// A source of audio: the router's `<name>_in_<n>` ports.
    public struct App: Equatable, Sendable {
        public var name: String
        public var category: Category = .soloAmbient
        public var options: [CategoryOption] = []
        public var mode: Mode = .default
        public var channelCount: Int = 2
        /// Patterns over full JACK port names whose ports feed this app's inputs.
        public var connect: [PortPattern] = []
        /// The `connect` rule is the only way in: connections from other ports (made by hand or by
        /// another tool) are removed. Without it, hand-made connections are left alone.
        public var exclusive: Bool = false
        public var remote: [RemoteCommand] = []
        public var resume: ResumePolicy = .app
        /// Activated by the router at start (for plain JACK sources nobody else activates).
        public var startsActive: Bool = false
        /// multiRoute apps: which app channel feeds which route channel; nil: all to all.
        public var channelMap: [ChannelLink]?
        /// What activates the app: requests (`osc`), or its own sound (`signal`).
        public var activation: Activation = .osc
        /// How its sound is judged: for `signal` activation, and for `unduckAfter`.
        public var signal = SignalDetection()
        /// Milliseconds of silence after which an active app with duckOthers releases its duck.
        public var unduckAfter: Double?
        /// Registered over OSC in an earlier run and brought back from the state file: it belongs
        /// to nobody until a program registers it again.
        public var registeredAtRunTime = false
        /// What a person set on it beyond its volume (mute), brought back from the state file
        /// (session files do not set these).
        public var settings = AppSettings()

        public init(name: String, category: Category = .soloAmbient, channelCount: Int = 2,
                    connect: [PortPattern] = []) {
            self.name = name
            self.category = category
            self.channelCount = channelCount
            self.connect = connect
        }

        /// The app as the policy knows it.
        public var configuration: AppConfiguration {
            AppConfiguration(name: name, category: category, options: Set(options), mode: mode,
                             remoteCommands: Set(remote), resume: resume, activation: activation)
        }
    }

    /// Volume slider positions 0...1 (cubic taper), by route and by app name.
    public struct Volumes: Equatable, Sendable {
        public var routes: [String: Double] = [:]
        public var apps: [String: Double] = [:]
        public init() {}
    }

    /// The most channels one app or route may have.
    public static let maximumChannels = Limits.appChannels.upperBound
}
