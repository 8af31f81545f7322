import Foundation

/// A session file made from a template the first time it is needed: the systemd unit's
/// `~/.config/duckrouter/session.json` from the installed default (`--create-from`), a new NSM
/// client's session from the template `Search` finds.
public enum SessionTemplate {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Where a new NSM client's session comes from (docs/SESSIONS.md, "Under the New Session
    /// Manager"): a session manager such as nsmd starts a client by its executable's name alone,
    /// so the template is found without arguments, and never left out: no template found is an
    /// error, not an empty rig.
    public struct Search: Sendable {
        /// A template named on the command line (`--create-from`, or the session argument): used
        /// as it is, or an error when it cannot be read.
        public var explicit: String?
        /// `DUCKROUTER_TEMPLATE`, `XDG_CONFIG_HOME` and `HOME`.
        public var environment: [String: String]
        /// The folder of the installed sessions: `../share/duckrouter/sessions` from the executable.
        public var installed: String

        public init(explicit: String?, environment: [String: String], installed: String) {
            self.explicit = explicit
            self.environment = environment
            self.installed = installed
        }

        /// The installed sessions' folder of the running executable.
        public static func installedFolder() -> String {
            URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("share/duckrouter/sessions").path
        }

        /// The user's templates: `$XDG_CONFIG_HOME/duckrouter/templates`, else
        /// `~/.config/duckrouter/templates` (nil with neither set).
        public var userFolder: String? {
            if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/duckrouter/templates" }
            if let home = environment["HOME"], !home.isEmpty { return home + "/.config/duckrouter/templates" }
            return nil
        }

        /// The template to copy and why it was chosen ("the command line", "DUCKROUTER_TEMPLATE",
        /// "the default"), or an error naming every place looked in.
        public func find() throws(Failure) -> (path: String, reason: String) {
            if let explicit {
                guard FileManager.default.isReadableFile(atPath: explicit) else {
                    throw Failure(description: "the template \(explicit) named on the command line cannot be read")
                }
                return (explicit, "named on the command line")
            }
            let asked = environment["DUCKROUTER_TEMPLATE"].flatMap { $0.isEmpty ? nil : $0 }
            // A path is used as it is; a name is looked up in the user's templates, then the
            // installed sessions.
            if let asked, asked.contains("/") || asked.hasSuffix(".json") {
                guard FileManager.default.isReadableFile(atPath: asked) else {
                    throw Failure(description: "DUCKROUTER_TEMPLATE names \(asked), which cannot be read")
                }
                return (asked, "DUCKROUTER_TEMPLATE")
            }
            let name = asked ?? "default"
            let places = [userFolder, installed].compactMap { $0 }.map { "\($0)/\(name).json" }
            if let found = places.first(where: { FileManager.default.isReadableFile(atPath: $0) }) {
                return (found, asked == nil ? "the default template" : "DUCKROUTER_TEMPLATE")
            }
            let how = asked == nil
                ? "no template for a new duckrouter client"
                : "DUCKROUTER_TEMPLATE names the template '\(name)', which is nowhere"
            throw Failure(description: "\(how): looked for \(places.joined(separator: " and ")); "
                          + "set DUCKROUTER_TEMPLATE to a session file or a template's name, or put one at \(places.first ?? "~/.config/duckrouter/templates/default.json")")
        }
    }

    /// Creates `path` (and the folders it needs) as a copy of `template` when nothing is at `path`;
    /// a file already there is left alone, so a person's edits are never overwritten. Returns true
    /// when it made the file. An unreadable template is an error.
    @discardableResult
    public static func createIfMissing(_ path: String, from template: String) throws(Failure) -> Bool {
        if FileManager.default.fileExists(atPath: path) { return false }
        return try create(path, contents: try read(template, for: path))
    }

    /// The template's bytes, or an error saying which file could not be made of it.
    public static func read(_ template: String, for path: String) throws(Failure) -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: template))
        } catch {
            throw Failure(description: "cannot create \(path): the template \(template) cannot be read (\(error.localizedDescription))")
        }
    }

    /// Writes `contents` to `path` (and the folders it needs) unless a file is there already
    /// (made meanwhile: left alone). Returns true when it made the file.
    @discardableResult
    public static func create(_ path: String, contents: Data) throws(Failure) -> Bool {
        // A link to nothing: making the file would need to know where the link means it to be.
        if let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: path),
           !FileManager.default.fileExists(atPath: path) {
            throw Failure(description: "cannot create \(path): it is a symbolic link to \(destination), which does not exist")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw Failure(description: "cannot create \(path): its folder: \(error.localizedDescription)")
        }
        do {
            return try AtomicFile.write(contents, to: path, replacing: false) == .written
        } catch {
            throw Failure(description: error.description)
        }
    }
}
