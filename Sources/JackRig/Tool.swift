import Foundation

/// Command-line tools the tests run to their end (`ip`, `jack_load`, `jack_lsp`, a script).
public enum Tool {
    /// Runs `path` with `arguments` and waits for it: its exit status and what it wrote, standard
    /// output and error together.
    public static func output(_ path: String, _ arguments: [String]) throws -> (status: Int32, text: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    /// Runs it like `output`; throws `Failure`, with what it wrote, when it exits with a status other than 0.
    @discardableResult
    public static func run(_ path: String, _ arguments: [String]) throws -> String {
        let (status, text) = try output(path, arguments)
        guard status == 0 else { throw Failure(command: ([path] + arguments).joined(separator: " "), status: status, output: text) }
        return text
    }

    public struct Failure: Error, CustomStringConvertible {
        public let command: String
        public let status: Int32
        public let output: String
        public var description: String { "\(command): exit \(status): \(output.trimmingCharacters(in: .whitespacesAndNewlines))" }
    }
}
