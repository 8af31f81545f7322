/// A per-pair override of the session-wide ducking settings, on every route or on one.
///
/// A rule lowers `ducked` by a fixed `level`, or aims at a loudness difference: with `target`,
/// the router measures both apps (EBU R 128) and sets the ducked app's gain so it sounds `target`
/// LU under the ducker, never louder than undducked, never deeper than `floor` (docs/POLICY.md,
/// "Ducking by loudness"). Until both have been measured, `level` applies.
public struct DuckingRule: Equatable, Sendable {
    public var ducker: String
    public var ducked: String
    /// The route this rule is for; nil: every route (a rule for the route wins over it).
    public var route: String?
    /// dB, at most 0 (0 means this pair does not duck); nil takes the session-wide level. A rule
    /// gives `level`, `target` or both.
    public var level: Double?
    /// LU the ducked app is kept under the ducker; nil: a fixed level.
    public var target: Double?
    /// dB, the deepest a loudness-targeted duck goes; nil takes the session-wide floor.
    public var floor: Double?
    /// Milliseconds; nil takes the session-wide value.
    public var attack: Double?
    public var release: Double?

    public init(ducker: String, ducked: String, route: String? = nil, level: Double? = nil, target: Double? = nil,
                floor: Double? = nil, attack: Double? = nil, release: Double? = nil) {
        self.ducker = ducker
        self.ducked = ducked
        self.route = route
        self.level = level
        self.target = target
        self.floor = floor
        self.attack = attack
        self.release = release
    }

    /// Whether this is the rule for exactly that pair and route (nil: every route).
    public func matches(ducker: String, ducked: String, route: String?) -> Bool {
        self.ducker == ducker && self.ducked == ducked && self.route == route
    }

    /// Why the rule cannot be used, or nil. `routes`: the session's routes.
    public func problem(routes: [String]) -> PolicyError? {
        let name = "ducking rule \(ducker) → \(ducked)\(route.map { " on \($0)" } ?? "")"
        if let route, !routes.contains(route) {
            return PolicyError(.unknownRoute, "\(name): no route named '\(route)'")
        }
        if ducker == ducked {
            return PolicyError(.badArgument, "\(name): an app does not duck itself")
        }
        if level == nil && target == nil {
            return PolicyError(.badArgument, "\(name): give a level (dB), a target (LU) or both")
        }
        if let level, !(level.isFinite && Limits.duckLevel.contains(level)) {
            return PolicyError(.badArgument, "\(name): level: expected -144 to 0 dB, got \(level)")
        }
        if let target, !(target.isFinite && DuckingSettings.targetRange.contains(target)) {
            return PolicyError(.badArgument, "\(name): target: expected 0 to 60 LU, got \(target)")
        }
        if let floor, !(floor.isFinite && DuckingSettings.floorRange.contains(floor)) {
            return PolicyError(.badArgument, "\(name): floor: expected -144 to 0 dB, got \(floor)")
        }
        if floor != nil && target == nil {
            return PolicyError(.badArgument, "\(name): a floor bounds a loudness target; this rule has none")
        }
        for time in [attack, release].compactMap({ $0 }) where !(time.isFinite && Limits.rampMilliseconds.contains(time)) {
            return PolicyError(.badArgument, "\(name): expected 0 to 60000 ms, got \(time)")
        }
        return nil
    }
}

/// How apps with `duckOthers` lower the others.
public struct DuckingSettings: Equatable, Sendable {
    /// dB, -144 (silence) to 0.
    public var level: Double = -14
    /// Milliseconds to reach the ducked level.
    public var attack: Double = 100
    /// Milliseconds to come back.
    public var release: Double = 500
    /// LU under the ducker that every duck aims at (nil: ducks are by `level`).
    public var target: Double?
    /// dB, the deepest a loudness-targeted duck goes.
    public var floor: Double = -40
    public var rules: [DuckingRule] = []

    public static let targetRange = Limits.duckTarget

    /// Whether any duck may aim at a loudness target: the apps' loudness must be measured.
    public var usesLoudness: Bool { target != nil || rules.contains { $0.target != nil } }
    public static let floorRange = Limits.duckLevel

    public init(level: Double = -14, attack: Double = 100, release: Double = 500, target: Double? = nil,
                floor: Double = -40, rules: [DuckingRule] = []) {
        self.level = level
        self.attack = attack
        self.release = release
        self.target = target
        self.floor = floor
        self.rules = rules
    }

    /// The rule stored for exactly that pair and route (nil: the one for every route), the last
    /// if several were given; nil when there is none.
    public func storedRule(ducker: String, ducked: String, route: String?) -> DuckingRule? {
        rules.last { $0.matches(ducker: ducker, ducked: ducked, route: route) }
    }

