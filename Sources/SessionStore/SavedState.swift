import Foundation
import Policy

/// What changed at run time, kept in a state file beside the session file, so that a restart (or
/// a crash) finds the rig as it was left. The session file itself is never rewritten: it is the
/// person's description of the rig; the state file is the router's memory of what happened since.
///
/// Volumes are slider positions (0…1, the same scale as the session's `volumes`).
public struct SavedState: Codable, Equatable, Sendable {
    public struct App: Codable, Equatable, Sendable {
        public var name: String
        public var category: String
        public var options: [String]
        public var mode: String
        public var remote: [String]
        public var resume: String
        public var channels: Int
        /// multiRoute apps: `[[app channel, "route:channel"], …]` as in session files.
        public var channelmap: [ChannelMapLine]?
        /// `signal` when the app is activated by its sound (absent: `osc`), and how it is judged
        /// (absent: the defaults). Files written before these existed load as `osc` and defaults.
        public var activation: String?
        public var signal: Signal?
        /// What a person set on it beyond its volume (`mute`); absent in files written before
        /// these existed, and when every setting has its default.
        public var settings: AppSettings?

        public struct Signal: Codable, Equatable, Sendable {
            public var threshold: Double
            public var attack: Double
            public var hold: Double
            public var hysteresis: Double
            public init(_ detection: SignalDetection) {
                threshold = detection.threshold
                attack = detection.attack
                hold = detection.hold
                hysteresis = detection.hysteresis
            }
            public var detection: SignalDetection {
                SignalDetection(threshold: threshold, attack: attack, hold: hold, hysteresis: hysteresis)
            }
        }

        public init(name: String, category: String, options: [String], mode: String, remote: [String],
                    resume: String, channels: Int, channelmap: [ChannelMapLine]?) {
            self.name = name
            self.category = category
            self.options = options
            self.mode = mode
            self.remote = remote
            self.resume = resume
            self.channels = channels
            self.channelmap = channelmap
        }
    }

    /// `[1, "headphones:1"]`.
    public struct ChannelMapLine: Codable, Equatable, Sendable {
        public var channel: Int
        public var target: String

        public init(channel: Int, target: String) {
            self.channel = channel
            self.target = target
        }

        public init(from decoder: Decoder) throws {
            var container = try decoder.unkeyedContainer()
            channel = try container.decode(Int.self)
            target = try container.decode(String.self)
        }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(channel)
            try container.encode(target)
        }
    }

    public struct Ducking: Codable, Equatable, Sendable {
        public var level: Double
        public var attack: Double
        public var release: Double
        /// The session-wide loudness target as last set: LU, or `"off"` (ducks by level). Absent
        /// in files written before targets existed: the session file's stands.
        public var target: Target?
        /// Absent in older files, as `target`.
        public var floor: Double?
        /// The per-pair rules as last set (`/duck/rule`); absent in older files: the session
        /// file's stand.
        public var rules: [Rule]?

        /// A per-pair rule, with the session file's field names.
        public struct Rule: Codable, Equatable, Sendable {
            public var ducker: String
            public var ducked: String
            public var route: String?
            public var level: Double?
            public var target: Double?
            public var floor: Double?
            public var attack: Double?
            public var release: Double?

            public init(_ rule: DuckingRule) {
                ducker = rule.ducker
                ducked = rule.ducked
                route = rule.route
                level = rule.level
                target = rule.target
                floor = rule.floor
                attack = rule.attack
                release = rule.release
            }

            public var rule: DuckingRule {
                DuckingRule(ducker: ducker, ducked: ducked, route: route, level: level, target: target, floor: floor,
                            attack: attack, release: release)
            }
        }

        public enum Target: Codable, Equatable, Sendable {
            case off
            case lu(Double)

            public init(_ lu: Double?) { self = lu.map(Target.lu) ?? .off }
            public var lu: Double? { if case let .lu(value) = self { value } else { nil } }

            public init(from decoder: Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let value = try? container.decode(Double.self) {
                    self = .lu(value)
                } else if try container.decode(String.self) == "off" {
                    self = .off
                } else {
                    throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected LU or \"off\"")
                }
            }

            public func encode(to encoder: Encoder) throws {
                var container = encoder.singleValueContainer()
                switch self {
                case .off: try container.encode("off")
                case let .lu(value): try container.encode(value)
                }
            }
        }

        public init(level: Double, attack: Double, release: Double, target: Target? = nil, floor: Double? = nil,
                    rules: [Rule]? = nil) {
            self.level = level
            self.attack = attack
            self.release = release
            self.target = target
            self.floor = floor
            self.rules = rules
        }
    }

    /// The format of this file; a newer one is refused rather than misread.
    public var version = 1
    public var silent = false
    public var selectedRoute: String?
    public var ducking: Ducking
    public var routeVolumes: [String: Double] = [:]
    public var appVolumes: [String: Double] = [:]
    /// Every app the router had, with its configuration: session apps as they were changed, and
    /// apps registered over OSC.
    public var apps: [App] = []
    /// Scenes stored at run time and where the cue list stands; absent in files written before
    /// scenes existed, and while there is nothing to keep.
    public var show: Show?

    public init(silent: Bool, selectedRoute: String?, ducking: Ducking, routeVolumes: [String: Double],
                appVolumes: [String: Double], apps: [App]) {
        self.silent = silent
        self.selectedRoute = selectedRoute
        self.ducking = ducking
        self.routeVolumes = routeVolumes
        self.appVolumes = appVolumes
        self.apps = apps
    }
}

