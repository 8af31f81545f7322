import Foundation
import Policy

/// Reads and validates session files. A file that fails is reported, never modified.
public enum SessionLoader {
    /// The fields each kind of object may have (Sessions/schema.json must agree; a test checks).
    public static let fields: [String: Set<String>] = [
        "session": ["client", "ramp", "osc", "http", "loudness", "netjack2", "routes", "input", "ducking", "apps", "volumes", "scenes", "cues"],
        "osc": ["port", "bind", "allow", "admin", "tcpConnections", "tcpConnectionsPerAddress", "tcpPacketTimeout"],
        "http": ["port"],
        "loudness": ["meter"],
        "route": ["name", "ports", "remote", "channels", "private", "builtIn", "lookahead"],
        "remote": ["engine", "peer"],
        "remote zita-njbridge": ["engine", "host", "port", "format", "client", "watch", "latency"],
        "netjack2": ["address", "port"],
        "input": ["ports"],
        "ducking": ["level", "attack", "release", "target", "floor", "rules"],
        "duckingRule": ["ducker", "ducked", "route", "level", "target", "floor", "attack", "release"],
        "app": ["name", "category", "options", "mode", "channels", "connect", "exclusive", "remote", "resume", "active", "channelmap",
                "activation", "signal", "unduckAfter"],
        "signal": ["threshold", "attack", "hold", "hysteresis"],
        "volumes": ["routes", "apps"],
        "scenes": ["safe", "list"],
        "scene": ["name", "fade", "curve", "apps", "routes", "route", "silent", "ducking", "safe"],
        "sceneApp": ["volume", "gain", "mute", "active"],
        "sceneRoute": ["volume", "gain"],
        "sceneDucking": ["level", "target", "attack", "release"],
        "cue": ["scene", "continue", "wait"],
    ]

    /// Loads the session at `path`; throws a `SessionError` naming every problem found.
    public static func load(path: String) throws(SessionError) -> Session {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw SessionError(file: path, problems: [.init(field: "", message: "cannot read the file: \(readFailure(error))")])
        }
        return try parse(data, file: path)
    }

    /// Validates session JSON; `file` is only used in messages.
    public static func parse(_ data: Data, file: String) throws(SessionError) -> Session {
        let document: JSONValue
        let lines: [String: Int]
        do {
            let parsed = try JSONParser.parse(data)
            (document, lines) = (parsed.value, parsed.lines)
        } catch {
            throw SessionError(file: file, problems: [.init(field: "", message: "not valid JSON: \(error.message) (column \(error.column))",
                                                             line: error.line)])
        }
        var validator = Validator()
        var session = validator.session(document)
        func located(_ problem: SessionError.Problem) -> SessionError.Problem {
            var located = problem
            located.line = line(of: problem.field, in: lines)
            return located
        }
        if !validator.problems.isEmpty {
            throw SessionError(file: file, problems: validator.problems.map(located))
        }
        session.warnings = validator.warnings.map(located)
        return session
    }

    /// The line of `field`'s value, else of the nearest value that contains it (a missing field
    /// is reported on its object's line).
    static func line(of field: String, in lines: [String: Int]) -> Int? {
        var path = field
        while true {
            if let line = lines[path] { return line }
            guard !path.isEmpty else { return nil }
            if path.hasSuffix("]"), let open = path.lastIndex(of: "[") {
                path = String(path[..<open])
            } else if let dot = path.lastIndex(of: ".") {
                path = String(path[..<dot])
            } else {
                path = ""
            }
        }
    }

    private static func readFailure(_ error: Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
           let code = POSIXErrorCode(rawValue: Int32(underlying.code)), underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(code.rawValue))
        }
        if nsError.domain == NSCocoaErrorDomain && nsError.code == NSFileReadNoSuchFileError { return "no such file" }
        return nsError.localizedDescription
    }

}

/// Walks the document, building a `Session` and collecting every problem with its field path.
struct Validator {
    var problems: [SessionError.Problem] = []
    /// What loads but may not be what was meant (an app a scene names that is not declared).
    var warnings: [SessionError.Problem] = []

    mutating func fail(_ field: String, _ message: String) {
        problems.append(.init(field: field, message: message))
    }

    mutating func warn(_ field: String, _ message: String) {
        warnings.append(.init(field: field, message: message))
    }