    /// The rule for `ducker` lowering `ducked` on `route`: the pair's rule for that route, else
    /// the pair's rule for every route, else the session-wide settings; what a rule leaves out
    /// comes from the session-wide settings (a rule with only a target starts at the session's
    /// level; one with only a level has no target).
    public func rule(ducker: String, ducked: String, route: String?) -> AppliedDuckingRule {
        let own = route == nil ? nil : storedRule(ducker: ducker, ducked: ducked, route: route)
        let pair = own ?? storedRule(ducker: ducker, ducked: ducked, route: nil)
        let scope: AppliedDuckingRule.Scope = own != nil ? .route : (pair != nil ? .pair : .session)
        return AppliedDuckingRule(ducker: ducker, scope: scope, route: route,
                                  level: pair?.level ?? level,
                                  target: pair.map { $0.target } ?? target,
                                  floor: pair?.floor ?? floor,
                                  attack: pair?.attack ?? attack, release: pair?.release ?? release)
    }
}

/// The rule that governs one duck, with nothing left to look up.
public struct AppliedDuckingRule: Equatable, Sendable {
    /// Where the rule came from: the session-wide settings, a pair's rule, or a pair's rule for
    /// this route.
    public enum Scope: String, Sendable { case session, pair, route }
    public var ducker: String
    public var scope: Scope
    /// The route the duck is on (nil: the app plays to none now).
    public var route: String?
    public var level: Double
    public var target: Double?
    public var floor: Double
    public var attack: Double
    public var release: Double

    public init(ducker: String, scope: Scope, route: String?, level: Double, target: Double?, floor: Double,
                attack: Double, release: Double) {
        self.ducker = ducker
        self.scope = scope
        self.route = route
        self.level = level
        self.target = target
        self.floor = floor
        self.attack = attack
        self.release = release
    }
}

/// One ducker lowering one app on one route: what a loudness-targeted duck is kept for.
public struct DuckPair: Hashable, Sendable, CustomStringConvertible {
    public var ducker: String
    public var ducked: String
    public var route: String

    public init(ducker: String, ducked: String, route: String) {
        self.ducker = ducker
        self.ducked = ducked
        self.route = route
    }

    public var description: String { "\(ducker) → \(ducked) on \(route)" }
}

/// A loudness-targeted duck as it stands: what the router's loudness loop must measure and aim at.
public struct LoudnessDuck: Equatable, Sendable {
    public var pair: DuckPair
    public var rule: AppliedDuckingRule
    /// The depth it has now, dB (the rule's level until the loop has set one).
    public var decibels: Double

    public init(pair: DuckPair, rule: AppliedDuckingRule, decibels: Double) {
        self.pair = pair
        self.rule = rule
        self.decibels = decibels
    }
}

extension PolicyState {
    /// The apps that duck: active, with duckOthers, not muted, their duck not released.
    var duckers: [AppSession] { apps.filter { $0.isActive && $0.configuration.ducksOthers && !$0.settings.muted && !$0.duckReleased } }

    /// Whether an inactive signal-activated app is listening: heard before it is active, whenever
    /// it could be activated now (an active app is not "listening").
    func isListening(_ app: AppSession) -> Bool {
        app.activity == .inactive && app.configuration.activation == .signal && activationRefusal(app.configuration) == nil
    }

    /// Every duck with a loudness target in force now, by pair and route, with the depth it has.
    public var loudnessTargetedDucks: [LoudnessDuck] {
        var ducks: [LoudnessDuck] = []
        let duckers = self.duckers
        guard !duckers.isEmpty else { return [] }
        for app in apps where app.isActive || isListening(app) {
            for route in routes(of: app) {
                for ducker in duckers where ducker.name != app.name {
                    let rule = ducking.rule(ducker: ducker.name, ducked: app.name, route: route)
                    guard rule.target != nil else { continue }
                    let pair = DuckPair(ducker: ducker.name, ducked: app.name, route: route)
                    ducks.append(LoudnessDuck(pair: pair, rule: rule, decibels: loudnessDucks[pair] ?? rule.level))
                }
            }
        }
        return ducks
    }
}

extension [DuckingRule] {
    /// These rules with `rule` in place of the one for its pair and route, or after them when
    /// there is none: what `/duck/rule` does to the rules in force, and to a reload's rules that
    /// wait for a restart.
    public func setting(_ rule: DuckingRule) -> [DuckingRule] {
        var rules = self
        if let index = rules.lastIndex(where: { $0.matches(ducker: rule.ducker, ducked: rule.ducked, route: rule.route) }) {
            rules[index] = rule
        } else {
            rules.append(rule)
        }
        return rules
    }

    /// These rules without the one for that pair and route (nil: the rule for every route).
    public func removing(ducker: String, ducked: String, route: String?) -> [DuckingRule] {
        filter { !$0.matches(ducker: ducker, ducked: ducked, route: route) }
    }
}
