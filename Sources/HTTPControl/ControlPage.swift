import Foundation

/// The control page's files (docs/HTTP.md, "The control page"): `index.html`, `style.css` and
/// its scripts, shipped as the HTTPControl target's resources and read once when the server starts.
///
/// Found without `Bundle.module`, which stops the process when its bundle is not where the build
/// put it: the page is looked for beside the executable (`duckrouter_HTTPControl.resources/ui`,
/// where SwiftPM copies it), in `../share/duckrouter/ui` from the executable (an installed
/// package), or in `$DUCKROUTER_UI` if set. No page found is not fatal: `/ui/` answers 404 saying
/// where it looked, and OSCQuery works as before.
struct ControlPage: Sendable {
    struct File: Sendable {
        let data: Data
        let contentType: String
    }

    /// By name (`index.html`, …); empty when the page was not found.
    let files: [String: File]
    /// Where the page was looked for, for the 404 and the log.
    let searched: [String]

    static let names: [String: String] = [
        "index.html": "text/html; charset=utf-8",
        "style.css": "text/css; charset=utf-8",
        "osc.js": "text/javascript; charset=utf-8",
        "fader.js": "text/javascript; charset=utf-8",
        "meters.js": "text/javascript; charset=utf-8",
        "strips.js": "text/javascript; charset=utf-8",
        "routes.js": "text/javascript; charset=utf-8",
        "timeline.js": "text/javascript; charset=utf-8",
        "show.js": "text/javascript; charset=utf-8",
        "lock.js": "text/javascript; charset=utf-8",
        "app.js": "text/javascript; charset=utf-8",
    ]

    init(directories: [String]) {
        searched = directories
        for directory in directories {
            var found: [String: File] = [:]
            for (name, type) in Self.names {
                guard let data = FileManager.default.contents(atPath: "\(directory)/\(name)") else { break }
                found[name] = File(data: data, contentType: type)
            }
            if found.count == Self.names.count {
                files = found
                return
            }
        }
        files = [:]
    }

    /// The places the page may be, in order.
    static func defaultDirectories() -> [String] {
        var directories: [String] = []
        if let override = ProcessInfo.processInfo.environment["DUCKROUTER_UI"], !override.isEmpty { directories.append(override) }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        directories.append(executable.appendingPathComponent("duckrouter_HTTPControl.resources/ui").path)
        directories.append(executable.deletingLastPathComponent().appendingPathComponent("share/duckrouter/ui").path)
        return directories
    }
}
