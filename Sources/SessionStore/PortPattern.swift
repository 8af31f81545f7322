import Foundation

/// A regular expression over full JACK port names (`client:port`), matched against the whole name:
/// `mpv:out_0` names one port, `mpv:out_.*` every output of mpv.
public struct PortPattern: Equatable, @unchecked Sendable, CustomStringConvertible {
    // NSRegularExpression is immutable once built and documented as thread-safe.
    public let source: String
    private let expression: NSRegularExpression

    /// Throws when `source` is not a valid regular expression.
    public init(_ source: String) throws {
        self.source = source
        expression = try NSRegularExpression(pattern: "^(?:" + source + ")$")
    }

    public func matches(_ portName: String) -> Bool {
        let range = NSRange(portName.startIndex..., in: portName)
        return expression.firstMatch(in: portName, range: range) != nil
    }

    public var description: String { source }

    public static func == (a: PortPattern, b: PortPattern) -> Bool { a.source == b.source }
}
