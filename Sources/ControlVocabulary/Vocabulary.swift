import OSCTransport
import Policy

/// The control vocabulary: every path of the OSC address space, once (`rows`, grouped as
/// docs/OSC.md groups them, in the OSCQuery namespace's order). A path not in it is refused (-7);
/// every change through a path that names an app is checked against the app's owner, whatever
/// command it becomes (queries are open to everyone).
public enum Vocabulary {
    public static let rows: [PathRow] = appRows + systemRows + routeRows + remoteRows + duckRows + showRows + serviceRows

    /// A decoded message: the command, and the app whose owner (or an admin) alone may send it.
    public struct Decoded: Equatable, Sendable {
        public var command: ControlCommand
        /// The app the message changes (nil for a shared path, and for a query: anyone allowed
        /// may read).
        public var app: String?
        /// Only an admin may send it (`PathRow.Scope.admin`).
        public var adminOnly = false
    }

    /// Decodes a message by its row: the path's pattern chooses the row, the row's decoder reads
    /// the arguments, and every argument must be read. Throws the `/error` to answer it with.
    public static func decode(_ message: OSCMessage) throws(PolicyError) -> Decoded {
        if message.path.contains(where: { "*?[]{}#, ".contains($0) }) {
            throw PolicyError(.unknownPath, "address patterns and spaces are not accepted: \(Arguments.quote(message.path))")
        }
        guard let (row, name) = row(for: message.path), let decoder = row.decoder else { throw unknown(message.path) }
        if row.scope == .appInPath, let problem = AppConfiguration.nameProblem(name) {
            throw PolicyError(.unknownApp, "no app named that: \(problem)")
        }
        var arguments = Arguments(message)
        let command: ControlCommand
        do {
            command = try decoder(&arguments, name)
        } catch let error as PolicyError {
            throw error
        } catch {
            throw PolicyError(.badArgument, "\(error)")
        }
        try arguments.finish()
        let app: String?
        switch row.scope {
        case .shared, .admin: app = nil
        case .appInPath: app = name
        case .appInFirstArgument:
            switch message.arguments.first {
            case let .string(first)?, let .symbol(first)?: app = first
            default: throw unknown(message.path)   // read as a string by the decoder: never here
            }
        }
        if case var .query(query) = command {
            query.path = row.path
            return Decoded(command: .query(query), app: nil)
        }
        // Two sources, so that neither alone can let a change through: the row's (every path
        // under /app/) and the command's own (an app-changing event through any path).
        return Decoded(command: command, app: app ?? command.appItChanges, adminOnly: row.scope == .admin)
    }

    /// The row whose pattern `path` fits, and the name in it (of an app or route; "" for none).
    public static func row(for path: String) -> (PathRow, String)? {
        guard path.first == "/" else { return nil }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        let list = Array(parts)
        for row in rows {
            if let name = row.match(list) { return (row, name) }
        }
        return nil
    }

    static func unknown(_ path: String) -> PolicyError {
        PolicyError(.unknownPath, "no such path: \(Arguments.quote(path)) (docs/OSC.md lists them)")
    }
}
