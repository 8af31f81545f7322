import Policy

/// The show of a session file: its scenes, the apps and routes no recall touches, and the cue
/// list (docs/SESSIONS.md, "Scenes and cues").
extension Validator {
    /// `scenes`: a list of scenes, or `{"safe": [...], "list": [...]}` when the show has a
    /// recall-safe list of its own.
    mutating func scenes(_ value: JSONValue, routes: [Session.Route], apps: [Session.App]) -> (scenes: [Scene], safe: [String]) {
        var list = value, listPath = "scenes", safe: [String] = []
        if case let .object(fields) = value {
            guard object(value, "scenes", allowed: SessionLoader.fields["scenes"]!) != nil else { return ([], []) }
            if let v = fields["safe"] { safe = safeList(v, "scenes.safe", routes: routes, apps: apps) }
            guard let items = fields["list"] else { return ([], safe) }
            list = items
            listPath = "scenes.list"
        }
        guard let items = array(list, listPath) else { return ([], safe) }
        if items.count > Limits.scenes { fail(listPath, "at most \(Limits.scenes) scenes, got \(items.count)") }
        var scenes: [Scene] = []
        var seen: [String: Int] = [:]
        for (i, item) in items.prefix(Limits.scenes).enumerated() {
            let path = "\(listPath)[\(i)]"
            guard let fields = object(item, path, allowed: SessionLoader.fields["scene"]!),
                  let nameValue = required(fields, "name", path), let name = string(nameValue, "\(path).name") else { continue }
            if let problem = Scene.nameProblem(name) {
                fail("\(path).name", problem)
                continue
            }
            if let first = seen[name] {
                fail("\(path).name", "scene '\(name)' is already declared at \(listPath)[\(first)]")
                continue
            }
            seen[name] = i
            scenes.append(scene(name, fields, path, routes: routes, apps: apps))
        }
        return (scenes, safe)
    }

    mutating func scene(_ name: String, _ fields: [String: JSONValue], _ path: String, routes: [Session.Route], apps: [Session.App]) -> Scene {
        var scene = Scene(name: name)
        if let v = fields["fade"], let ms = number(v, "\(path).fade", in: Limits.fadeMilliseconds, unit: "milliseconds") { scene.fade = ms }
        if let v = fields["curve"], let curve: FadeCurve = word(v, "\(path).curve") { scene.curve = curve }
        let declaredApps = Set(apps.map(\.name)), declaredRoutes = routes.map(\.name)
        if let v = fields["apps"], let table = object(v, "\(path).apps", allowed: nil) {
            for key in table.keys.sorted() {
                let appPath = "\(path).apps.\(key)"
                if let problem = AppConfiguration.nameProblem(key) {
                    fail(appPath, problem)
                    continue
                }
                guard let settings = object(table[key]!, appPath, allowed: SessionLoader.fields["sceneApp"]!) else { continue }
                if !declaredApps.contains(key) {
                    warn(appPath, "no app named '\(key)' is declared in apps: the scene sets it once it registers over OSC")
                }
                var app = Scene.App(name: key)
                app.volume = volume(settings, appPath, gains: Limits.appGain)
                if let m = settings["mute"], let muted = bool(m, "\(appPath).mute") { app.muted = muted }
                if let a = settings["active"], let active = bool(a, "\(appPath).active") { app.active = active }
                scene.apps.append(app)
            }
        }
        if let v = fields["routes"], let table = object(v, "\(path).routes", allowed: nil) {
            for key in table.keys.sorted() {
                let routePath = "\(path).routes.\(key)"
                guard declaredRoutes.contains(key) else {
                    fail(routePath, "no route named '\(key)' is declared in routes")
                    continue
                }
                guard let settings = object(table[key]!, routePath, allowed: SessionLoader.fields["sceneRoute"]!) else { continue }
                scene.routes.append(Scene.Route(name: key, volume: volume(settings, routePath, gains: Limits.systemGain)))
            }
            // In the session's route order, as the policy keeps them.
            scene.routes.sort { declaredRoutes.firstIndex(of: $0.name)! < declaredRoutes.firstIndex(of: $1.name)! }
        }
        switch fields["route"] {
        case nil:
            break
        case .null?:
            scene.route = .followGraph
        case let value?:
            if let route = string(value, "\(path).route") {
                if declaredRoutes.contains(route) {
                    scene.route = .select(route)
                } else {
                    fail("\(path).route", "no route named '\(route)' is declared in routes (null: follow the graph)")
                }
            }
        }
        if let v = fields["silent"], let silent = bool(v, "\(path).silent") { scene.silent = silent }
        if let v = fields["ducking"], let ducking = object(v, "\(path).ducking", allowed: SessionLoader.fields["sceneDucking"]!) {
            let p = "\(path).ducking"
            if let x = ducking["level"] { scene.ducking.level = number(x, "\(p).level", in: Limits.duckLevel, unit: "dB") }
            if let x = ducking["attack"] { scene.ducking.attack = number(x, "\(p).attack", in: Limits.rampMilliseconds, unit: "milliseconds") }
            if let x = ducking["release"] { scene.ducking.release = number(x, "\(p).release", in: Limits.rampMilliseconds, unit: "milliseconds") }
            if let x = ducking["target"] {
                if case .string("off") = x {
                    scene.ducking.target = .some(nil)
                } else if let lu = number(x, "\(p).target", in: Limits.duckTarget, unit: "LU (or \"off\")") {
                    scene.ducking.target = .some(lu)
                }
            }
        }
        if let v = fields["safe"] { scene.safe = safeList(v, "\(path).safe", routes: routes, apps: apps) }
        return scene
    }

