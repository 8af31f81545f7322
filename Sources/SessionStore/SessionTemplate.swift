import Foundation

/// A session file made from a template the first time it is needed: the systemd unit's
/// `~/.config/duckrouter/session.json` from the installed default (`--create-from`), a new NSM
/// client's session from the one on the command line.
public enum SessionTemplate {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Creates `path` (and the folders it needs) as a copy of `template` when nothing is at `path`;
    /// a file already there is left alone, so a person's edits are never overwritten. Returns true
    /// when it made the file. An unreadable template is an error, unless `fallback` is given.
    @discardableResult
    public static func createIfMissing(_ path: String, from template: String, fallback: Data? = nil) throws(Failure) -> Bool {
        if FileManager.default.fileExists(atPath: path) { return false }
        // A link to nothing: making the file would need to know where the link means it to be.
        if let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: path) {
            throw Failure(description: "cannot create \(path): it is a symbolic link to \(destination), which does not exist")
        }
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: template))
        } catch {
            guard let fallback else {
                throw Failure(description: "cannot create \(path): the template \(template) cannot be read (\(error.localizedDescription))")
            }
            contents = fallback
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