    mutating func session(_ document: JSONValue) -> Session {
        var session = Session()
        guard let root = object(document, "", allowed: SessionLoader.fields["session"]!) else {
            return session
        }
        if let value = root["client"], let name = string(value, "client") {
            if name.isEmpty || name.contains(":") || name.utf8.count > 63 {
                fail("client", "expected a JACK client name (1 to 63 bytes, no ':'), got '\(name)'")
            } else {
                session.client = name
            }
        }
        if let value = root["ramp"], let ms = number(value, "ramp", in: 1...5000, unit: "milliseconds") {
            session.rampMilliseconds = ms
        }
        if let value = root["osc"] { session.osc = osc(value) }
        if let value = root["http"], let fields = object(value, "http", allowed: SessionLoader.fields["http"]!) {
            if let v = fields["port"], let port = integer(v, "http.port", in: 0...65535) {
                session.http.port = port
                session.http.isPortSet = true
            }
        }
        if let value = root["loudness"], let fields = object(value, "loudness", allowed: SessionLoader.fields["loudness"]!) {
            if let v = fields["meter"], let meter = bool(v, "loudness.meter") { session.loudness.meter = meter }
        }
        if let value = root["netjack2"] { session.netjack2 = netjack2(value) }
        if let value = root["routes"] { session.routes = routes(value) }
        if let value = root["input"], let input = object(value, "input", allowed: SessionLoader.fields["input"]!) {
            if let ports = input["ports"] { session.input.ports = strings(ports, "input.ports", portNames: true) }
        }
        if let value = root["ducking"] { session.ducking = ducking(value, routes: session.routes.map(\.name)) }
        if let value = root["apps"] { session.apps = apps(value, routes: session.routes) }
        if let value = root["volumes"] { session.volumes = volumes(value, routes: session.routes, apps: session.apps) }
        if let value = root["scenes"] {
            (session.show.scenes, session.show.safe) = scenes(value, routes: session.routes, apps: session.apps)
        }
        if let value = root["cues"] { session.show.cues = cues(value, scenes: session.show.scenes) }
        return session
    }

    // MARK: Sections

    mutating func osc(_ value: JSONValue) -> Session.OSCSettings {
        var settings = Session.OSCSettings()
        guard let fields = object(value, "osc", allowed: SessionLoader.fields["osc"]!) else { return settings }
        if let v = fields["port"], let port = integer(v, "osc.port", in: 1...65535) { settings.port = port }
        if let v = fields["bind"], let bind = string(v, "osc.bind") { settings.bind = bind }
        if let v = fields["allow"] { settings.allow = ranges(v, "osc.allow", ports: false) }
        if let v = fields["admin"] { settings.admin = ranges(v, "osc.admin", ports: true) }
        if let v = fields["tcpConnections"], let n = integer(v, "osc.tcpConnections", in: 1...4096) { settings.tcpConnections = n }
        if let v = fields["tcpConnectionsPerAddress"], let n = integer(v, "osc.tcpConnectionsPerAddress", in: 1...4096) {
            settings.tcpConnectionsPerAddress = n
        }
        if let v = fields["tcpPacketTimeout"], let n = number(v, "osc.tcpPacketTimeout", in: 0.1...3600, unit: "seconds") {
            settings.tcpPacketTimeout = n
        }
        return settings
    }

    /// A list of address ranges (`osc.allow` takes no ports; `osc.admin` may name one).
    mutating func ranges(_ value: JSONValue, _ path: String, ports: Bool) -> [String] {
        let items = strings(value, path)
        for (i, item) in items.enumerated() {
            switch NetworkRange.parse(item) {
            case let .success(range) where range.port != nil && !ports:
                fail("\(path)[\(i)]", "expected an address or range without a port (such as 10.0.0.0/24), got '\(item)'")
            case .success: break
            case let .failure(error): fail("\(path)[\(i)]", error.description)
            }
        }
        return items
    }

    /// The items of a list of named objects (`routes`, `apps`) with their paths; an item that is
    /// not an object, or whose name is bad or already declared, is reported and left out.
    mutating func namedItems(_ value: JSONValue, _ list: String, kind: String) -> [(path: String, fields: [String: JSONValue], name: String)] {
        guard let items = array(value, list) else { return [] }
        var named: [(path: String, fields: [String: JSONValue], name: String)] = []
        var seen: [String: Int] = [:]
        for (i, item) in items.enumerated() {
            let path = "\(list)[\(i)]"
            guard let fields = object(item, path, allowed: SessionLoader.fields[kind]!) else { continue }
            guard let name = required(fields, "name", path).flatMap({ portSafeName($0, "\(path).name") }) else { continue }
            if let first = seen[name] {
                fail("\(path).name", "\(kind) '\(name)' is already declared at \(list)[\(first)]")
                continue
            }
            seen[name] = i
            named.append((path, fields, name))
        }
        return named
    }

