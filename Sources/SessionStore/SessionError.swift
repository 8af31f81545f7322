/// Everything wrong with a session file, each problem with the file, line and field it concerns.
public struct SessionError: Error, Equatable, CustomStringConvertible {
    public struct Problem: Equatable, Sendable, CustomStringConvertible {
        /// Where in the document: `apps[1].category`, or empty for the file as a whole.
        public var field: String
        public var message: String
        /// The line the field's value (or the nearest enclosing value) starts on; nil when the
        /// file could not be read at all.
        public var line: Int?

        public init(field: String, message: String, line: Int? = nil) {
            self.field = field
            self.message = message
            self.line = line
        }

        public var description: String { field.isEmpty ? message : "\(field): \(message)" }
    }

    public var file: String
    public var problems: [Problem]

    /// A session's warnings (`Session.warnings`), one line each as `description` writes problems.
    public static func warnings(of session: Session, file: String) -> [String] {
        session.warnings.isEmpty ? [] : SessionError(file: file, problems: session.warnings).description.split(separator: "\n").map(String.init)
    }

    /// One line per problem: `Sessions/car.json:14 apps[2].category: expected one of …, got 'playbak'`.
    public var description: String {
        problems.map { problem in
            switch (problem.line, problem.field.isEmpty) {
            case let (line?, false): "\(file):\(line) \(problem.field): \(problem.message)"
            case let (line?, true): "\(file):\(line): \(problem.message)"
            case (nil, _): "\(file): \(problem)"
            }
        }.joined(separator: "\n")
    }
}