    /// `volume` (a slider position) or `gain` (dB, within `gains`), not both.
    mutating func volume(_ settings: [String: JSONValue], _ path: String, gains: ClosedRange<Double>) -> Volume? {
        switch (settings["volume"], settings["gain"]) {
        case let (v?, nil):
            return number(v, "\(path).volume", in: Limits.volume, unit: "(a slider position)").map { .position($0) }
        case let (nil, g?):
            return number(g, "\(path).gain", in: gains, unit: "dB").map { .decibels($0) }
        case (_?, _?):
            fail("\(path).gain", "give volume or gain, not both")
            return nil
        case (nil, nil):
            return nil
        }
    }

    /// Names of apps and routes no recall touches: a route must be declared; an app need not
    /// (it may register over OSC), which is a warning.
    mutating func safeList(_ value: JSONValue, _ path: String, routes: [Session.Route], apps: [Session.App]) -> [String] {
        let names = strings(value, path)
        let known = Set(routes.map(\.name) + apps.map(\.name))
        for (i, name) in names.enumerated() where !known.contains(name) {
            if let problem = AppConfiguration.nameProblem(name) {
                fail("\(path)[\(i)]", problem)
            } else {
                warn("\(path)[\(i)]", "no app or route named '\(name)' is declared: it is kept safe once an app of that name registers over OSC")
            }
        }
        return names
    }

    /// `cues`: each a scene's name, or `{"scene": name, "continue": true, "wait": ms}`.
    mutating func cues(_ value: JSONValue, scenes: [Scene]) -> [Cue] {
        guard let items = array(value, "cues") else { return [] }
        if items.count > Limits.cues { fail("cues", "at most \(Limits.cues) cues, got \(items.count)") }
        let names = Set(scenes.map(\.name))
        var cues: [Cue] = []
        for (i, item) in items.prefix(Limits.cues).enumerated() {
            let path = "cues[\(i)]"
            var cue: Cue
            var scenePath = path
            if case let .string(name) = item {
                cue = Cue(scene: name)
            } else if case .object = item {
                guard let fields = object(item, path, allowed: SessionLoader.fields["cue"]!),
                      let sceneValue = required(fields, "scene", path), let name = string(sceneValue, "\(path).scene") else { continue }
                scenePath = "\(path).scene"
                cue = Cue(scene: name)
                if let v = fields["continue"], let continues = bool(v, "\(path).continue") { cue.continues = continues }
                if let v = fields["wait"], let wait = number(v, "\(path).wait", in: Limits.cueWaitMilliseconds, unit: "milliseconds") {
                    cue.wait = wait
                    if !cue.continues { warn("\(path).wait", "a wait is only for a cue that continues (\"continue\": true): this one waits for GO") }
                }
            } else {
                fail(path, "expected a scene's name or {\"scene\": name, \"continue\": …, \"wait\": …}, got \(item.kind)")
                continue
            }
            guard names.contains(cue.scene) else {
                fail(scenePath, "no scene named '\(cue.scene)' is declared in scenes")
                continue
            }
            cues.append(cue)
        }
        return cues
    }
}
