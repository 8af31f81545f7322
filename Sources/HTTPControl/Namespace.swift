import ControlVocabulary
import OSCTransport
import Policy

/// Builds the OSCQuery namespace of the router's OSC address space (docs/OSC.md, docs/HTTP.md)
/// from one reading of the control plane.
///
/// Pure: the apps and routes, and a function that answers an OSC query path with its reply
/// values (in the daemon, `ControlReading.value`, the same decoder and answers as OSC).
/// Values of OSC paths come only from that function, so a VALUE is what the OSC query replies,
/// never a second opinion. The read-only nodes (an app's state, why and meter, a route's volume
/// and meter, the outside interruptions, Now Playing) have no OSC path of their own: each row
/// says what it shows of the reading (`PathRow.show`).
public struct Namespace {
    public typealias App = ControlReading.App
    public typealias Route = ControlReading.Route

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

    /// The whole namespace, rooted at `/`: every row of the vocabulary the namespace lists
    /// (`PathRow.inNamespace`), an app's and a route's once for each there is.
    public func build() -> OSCQueryNode {
        let appsByName = Dictionary(apps.map { ($0.name, $0) }) { first, _ in first }
        let routesByName = Dictionary(routes.map { ($0.name, $0) }) { first, _ in first }
        // Each node under its parent's path, and each container under its parent's: one pass,
        // then one walk down (a namespace of 256 apps has some 3,000 nodes, built per request).
        var nodes: [String: [OSCQueryNode]] = [:]
        var containers: [String: [String]] = [:]
        var known: Set<String> = ["/"]
        for row in Vocabulary.rows where row.inNamespace {
            let names: [String] = row.segments.contains(.app) ? apps.map(\.name)
                : row.segments.contains(.route) ? routes.map(\.name) : [""]
            for name in names {
                let path = row.path(for: name)
                var parent = Self.parent(of: path)
                nodes[parent, default: []].append(node(row, path: path, name: name, apps: appsByName, routes: routesByName))
                while known.insert(parent).inserted {
                    let above = Self.parent(of: parent)
                    containers[above, default: []].append(parent)
                    parent = above
                }
            }
        }
        func tree(_ path: String) -> OSCQueryNode {
            let parts = path.split(separator: "/").map(String.init)
            return .container(path, containerDescription(parts), (nodes[path] ?? []) + (containers[path] ?? []).map(tree))
        }
        return tree("/")
    }

    // MARK: Parts

    /// `/app/music` of `/app/music/volume`; `/` of `/app`.
    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    private func containerDescription(_ parts: [String]) -> String {
        switch parts.count {
        case 0: return "duckrouter: audio sessions, routes and ducking (docs/OSC.md)"
        case 1:
            switch parts[0] {
            case "app": return "app sessions; each app is owned by the address that registered it"
            case "system": return "the person's controls: system volume, silent switch, outside interruptions"
            case "route": return "output routes"
            case "remote": return "remote commands, forwarded to the app that owns remote control (Now Playing)"
            case "duck": return "session-wide ducking"
            default: return parts[0]
            }
        default:
            if parts == ["system", "interruption"] { return "outside interruptions (a phone call, an alarm)" }
            if parts[0] == "app" { return "the app '\(parts[1])'" }
            if parts[0] == "route" { return "the route '\(parts[1])'" }
            return parts.joined(separator: "/")
        }
    }

    /// The node of `row` at `path` (`name` in place of its `<app>` or `<route>`): its attributes
    /// from the row; its VALUE the OSC query's reply, or, for a read-only row, the reading's.
    private func node(_ row: PathRow, path: String, name: String, apps: [String: App], routes: [String: Route]) -> OSCQueryNode {
        let ranges = row.parameters.contains { $0.values != nil } ? row.parameters.map(range) : nil
        let units = row.parameters.contains { $0.unit != nil } ? row.parameters.map(\.unit) : nil
        guard row.access == .readOnly else {
            return method(path, row.description, type: row.typeTags.isEmpty ? nil : row.typeTags, access: row.access,
                          valueOf: row.access == .readWrite ? path : nil, range: ranges, unit: units)
        }
        let shown = row.show?(PathRow.Shown(app: apps[name], route: routes[name], nowPlaying: nowPlaying,
                                            outsideInterruptions: outsideInterruptions)) ?? []
        let values = Self.values(shown, matching: row.perChannel ? String(repeating: row.typeTags, count: shown.count) : row.typeTags) ?? []
        guard row.perChannel else {
            return OSCQueryNode(fullPath: path, description: row.description, type: row.typeTags, access: row.access,
                                value: values.isEmpty ? nil : values, range: ranges, unit: units)
        }
        // One of its parameter per channel: as many as it shows. None yet: no value, and so no
        // TYPE (an empty TYPE with a VALUE or RANGE is what libossia cannot take).
        guard !values.isEmpty else { return OSCQueryNode(fullPath: path, description: row.description) }
        return OSCQueryNode(fullPath: path, description: row.description, type: String(repeating: row.typeTags, count: values.count),
                            access: .readOnly, value: values, range: values.map { _ in range(row.parameters[0]) },
                            unit: values.map { _ in row.parameters[0].unit })
    }

    /// A parameter's RANGE entry.
    private func range(_ parameter: PathRow.Parameter) -> OSCQueryNode.Range {
        switch parameter.values {
        case nil: .unbounded
        case let .numbers(bounds): Range(minimum: bounds.lowerBound, maximum: bounds.upperBound)
        case let .atLeast(minimum): Range(minimum: minimum)
        case let .words(words): Range(values: words)
        case .routeNames: Range(values: routes.map(\.name))
        }
    }

    // MARK: Helpers

    /// Whether `path` is a meter (a row with a value per channel: LISTENed at 20 Hz through the
    /// OSC server's meters, not pushed on change).
    static func isMeter(_ path: String) -> Bool { Vocabulary.row(for: path)?.0.perChannel == true }

    private typealias Range = OSCQueryNode.Range

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
