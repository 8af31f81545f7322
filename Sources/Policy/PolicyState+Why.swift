/// Why an app is not heard as it would be alone: the words a person reads beside it (the control
/// page, OSCQuery's `/app/<app>/why`). Pure: read from the state, as the mix is.
extension PolicyState {
    /// "ducked by nav", "interrupted by phone", "silenced by the silent switch", "muted"…; ""
    /// when nothing holds the app back (active, inactive, listening) or no app has that name.
    public func why(_ name: String) -> String {
        guard let app = app(name), let mix = Mix(of: self).apps[name] else { return "" }
        return Self.why(app, mix)
    }

    /// `why` for every app, by name: the mix worked out once, not once per app.
    public func whyAll() -> [String: String] {
        let mix = Mix(of: self).apps
        var answers: [String: String] = [:]
        for app in apps {
            answers[app.name] = mix[app.name].map { Self.why(app, $0) } ?? ""
        }
        return answers
    }

    /// Who holds the app back and by which rule, or nil when nothing does.
    public func heldBack(_ name: String) -> HeldBack? {
        guard let app = app(name), let mix = Mix(of: self).apps[name] else { return nil }
        return Self.heldBack(app, mix)
    }

    static func heldBack(_ app: AppSession, _ mix: AppMix) -> HeldBack? {
        switch mix.state {
        case .ducked:
            guard let rule = mix.duckRule else { return nil }
            return HeldBack(by: rule.ducker, rule: rule.scope.rawValue, route: rule.route, target: rule.target)
        case .interrupted:
            guard case let .interrupted(by) = app.activity else { return nil }
            return switch by {
            case let .app(other): HeldBack(by: other, rule: "app")
            case let .spokenAudio(other): HeldBack(by: other, rule: "spokenAudio")
            case let .outside(source): HeldBack(by: source, rule: "outside")
            case let .routeDisconnected(route): HeldBack(by: route, rule: "routeDisconnected", route: route)
            }
        default:
            return nil
        }
    }

    private static func why(_ app: AppSession, _ mix: AppMix) -> String {
        switch mix.state {
        case .silenced:
            return "silenced by the silent switch"
        case .interrupted:
            guard case let .interrupted(by) = app.activity else { return "interrupted" }
            switch by {
            case let .app(other): return "interrupted by \(other)"
            case let .spokenAudio(other): return "interrupted by \(other) (spoken audio)"
            case let .outside(source): return "interrupted by \(source) (outside)"
            case let .routeDisconnected(route): return "paused: \(route) went away"
            }
        case _ where app.settings.muted:
            return "muted"
        case .ducked:
            return mix.duckRule.map { "ducked by \($0.ducker)" } ?? "ducked"
        default:
            return ""
        }
    }
}