    mutating func routes(_ value: JSONValue) -> [Session.Route] {
        var routes: [Session.Route] = []
        for (path, fields, name) in namedItems(value, "routes", kind: "route") {
            if fields["remote"] != nil || fields["channels"] != nil {
                guard var route = remoteRoute(name: name, fields, path) else { continue }
                // Two senders under one JACK client name: JACK would rename the second, and both
                // routes would patch to the first's ports.
                if let bridge = route.sender, let other = routes.first(where: { $0.sender?.client == bridge.client }) {
                    fail("\(path).remote.client", "'\(bridge.client)' is already the sender of route '\(other.name)': give each its own 'client'")
                    continue
                }
                if let v = fields["private"], let b = bool(v, "\(path).private") { route.isPrivate = b }
                if let v = fields["builtIn"], let b = bool(v, "\(path).builtIn") { route.isBuiltIn = b }
                if fields["lookahead"] != nil { fail("\(path).lookahead", "a remote route takes no look-ahead here (its engine adds its own latency)") }
                routes.append(route)
                continue
            }
            guard let portsValue = required(fields, "ports", path) else { continue }
            let ports = strings(portsValue, "\(path).ports", portNames: true)
            if ports.isEmpty {
                if case let .array(items) = portsValue, items.isEmpty {
                    fail("\(path).ports", "expected at least one destination port")
                }
                continue
            }
            if ports.count > Session.maximumChannels {
                fail("\(path).ports", "expected at most \(Session.maximumChannels) ports, got \(ports.count)")
                continue
            }
            var route = Session.Route(name: name, ports: ports)
            if let v = fields["private"], let b = bool(v, "\(path).private") { route.isPrivate = b }
            if let v = fields["builtIn"], let b = bool(v, "\(path).builtIn") { route.isBuiltIn = b }
            if let v = fields["lookahead"], let ms = number(v, "\(path).lookahead", in: 0...1000, unit: "milliseconds") {
                // One delay feeds every look-ahead route: they must agree.
                if let other = routes.first(where: { $0.lookahead > 0 }), ms > 0, other.lookahead != ms {
                    fail("\(path).lookahead", "every route with a look-ahead uses the same one ('\(other.name)' has \(Self.milliseconds(other.lookahead)) ms), got \(Self.milliseconds(ms))")
                } else {
                    route.lookahead = ms
                }
            }
            routes.append(route)
        }
        return routes
    }

    mutating func ducking(_ value: JSONValue, routes: [String]) -> DuckingSettings {
        var ducking = DuckingSettings()
        guard let fields = object(value, "ducking", allowed: SessionLoader.fields["ducking"]!) else { return ducking }
        if let v = fields["level"], let level = number(v, "ducking.level", in: Limits.duckLevel, unit: "dB") { ducking.level = level }
        if let v = fields["attack"], let ms = number(v, "ducking.attack", in: Limits.rampMilliseconds, unit: "milliseconds") { ducking.attack = ms }
        if let v = fields["release"], let ms = number(v, "ducking.release", in: Limits.rampMilliseconds, unit: "milliseconds") { ducking.release = ms }
        if let v = fields["target"], let lu = number(v, "ducking.target", in: DuckingSettings.targetRange, unit: "LU") { ducking.target = lu }
        if let v = fields["floor"], let dB = number(v, "ducking.floor", in: DuckingSettings.floorRange, unit: "dB") { ducking.floor = dB }
        if let v = fields["rules"], let list = array(v, "ducking.rules") {
            for (i, item) in list.enumerated() {
                let path = "ducking.rules[\(i)]"
                guard let rule = object(item, path, allowed: SessionLoader.fields["duckingRule"]!) else { continue }
                let ducker = required(rule, "ducker", path).flatMap { string($0, "\(path).ducker") }
                let ducked = required(rule, "ducked", path).flatMap { string($0, "\(path).ducked") }
                var route: String?
                if let v = rule["route"], let name = string(v, "\(path).route") {
                    if routes.contains(name) {
                        route = name
                    } else {
                        fail("\(path).route", "no route named '\(name)' in this session (its routes: \(routes.joined(separator: ", ")))")
                    }
                }
                if rule["level"] == nil && rule["target"] == nil {
                    fail(path, "give a level (dB), a target (LU) or both")
                }
                let level = rule["level"].flatMap { number($0, "\(path).level", in: Limits.duckLevel, unit: "dB") }
                let target = rule["target"].flatMap { number($0, "\(path).target", in: DuckingSettings.targetRange, unit: "LU") }
                let floor = rule["floor"].flatMap { number($0, "\(path).floor", in: DuckingSettings.floorRange, unit: "dB") }
                let attack = rule["attack"].flatMap { number($0, "\(path).attack", in: Limits.rampMilliseconds, unit: "milliseconds") }
                let release = rule["release"].flatMap { number($0, "\(path).release", in: Limits.rampMilliseconds, unit: "milliseconds") }
                if let ducker, let ducked, ducker == ducked {
                    fail("\(path).ducked", "an app does not duck itself")
                    continue
                }
                if floor != nil && target == nil && rule["target"] == nil {
                    fail("\(path).floor", "a floor bounds a loudness target; this rule has none")
                    continue
                }
                if let ducker, let ducked, level != nil || target != nil {
                    ducking.rules.append(DuckingRule(ducker: ducker, ducked: ducked, route: route, level: level, target: target,
                                                     floor: floor, attack: attack, release: release))
                }
            }
        }
        return ducking
    }

