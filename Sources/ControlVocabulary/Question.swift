import OSCTransport
import Policy

/// A query as its row's `answer` sees it: what was asked, and the state to answer from.
public struct Question {
    public let query: ControlCommand.Query
    public let state: PolicyState
    /// An app's notify address ("" for none): the one value the OSC server keeps, not the policy.
    let notify: (String) -> String

    /// The app the path names.
    func app() throws(PolicyError) -> AppSession {
        guard let app = state.app(query.name) else { throw PolicyError(.unknownApp, "no app named '\(query.name)'") }
        return app
    }

    /// The route the path names, checked to be one of the session's.
    func route() throws(PolicyError) -> String {
        guard state.systemVolume(query.name) != nil else { throw PolicyError(.unknownRoute, "no route named '\(query.name)'") }
        return query.name
    }

    /// The current route and its system volume.
    func currentRoute() throws(PolicyError) -> (name: String, volume: Float) {
        guard let route = state.currentRoute else { throw PolicyError(.unknownRoute, "no route is available") }
        return (route, state.systemVolume(route) ?? 1)
    }
}

extension Vocabulary {
    /// A query of the row the decoder is reading (`decode` fills in the row's path).
    static func ask(_ name: String = "", _ arguments: [String] = []) -> ControlCommand {
        .query(ControlCommand.Query("", name, arguments))
    }

    /// Answers a query by its row, from `state`; `notify` gives an app's notify address.
    public static func answer(_ query: ControlCommand.Query, _ state: PolicyState,
                              notify: @escaping (String) -> String = { _ in "" }) throws(PolicyError) -> [OSCArgument] {
        guard let answer = rowsByPath[query.path]?.answer else { throw unknown(query.path) }
        do {
            return try answer(Question(query: query, state: state, notify: notify))
        } catch let error as PolicyError {
            throw error
        } catch {
            throw PolicyError(.general, "\(error)")
        }
    }

    /// The rows by their paths as docs/OSC.md writes them.
    static let rowsByPath = Dictionary(rows.map { ($0.path, $0) }) { first, _ in first }
}
