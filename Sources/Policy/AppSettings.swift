/// What a person sets on an app, beyond its volume, and a restart keeps: one value, carried
/// whole by the state file, the restore at start, a reload that adds the app and `/state`, so
/// none of those names a setting. A new setting is a field here (with its default, and its line
/// in `init(from:)`), a case of `Change`, and what it does where the policy mixes and ducks.
public struct AppSettings: Equatable, Sendable, Codable {
    /// Silent, whatever its volume (which it keeps), and ducking no one (`/app/<app>/mute`).
    public var muted = false

    public init() {}

    /// One setting changed (`PolicyEvent.setAppSetting`).
    public enum Change: Equatable, Sendable {
        case muted(Bool)

        /// The setting's name in the control vocabulary: `/app/<app>/<name>`.
        public var name: String {
            switch self {
            case .muted: "mute"
            }
        }
    }

    /// Every setting as a change: what sets an app to these settings.
    public var changes: [Change] { [.muted(muted)] }

    /// Applies `change`; false when the setting already had that value.
    mutating func apply(_ change: Change) -> Bool {
        let before = self
        switch change {
        case let .muted(on): muted = on
        }
        return self != before
    }

    /// A field a file written before it existed lacks keeps its default.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        muted = try container.decodeIfPresent(Bool.self, forKey: .muted) ?? false
    }
}
