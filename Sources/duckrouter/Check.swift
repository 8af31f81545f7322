import ArgumentParser
import SessionStore

/// Validates session files, reporting every problem with its file, line and field.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Validate session files without starting the router.",
        discussion: "Exit code 0 when every file is valid, 2 when one is not (every problem of every file is listed on stderr). Files are only read.")

    @Argument(help: "Session files to check.")
    var files: [String]

    func run() throws {
        var invalid = false
        for file in files {
            do {
                let session = try SessionLoader.load(path: file)
                func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
                print("\(file): valid (\(count(session.routes.count, "route")), \(count(session.apps.count, "app"))"
                      + (session.show.scenes.isEmpty ? "" : ", \(count(session.show.scenes.count, "scene")), \(count(session.show.cues.count, "cue"))") + ")")
                for line in SessionError.warnings(of: session, file: file) { print("warning: \(line)") }
            } catch {
                invalid = true
                for line in error.description.split(separator: "\n") { printError("duckrouter: \(line)") }
            }
        }
        if invalid { throw ExitCode(2) }
    }
}