extension Session {
    /// The session with a saved state laid over it. What the state names that the session no longer
    /// has (a route taken out of the file since) is left out, and said in `notes`.
    public func applying(_ saved: SavedState) -> (session: Session, notes: [String]) {
        var session = self
        var notes: [String] = []
        let routeNames = Set(routes.map(\.name))
        session.silentSwitch = saved.silent
        if let route = saved.selectedRoute {
            if routeNames.contains(route) { session.selectedRoute = route } else { notes.append("selected route '\(route)' is no longer in the session") }
        }
        session.ducking.level = saved.ducking.level
        session.ducking.attack = saved.ducking.attack
        session.ducking.release = saved.ducking.release
        if let target = saved.ducking.target {
            if let lu = target.lu, !(lu.isFinite && DuckingSettings.targetRange.contains(lu)) {
                notes.append("ducking target \(lu) LU is out of range: the session file's stands")
            } else {
                session.ducking.target = target.lu
            }
        }
        if let rules = saved.ducking.rules {
            let routeList = routes.map(\.name)
            session.ducking.rules = rules.compactMap { saved in
                let rule = saved.rule
                if let problem = rule.problem(routes: routeList) {
                    notes.append("\(problem.message): left out")
                    return nil
                }
                return rule
            }
        }
        if let floor = saved.ducking.floor {
            if floor.isFinite && DuckingSettings.floorRange.contains(floor) {
                session.ducking.floor = floor
            } else {
                notes.append("ducking floor \(floor) dB is out of range: the session file's stands")
            }
        }
        for (route, volume) in saved.routeVolumes.sorted(by: { $0.key < $1.key }) {
            guard routeNames.contains(route) else { notes.append("volume of route '\(route)', which is no longer in the session"); continue }
            session.volumes.routes[route] = min(max(volume, 0), 1)
        }
        for app in saved.apps {
            guard let category = Category(rawValue: app.category), let mode = Mode(rawValue: app.mode),
                  (1...Session.maximumChannels).contains(app.channels) else {
                notes.append("app '\(app.name)': unreadable configuration"); continue
            }
            let options = app.options.compactMap(CategoryOption.init(rawValue:))
            let remote = app.remote.compactMap(RemoteCommand.init(rawValue:))
            let resume = ResumePolicy(rawValue: app.resume) ?? .app
            let activation = app.activation.flatMap(Activation.init(rawValue:)) ?? .osc
            // What the policy would refuse (a hand-edited file) must not stop the router starting.
            do throws(PolicyError) {
                try AppConfiguration(name: app.name, category: category, options: Set(options), mode: mode).validate()
            } catch {
                notes.append("app '\(app.name)': \(error.message)"); continue
            }
            var links: [ChannelLink]?
            if let lines = app.channelmap {
                links = []
                for line in lines {
                    let parts = line.target.split(separator: ":")
                    guard parts.count == 2, let route = routes.first(where: { $0.name == parts[0] }), let k = Int(parts[1]),
                          (1...route.channelCount).contains(k), (1...app.channels).contains(line.channel) else {
                        notes.append("app '\(app.name)': channel map line \(line.channel) → \(line.target) no longer fits the session")
                        continue
                    }
                    let link = ChannelLink(appChannel: line.channel, route: route.name, routeChannel: k)
                    // Once is the link; twice would play it 6 dB louder (the policy refuses that).
                    guard links?.contains(link) == false else {
                        notes.append("app '\(app.name)': channel map line \(line.channel) → \(line.target) a second time")
                        continue
                    }
                    links?.append(link)
                }
            }
            let signal = app.signal?.detection ?? SignalDetection()
            if let index = session.apps.firstIndex(where: { $0.name == app.name }) {
                // A session app keeps its ports (channels) and patchbay rules; what was changed at
                // run time (category, options, mode, remote commands, map, activation, a person's
                // settings) comes back.
                session.apps[index].settings = app.settings ?? AppSettings()
                session.apps[index].activation = activation
                session.apps[index].signal = signal
                session.apps[index].category = category
                session.apps[index].options = options
                session.apps[index].mode = mode
                session.apps[index].remote = remote
                session.apps[index].channelMap = category == .multiRoute ? links : nil
            } else {
                var restored = App(name: app.name, category: category, channelCount: app.channels)
                restored.options = options
                restored.mode = mode
                restored.remote = remote
                restored.resume = resume
                restored.activation = activation
                restored.signal = signal
                restored.channelMap = category == .multiRoute ? links : nil
                restored.registeredAtRunTime = true
                restored.settings = app.settings ?? AppSettings()
                session.apps.append(restored)
            }
        }
        if let show = saved.show { session.show = session.applyingShow(show, notes: &notes) }
        for (app, volume) in saved.appVolumes.sorted(by: { $0.key < $1.key }) {
            guard session.apps.contains(where: { $0.name == app }) else { notes.append("volume of app '\(app)', which no longer exists"); continue }
            session.volumes.apps[app] = min(max(volume, 0), 1)
        }
        return (session, notes)
    }
}

