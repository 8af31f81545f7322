/// Everything wrong with a session file, each problem with the file and field it concerns.
public struct SessionError: Error, Equatable, CustomStringConvertible {
    public struct Problem: Equatable, Sendable, CustomStringConvertible {
        /// Where in the document: `apps[1].category`, or empty for the file as a whole.
        public var field: String
        public var message: String
        public var description: String { field.isEmpty ? message : "\(field): \(message)" }
    }

    public var file: String
    public var problems: [Problem]

    /// One line per problem: `Sessions/car.json: apps[2].category: expected one of …, got 'playbak'`.
    public var description: String {
        problems.map { "\(file): \($0)" }.joined(separator: "\n")
    }
}
