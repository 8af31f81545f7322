/// Why the policy refused an event. Nothing changed when one is thrown.
///
/// The codes are those of the OSC replies (docs/OSC.md, "Conventions"), so the OSC layer can reply
/// with them as they are.
public struct PolicyError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: Int32, CaseIterable, Sendable {
        case general = -1
        case badArgument = -2
        case unknownApp = -3
        case unknownRoute = -4
        case notPermitted = -5
        case insufficientPriority = -6
        case unknownPath = -7
        case noEligibleApp = -8
        /// No scene of that name, no cue at that place (or none at all).
        case unknownScene = -9
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    static func unknownApp(_ name: String) -> PolicyError { .init(.unknownApp, "no app named '\(name)'") }
    static func unknownRoute(_ name: String) -> PolicyError { .init(.unknownRoute, "no route named '\(name)'") }
    public static func unknownScene(_ name: String) -> PolicyError { .init(.unknownScene, "no scene named '\(name)'") }
    /// `/duck/rule` asked for, or to remove, a rule that is not there.
    public static func noDuckingRule(ducker: String, ducked: String, route: String?) -> PolicyError {
        .init(.general, "no ducking rule \(ducker) → \(ducked)\(route.map { " on \($0)" } ?? " for every route")")
    }
}