/// The state file: read at start, written atomically (`AtomicFile`), so that a crash or `kill -9`
/// at any moment leaves the previous file or the new one, never a torn one.
public struct StateFile: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// Beside the session file: `Sessions/car.json` → `Sessions/car.state.json`.
    public static func path(besideSession session: String) -> String {
        session.hasSuffix(".json") ? String(session.dropLast(5)) + ".state.json" : session + ".state.json"
    }

    public enum LoadError: Error, CustomStringConvertible {
        case unreadable(String)
        public var description: String {
            switch self {
            case let .unreadable(text): text
            }
        }
    }

    /// The saved state; nil when there is none yet.
    public func load() throws(LoadError) -> SavedState? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .unreadable("\(path): cannot read: \(error.localizedDescription)")
        }
        let state: SavedState
        do {
            state = try JSONDecoder().decode(SavedState.self, from: data)
        } catch {
            throw .unreadable("\(path): not a state file this version can read (\(error))")
        }
        guard state.version == 1 else { throw .unreadable("\(path): state format version \(state.version); this duckrouter reads version 1") }
        return state
    }

    /// Moves an unreadable state file aside (`….broken`), so it is kept for a person to look at
    /// and the next save does not replace it silently. Returns the new path.
    @discardableResult
    public func moveAside() -> String? {
        let target = path + ".broken"
        try? FileManager.default.removeItem(atPath: target)
        return (try? FileManager.default.moveItem(atPath: path, toPath: target)) != nil ? target : nil
    }

    /// Writes `state` atomically. Throws a readable message.
    public func save(_ state: SavedState) throws(LoadError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(state) + Data("\n".utf8)
        } catch {
            throw .unreadable("cannot encode the state: \(error)")
        }
        do {
            _ = try AtomicFile.write(data, to: path, replacing: true)
        } catch {
            throw .unreadable(error.description)
        }
    }
}
