import Foundation

/// What the router shows of itself in `/state`, in the model's terms.
struct ChaosObservation {
    struct App {
        var category: String
        var options: [String]
        var state: String
        var interruptedBy: String?
        var volume: Double
        var muted: Bool
    }

    struct Route {
        var available: Bool
        var volume: Double
    }

    var apps: [String: App] = [:]
    var routes: [String: Route] = [:]
    var current: String?
    var selected: String?
    var silent = false
    var duckLevel = 0.0
    var outside: [String] = []
    var jack = ""
    /// Cycles the router missed, as `[first frame, frames]` (`engine.recentGaps`), and xruns.
    var recentGaps: [(first: UInt32, frames: UInt32)] = []
    var xruns = 0

    init?(_ state: [String: Any]) {
        guard let settings = state["settings"] as? [String: Any], let engine = state["engine"] as? [String: Any] else { return nil }
        for app in settings["apps"] as? [[String: Any]] ?? [] {
            guard let name = app["name"] as? String else { continue }
            apps[name] = App(category: app["category"] as? String ?? "", options: app["options"] as? [String] ?? [],
                             state: app["state"] as? String ?? "", interruptedBy: app["interruptedBy"] as? String,
                             volume: app["volume"] as? Double ?? .nan,
                             muted: (app["settings"] as? [String: Any])?["muted"] as? Bool ?? false)
        }
        for route in settings["routes"] as? [[String: Any]] ?? [] {
            guard let name = route["name"] as? String else { continue }
            routes[name] = Route(available: route["available"] as? Bool ?? false, volume: route["volume"] as? Double ?? .nan)
        }
        current = settings["route"] as? String
        selected = settings["selectedRoute"] as? String
        silent = settings["silent"] as? Bool ?? false
        duckLevel = (settings["ducking"] as? [String: Any])?["level"] as? Double ?? .nan
        outside = settings["interruptions"] as? [String] ?? []
        jack = engine["jack"] as? String ?? ""
        recentGaps = (engine["recentGaps"] as? [[Int]] ?? []).compactMap { $0.count == 2 ? (UInt32(truncatingIfNeeded: $0[0]), UInt32(truncatingIfNeeded: $0[1])) : nil }
        xruns = engine["xruns"] as? Int ?? 0
    }
}

extension ChaosModel {
    /// Where the router's state differs from the model's (empty: it agrees).
    func differences(from seen: ChaosObservation) -> [String] {
        var found: [String] = []
        if seen.jack != "connected" { found.append("JACK \(seen.jack)") }
        let names = Set(apps.map(\.name))
        if Set(seen.apps.keys) != names {
            found.append("apps \(seen.apps.keys.sorted()), expected \(names.sorted())")
        }
        for app in apps {
            guard let shown = seen.apps[app.name] else { continue }
            if shown.category != app.category.rawValue || shown.options != app.options.sorted() {
                found.append("\(app.name): \(shown.category) \(shown.options), expected \(app.category.rawValue) \(app.options.sorted())")
            }
            if abs(shown.volume - Double(app.volume)) > 1e-3 { found.append("\(app.name): volume \(shown.volume), expected \(app.volume)") }
            if shown.muted != app.muted { found.append("\(app.name): muted \(shown.muted), expected \(app.muted)") }
            if let expected = state(of: app), shown.state != expected { found.append("\(app.name): \(shown.state), expected \(expected)") }
            if shown.interruptedBy != app.interruptedBy {
                found.append("\(app.name): interrupted by \(shown.interruptedBy ?? "no one"), expected \(app.interruptedBy ?? "no one")")
            }
        }
        for route in routes {
            guard let shown = seen.routes[route.name] else { found.append("route \(route.name) missing"); continue }
            if shown.available != route.available { found.append("\(route.name): available \(shown.available), expected \(route.available)") }
            if abs(shown.volume - Double(route.volume)) > 1e-3 { found.append("\(route.name): volume \(shown.volume), expected \(route.volume)") }
        }
        if seen.current != current { found.append("current route \(seen.current ?? "none"), expected \(current ?? "none")") }
        if seen.selected != selected { found.append("selected route \(seen.selected ?? "none"), expected \(selected ?? "none")") }
        if seen.silent != silent { found.append("silent switch \(seen.silent), expected \(silent)") }
        if abs(seen.duckLevel - Double(duckLevel)) > 0.01 { found.append("ducking level \(seen.duckLevel), expected \(duckLevel)") }
        if seen.outside != outside { found.append("outside interruptions \(seen.outside), expected \(outside)") }
        return found
    }

