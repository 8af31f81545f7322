import ArgumentParser
import Foundation
import OSCTransport

extension DuckCtl {
    /// `duckctl status`: the rig at a glance, in the manner of `wpctl status`, from one `/state`.
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the rig at a glance: routes, apps, their state and why, volumes and peaks.",
            discussion: """
                Routes: * marks the current one; each with whether its device is there, its system \
                volume and its output peak. Apps: category, state (active, ducked, interrupted, \
                listening, silenced, inactive), volume, input peak, and why it is not heard as it \
                would be alone. Peaks are the highest sample since the last meter reading, in dBFS. \
                Colour only on a terminal, never with NO_COLOR set; --json prints the same picture \
                as JSON for scripts.
                """)
        @OptionGroup var connection: Connection
        @Flag(help: "Print the picture as JSON (one object: routes, apps, system).")
        var json = false
        @Option(help: "auto (on a terminal, unless NO_COLOR is set), always or never.")
        var color: ColorChoice = .auto

        func run() throws {
            try duckctl.run {
                let values = try connection.call(OSCMessage("/state"))
                guard case let .string(text)? = values.first else {
                    throw Failure(message: "/state: the reply carries no JSON", code: 2)
                }
                let picture: StatusPicture
                do {
                    picture = StatusPicture(try JSONDecoder().decode(StateReply.self, from: Data(text.utf8)))
                } catch {
                    throw Failure(message: "/state: cannot read the router's answer: \(error)", code: 2)
                }
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                    print(String(decoding: try encoder.encode(picture), as: UTF8.self))
                } else {
                    print(picture.text(colored: color.colors(output: STDOUT_FILENO)), terminator: "")
                }
            }
        }
    }
}

enum ColorChoice: String, ExpressibleByArgument, CaseIterable {
    case auto, always, never

    /// https://no-color.org: NO_COLOR set to anything but "" turns colour off; so does a pipe, a
    /// file or a dumb terminal.
    func colors(output: Int32) -> Bool {
        switch self {
        case .always: return true
        case .never: return false
        case .auto:
            let environment = ProcessInfo.processInfo.environment
            if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
            if environment["TERM"] == "dumb" { return false }
            return isatty(output) == 1
        }
    }
}

/// The part of `/state` the status shows (docs/OSC.md, "/state"); unknown fields are ignored, so
/// a newer router's answer still reads.
struct StateReply: Decodable {
    struct Settings: Decodable {
        struct Route: Decodable {
            var name: String
            var available: Bool
            var volume: Double
            var gainDb: Double
        }
        struct App: Decodable {
            var name: String
            var category: String
            var state: String
            var why: String?
            var volume: Double
            var gainDb: Double
        }
        struct Ducking: Decodable {
            var level: Double
            var attack: Double
            var release: Double
            var target: Double?
        }
        var client: String
        var server: String
        var sampleRate: Int
        var period: Int
        var silent: Bool
        var route: String?
        var routes: [Route]
        var apps: [App]
        var ducking: Ducking
        var interruptions: [String]
        var nowPlaying: String?
    }
    struct Engine: Decodable {
        struct Peaks: Decodable {
            var apps: [String: [Double]]
            var routes: [String: [Double]]
        }
        var jack: String
        var xruns: Int
        var peaksDbfs: Peaks
    }
    var settings: Settings
    var engine: Engine
}

/// What `duckctl status` shows, and prints as JSON with `--json`.
struct StatusPicture: Encodable {
    struct Route: Encodable {
        var name: String
        var current: Bool
        var available: Bool
        /// The slider position 0...1, and the gain it is heard at now, dB (-144: not heard).
        var volume: Double
        var gainDb: Double
        /// The highest of its channels' peaks, dBFS (-144: silence).
        var peakDbfs: Double
    }
    struct App: Encodable {
        var name: String
        var category: String
        var state: String
        var why: String
        var volume: Double
        var gainDb: Double
        var peakDbfs: Double
    }
    struct System: Encodable {
        var silent: Bool
        var nowPlaying: String?
        var interruptions: [String]
        var duckingLevelDb: Double
        var duckingAttackMs: Double
        var duckingReleaseMs: Double
        var duckingTargetLu: Double?
    }
    var client: String
    var server: String
    /// `connected`, `stalled` or `disconnected`.
    var jack: String
    var sampleRate: Int
    var period: Int
    var xruns: Int
    var routes: [Route]
    var apps: [App]
    var system: System

    init(_ reply: StateReply) {
        let settings = reply.settings
        let peaks = reply.engine.peaksDbfs
        func peak(_ channels: [Double]?) -> Double { channels?.max() ?? -144 }
        client = settings.client
        server = settings.server
        jack = reply.engine.jack
        sampleRate = settings.sampleRate
        period = settings.period
        xruns = reply.engine.xruns
        routes = settings.routes.map {
            Route(name: $0.name, current: $0.name == settings.route, available: $0.available, volume: $0.volume,
                  gainDb: $0.gainDb, peakDbfs: peak(peaks.routes[$0.name]))
        }
        apps = settings.apps.map {
            App(name: $0.name, category: $0.category, state: $0.state, why: $0.why ?? "", volume: $0.volume,
                gainDb: $0.gainDb, peakDbfs: peak(peaks.apps[$0.name]))
        }
        system = System(silent: settings.silent, nowPlaying: settings.nowPlaying, interruptions: settings.interruptions,
                        duckingLevelDb: settings.ducking.level, duckingAttackMs: settings.ducking.attack,
                        duckingReleaseMs: settings.ducking.release, duckingTargetLu: settings.ducking.target)
    }
}