    mutating func apps(_ value: JSONValue, routes: [Session.Route]) -> [Session.App] {
        var apps: [Session.App] = []
        for (path, fields, name) in namedItems(value, "apps", kind: "app") {
            var app = Session.App(name: name)
            if let v = fields["category"], let c: Category = word(v, "\(path).category") { app.category = c }
            if let v = fields["options"], let items = array(v, "\(path).options") {
                app.options = items.enumerated().compactMap { word($1, "\(path).options[\($0)]") }
            }
            if let v = fields["mode"], let m: Mode = word(v, "\(path).mode") { app.mode = m }
            if let v = fields["channels"], let n = integer(v, "\(path).channels", in: 1...Session.maximumChannels) {
                app.channelCount = n
            }
            if let v = fields["connect"], let items = array(v, "\(path).connect") {
                for (k, item) in items.enumerated() {
                    guard let source = string(item, "\(path).connect[\(k)]") else { continue }
                    do {
                        app.connect.append(try PortPattern(source))
                    } catch {
                        fail("\(path).connect[\(k)]", "expected a regular expression over JACK port names, got '\(source)' (it does not compile)")
                    }
                }
            }
            if let v = fields["remote"], let items = array(v, "\(path).remote") {
                app.remote = items.enumerated().compactMap { word($1, "\(path).remote[\($0)]") }
            }
            if let v = fields["resume"], let r: ResumePolicy = word(v, "\(path).resume") { app.resume = r }
            if let v = fields["active"], let b = bool(v, "\(path).active") { app.startsActive = b }
            if let v = fields["exclusive"], let b = bool(v, "\(path).exclusive") { app.exclusive = b }
            if let v = fields["channelmap"] { app.channelMap = channelMap(v, "\(path).channelmap", app: app, routes: routes) }
            if let v = fields["activation"], let a: Activation = word(v, "\(path).activation") { app.activation = a }
            if let v = fields["signal"] { app.signal = signalDetection(v, "\(path).signal") }
            if let v = fields["unduckAfter"], let ms = number(v, "\(path).unduckAfter", in: 1...3_600_000, unit: "milliseconds") {
                app.unduckAfter = ms
            }
            // The combination rules (docs/POLICY.md, "Valid combinations"): the policy's own
            // check, reported at the field the person wrote.
            let configuration = AppConfiguration(name: app.name, category: app.category, options: Set(app.options), mode: app.mode)
            switch configuration.combinationProblem {
            case nil: break
            case .optionsNotTaken:
                fail("\(path).options", "category \(app.category.rawValue) takes no options; options are for playback, playAndRecord and multiRoute")
            case let .modeNotAllowed(allowed):
                fail("\(path).mode", "expected one of \(allowed.map(\.rawValue).joined(separator: ", ")) with category \(app.category.rawValue), got '\(app.mode.rawValue)'")
            }
            apps.append(app)
        }
        return apps
    }

