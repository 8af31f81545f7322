import Foundation

/// The chaos run's session: three routes (a speaker, an HDMI output, private headphones), each a
/// sink client of its own that the run unplugs and plugs back; apps that play a tone each, of a
/// frequency of their own, from one source client; and the file the router reads, which the run
/// edits and reloads.
public struct ChaosSession: Sendable {
    public static let source = "chaossrc"
    /// Each tone's amplitude: eight together stay under 0.8 at their peaks. Every frequency is a
    /// multiple of 10 Hz (ToneMeter's window holds whole cycles of each).
    public static let amplitude: Float = 0.1
    public static let fallback = "speaker"

    public struct RouteDevice: Sendable {
        public var route: String
        public var client: String
        public var isPrivate: Bool
        public var ports: [String] { ["\(client):in_1", "\(client):in_2"] }
    }

    public static let devices = [
        RouteDevice(route: "speaker", client: "chaosspk", isPrivate: false),
        RouteDevice(route: "hdmi", client: "chaoshdmi", isPrivate: false),
        RouteDevice(route: "headphones", client: "chaoshp", isPrivate: true),
    ]

    /// The apps of the file (`guest` only while an edit has put it there) and those the run
    /// registers over OSC (`x1`…`x3`), all stereo, each with its tone on both channels.
    public static func app(_ name: String, _ category: ChaosModel.Category, _ options: [String], frequency: Int,
                           fromSession: Bool, active: Bool = false, autoResume: Bool = false) -> ChaosModel.App {
        ChaosModel.App(name: name, category: category, options: options, fromSession: fromSession, startsActive: active,
                       autoResume: autoResume, frequency: frequency, sourcePorts: ["\(source):\(name)_1", "\(source):\(name)_2"])
    }

    public static let sessionApps = [
        app("music", .playback, ["mixWithOthers"], frequency: 110, fromSession: true, active: true, autoResume: true),
        app("ambience", .ambient, [], frequency: 150, fromSession: true, active: true, autoResume: true),
        app("nav", .playback, ["duckOthers", "mixWithOthers"], frequency: 190, fromSession: true),
        app("radio", .playback, [], frequency: 230, fromSession: true, autoResume: true),
    ]
    public static let guest = app("guest", .playback, ["mixWithOthers"], frequency: 270, fromSession: true)
    public static let extras = [
        app("x1", .playback, ["mixWithOthers"], frequency: 310, fromSession: false),
        app("x2", .playback, [], frequency: 350, fromSession: false),
        app("x3", .ambient, [], frequency: 390, fromSession: false),
    ]
    public static var everyApp: [ChaosModel.App] { sessionApps + [guest] + extras }

    /// The largest step from one sample to the next the tones can make all together at full
    /// gain (each at most 2π f A / rate), with room for ramps: what the sinks report beyond.
    public static func stepLimit(sampleRate: Int) -> Float {
        let slope = everyApp.reduce(Float(0)) { $0 + 2 * .pi * Float($1.frequency) * amplitude / Float(sampleRate) }
        return slope * 1.5 + 0.005
    }

    public static func model() -> ChaosModel {
        ChaosModel(apps: sessionApps, routes: devices.map { ChaosModel.Route(name: $0.route, isPrivate: $0.isPrivate) },
                   fallback: fallback)
    }

    /// The session file, with or without `guest`; `oscPort` and `httpPort` fixed for the run.
    public static func file(withGuest: Bool, oscPort: UInt16, httpPort: UInt16) -> String {
        let routes = devices.map { device in
            "    {\"name\": \"\(device.route)\", \"ports\": [\"\(device.ports[0])\", \"\(device.ports[1])\"]\(device.isPrivate ? ", \"private\": true" : "")}"
        }
        let apps = (sessionApps + (withGuest ? [guest] : [])).map { app in
            var fields = ["\"name\": \"\(app.name)\"", "\"category\": \"\(app.category.rawValue)\""]
            if !app.options.isEmpty { fields.append("\"options\": [\(app.options.map { "\"\($0)\"" }.joined(separator: ", "))]") }
            if app.name == "radio" { fields.append("\"remote\": [\"play\", \"pause\"]") }
            fields.append("\"connect\": [\"\(source):\(app.name)_[12]\"]")
            if app.startsActive { fields.append("\"active\": true") }
            if app.autoResume { fields.append("\"resume\": \"auto\"") }
            return "    {" + fields.joined(separator: ", ") + "}"
        }
        return """
            {
              "routes": [
            \(routes.joined(separator: ",\n"))
              ],
              "apps": [
            \(apps.joined(separator: ",\n"))
              ],
              "osc": {"port": \(oscPort), "admin": ["127.0.0.1/32"]},
              "http": {"port": \(httpPort)}
            }

            """
    }

    /// Broken edits a person might save by mistake: the router must refuse each and run on.
    public static let brokenEdits: [(what: String, edit: @Sendable (String) -> String)] = [
        ("a cut-off file", { String($0.prefix($0.count / 2)) }),
        ("an unknown category", { $0.replacingOccurrences(of: "\"category\": \"ambient\"", with: "\"category\": \"loud\"") }),
        ("a route with no ports", { $0.replacingOccurrences(of: "\"ports\": [\"chaoshdmi:in_1\", \"chaoshdmi:in_2\"]", with: "\"ports\": []") }),
        ("a ducking level above 0 dB", { $0.replacingOccurrences(of: "\"osc\":", with: "\"ducking\": {\"level\": 6},\n  \"osc\":") }),
    ]
}