    /// Where the settings the state file holds differ from the model's (the file is read as the
    /// router wrote it; an app's volume or route's absent is its default, 1).
    func differences(fromSaved saved: [String: Any]) -> [String] {
        var found: [String] = []
        let appVolumes = saved["appVolumes"] as? [String: Double] ?? [:]
        let routeVolumes = saved["routeVolumes"] as? [String: Double] ?? [:]
        let savedApps = (saved["apps"] as? [[String: Any]] ?? []).reduce(into: [String: [String: Any]]()) { result, app in
            if let name = app["name"] as? String { result[name] = app }
        }
        for app in apps where app.name != "guest" {
            let volume = appVolumes[app.name] ?? 1
            if abs(volume - Double(app.volume)) > 1e-3 { found.append("saved volume of \(app.name) \(volume), expected \(app.volume)") }
            if !app.fromSession {
                if let saved = savedApps[app.name] {
                    let category = saved["category"] as? String ?? "", options = (saved["options"] as? [String] ?? []).sorted()
                    if category != app.category.rawValue || options != app.options.sorted() {
                        found.append("saved \(app.name) \(category) \(options), expected \(app.category.rawValue) \(app.options.sorted())")
                    }
                } else {
                    found.append("registered app \(app.name) not saved")
                }
            }
            let muted = (savedApps[app.name]?["settings"] as? [String: Any])?["muted"] as? Bool ?? false
            if muted != app.muted { found.append("saved mute of \(app.name) \(muted), expected \(app.muted)") }
        }
        for name in savedApps.keys where app(name) == nil && name != "guest" {
            found.append("saved app \(name) is not registered")
        }
        for route in routes {
            let volume = routeVolumes[route.name] ?? 1
            if abs(volume - Double(route.volume)) > 1e-3 { found.append("saved volume of route \(route.name) \(volume), expected \(route.volume)") }
        }
        if (saved["silent"] as? Bool ?? false) != silent { found.append("saved silent switch, expected \(silent)") }
        let selection = saved["selectedRoute"] as? String
        if selection != selected { found.append("saved selected route \(selection ?? "none"), expected \(selected ?? "none")") }
        let level = (saved["ducking"] as? [String: Any])?["level"] as? Double ?? -14
        if abs(level - Double(duckLevel)) > 0.01 { found.append("saved ducking level \(level), expected \(duckLevel)") }
        return found
    }

    /// Where what the sinks heard differs from what the model expects: each app's tone on each
    /// route within ±0.5 dB of its gain, or below -90 dBFS where it should not be heard.
    func differences(heard windows: [String: ToneSink.Window]) -> [String] {
        var found: [String] = []
        for (route, window) in windows.sorted(by: { $0.key < $1.key }) {
            for app in ChaosSession.everyApp {
                let expected = Double(ChaosSession.amplitude * (self.app(app.name) == nil ? 0 : gain(of: app.name, on: route)))
                for (channel, samples) in window.channels.enumerated() {
                    let amplitude = ToneMeter.amplitude(of: app.frequency, in: samples, sampleRate: window.sampleRate)
                    let level = ToneMeter.decibels(amplitude), wanted = ToneMeter.decibels(expected)
                    if expected > 0 ? abs(level - wanted) > 0.5 : level > -90 {
                        found.append("\(route) \(channel + 1): \(app.name) at \(String(format: "%.1f", level)) dBFS, expected \(expected > 0 ? String(format: "%.1f", wanted) : "silence")")
                    }
                }
            }
        }
        return found
    }
}