    /// `{"threshold": -40, "attack": 10, "hold": 500, "hysteresis": 6}`, each optional.
    mutating func signalDetection(_ value: JSONValue, _ path: String) -> SignalDetection {
        var signal = SignalDetection()
        guard let fields = object(value, path, allowed: SessionLoader.fields["signal"]!) else { return signal }
        if let v = fields["threshold"], let dB = number(v, "\(path).threshold", in: Limits.signalThreshold, unit: "dBFS") { signal.threshold = dB }
        if let v = fields["attack"], let ms = number(v, "\(path).attack", in: Limits.signalAttack, unit: "milliseconds") { signal.attack = ms }
        if let v = fields["hold"], let ms = number(v, "\(path).hold", in: Limits.rampMilliseconds, unit: "milliseconds") { signal.hold = ms }
        if let v = fields["hysteresis"], let dB = number(v, "\(path).hysteresis", in: Limits.signalHysteresis, unit: "dB") { signal.hysteresis = dB }
        return signal
    }

    /// `[[1, "headphones:1"], [2, "speaker:2"]]`: app channel, then `route:channel`, both from 1.
    /// Two app channels onto one route channel are a sum, as written; one link written twice
    /// would play that channel 6 dB louder, so it is an error.
    mutating func channelMap(_ value: JSONValue, _ path: String, app: Session.App, routes: [Session.Route]) -> [ChannelLink]? {
        guard let items = array(value, path) else { return nil }
        if app.category != .multiRoute {
            fail(path, "only multiRoute apps have a channel map (this one is \(app.category.rawValue))")
            return nil
        }
        var links: [ChannelLink] = []
        var seen: [ChannelLink: Int] = [:]
        for (i, item) in items.enumerated() {
            let itemPath = "\(path)[\(i)]"
            guard case let .array(pair) = item, pair.count == 2,
                  case let .number(channel) = pair[0], case let .string(target) = pair[1] else {
                fail(itemPath, "expected [app channel, \"route:channel\"], such as [1, \"headphones:1\"]")
                continue
            }
            let parts = target.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let routeChannel = Int(parts[1]) else {
                fail(itemPath, "expected \"route:channel\" such as \"headphones:1\", got '\(target)'")
                continue
            }
            let routeName = String(parts[0])
            guard let route = routes.first(where: { $0.name == routeName }) else {
                let known = routes.map(\.name).joined(separator: ", ")
                fail(itemPath, "unknown route '\(routeName)' (routes: \(known.isEmpty ? "none" : known))")
                continue
            }
            guard channel == channel.rounded(), (1...Double(app.channelCount)).contains(channel) else {
                let text = channel == channel.rounded() && abs(channel) < 1e9 ? "\(Int(channel))" : "\(channel)"
                fail(itemPath, "app channel: expected 1 to \(app.channelCount), got \(text)")
                continue
            }
            guard (1...route.channelCount).contains(routeChannel) else {
                fail(itemPath, "route channel: '\(routeName)' has channels 1 to \(route.channelCount), got \(routeChannel)")
                continue
            }
            let link = ChannelLink(appChannel: Int(channel), route: routeName, routeChannel: routeChannel)
            if let first = seen[link] {
                fail(itemPath, "\(link) is already listed at \(path)[\(first)]")
                continue
            }
            seen[link] = i
            links.append(link)
        }
        return links
    }

    /// Volumes by route and by app name; each name must be declared in the file (an app
    /// registered over OSC keeps its volume in the state file, not here).
    mutating func volumes(_ value: JSONValue, routes: [Session.Route], apps: [Session.App]) -> Session.Volumes {
        var volumes = Session.Volumes()
        guard let fields = object(value, "volumes", allowed: SessionLoader.fields["volumes"]!) else { return volumes }
        if let v = fields["routes"] {
            volumes.routes = sliderPositions(v, "volumes.routes", of: "route", declared: Set(routes.map(\.name)))
        }
        if let v = fields["apps"] {
            volumes.apps = sliderPositions(v, "volumes.apps", of: "app", declared: Set(apps.map(\.name)))
        }
        return volumes
    }

    /// `{"name": 0.8, …}`: a slider position per declared route or app (`kind`).
    mutating func sliderPositions(_ value: JSONValue, _ path: String, of kind: String, declared: Set<String>) -> [String: Double] {
        guard let table = object(value, path, allowed: nil) else { return [:] }
        var positions: [String: Double] = [:]
        for key in table.keys.sorted() {
            let keyPath = "\(path).\(key)"
            guard declared.contains(key) else {
                fail(keyPath, "no \(kind) named '\(key)' is declared in \(kind)s")
                continue
            }
            if let level = number(table[key]!, keyPath, in: Limits.volume, unit: "(a slider position)") { positions[key] = level }
        }
        return positions
    }

    // MARK: Typed reads; each records a problem and returns nil when the value does not fit.

    mutating func object(_ value: JSONValue, _ path: String, allowed: Set<String>?) -> [String: JSONValue]? {
        guard case let .object(fields) = value else {
            fail(path, "expected an object, got \(value.kind)")
            return nil
        }
        if let allowed {
            for key in fields.keys.sorted() where !allowed.contains(key) {
                fail(path.isEmpty ? key : "\(path).\(key)",
                     "unknown field (expected one of \(allowed.sorted().joined(separator: ", ")))")
            }
        }
        return fields
    }

    mutating func array(_ value: JSONValue, _ path: String) -> [JSONValue]? {
        guard case let .array(items) = value else {
            fail(path, "expected a list, got \(value.kind)")
            return nil
        }
        return items
    }

    mutating func required(_ fields: [String: JSONValue], _ key: String, _ path: String) -> JSONValue? {
        guard let value = fields[key] else {
            fail("\(path).\(key)", "is required")
            return nil
        }
        return value
    }

    mutating func string(_ value: JSONValue, _ path: String) -> String? {
        guard case let .string(s) = value else {
            fail(path, "expected a string, got \(value.kind)")
            return nil
        }
        return s
    }

    mutating func bool(_ value: JSONValue, _ path: String) -> Bool? {
        guard case let .bool(b) = value else {
            fail(path, "expected true or false, got \(value.kind)")
            return nil
        }
        return b
    }

    mutating func number(_ value: JSONValue, _ path: String, in range: ClosedRange<Double>, unit: String) -> Double? {
        guard case let .number(n) = value else {
            fail(path, "expected a number \(format(range)) \(unit), got \(value.kind)")
            return nil
        }
        guard range.contains(n) else {
            fail(path, "expected a number \(format(range)) \(unit), got \(value.kind)")
            return nil
        }
        return n
    }

    mutating func integer(_ value: JSONValue, _ path: String, in range: ClosedRange<Int>) -> Int? {
        guard case let .number(n) = value, n == n.rounded(), n >= Double(range.lowerBound), n <= Double(range.upperBound) else {
            fail(path, "expected a whole number from \(range.lowerBound) to \(range.upperBound), got \(value.kind)")
            return nil
        }
        return Int(n)
    }

    /// A list of strings; with `portNames`, each must be a full `client:port` name.
    mutating func strings(_ value: JSONValue, _ path: String, portNames: Bool = false) -> [String] {
        guard let items = array(value, path) else { return [] }
        var result: [String] = []
        for (i, item) in items.enumerated() {
            let itemPath = "\(path)[\(i)]"
            if let s = string(item, itemPath), !portNames || portName(s, itemPath) { result.append(s) }
        }
        return result
    }

    /// A word from a closed vocabulary (category, option, mode, …).
    mutating func word<W: RawRepresentable & CaseIterable>(_ value: JSONValue, _ path: String) -> W?
    where W.RawValue == String {
        let choices = W.allCases.map(\.rawValue).joined(separator: ", ")
        guard case let .string(s) = value else {
            fail(path, "expected one of \(choices), got \(value.kind)")
            return nil
        }
        guard let word = W(rawValue: s) else {
            fail(path, "expected one of \(choices), got '\(s)'")
            return nil
        }
        return word
    }

    /// App and route names become parts of JACK port names (`music_in_1`); the rule is the
    /// policy's, so a name valid here is valid over OSC too.
    mutating func portSafeName(_ value: JSONValue, _ path: String) -> String? {
        guard let name = string(value, path) else { return nil }
        if let problem = AppConfiguration.nameProblem(name) {
            fail(path, problem)
            return nil
        }
        return name
    }

    mutating func portName(_ name: String, _ path: String) -> Bool {
        guard let colon = name.firstIndex(of: ":"), colon != name.startIndex, name.index(after: colon) != name.endIndex else {
            fail(path, "expected a full JACK port name 'client:port', got '\(name)'")
            return false
        }
        return true
    }

    static func milliseconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    private func format(_ range: ClosedRange<Double>) -> String {
        func f(_ x: Double) -> String { x == x.rounded() ? String(Int(x)) : String(x) }
        return "from \(f(range.lowerBound)) to \(f(range.upperBound))"
    }
}
