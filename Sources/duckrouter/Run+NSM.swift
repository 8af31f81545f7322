import ArgumentParser
import Foundation
import Logging
import SessionStore

/// Under the New Session Manager (docs/SESSIONS.md, "Under the New Session Manager").
extension Run {
    /// What the session manager said and the project made ready for it.
    struct ManagedSession {
        var manager: NSMClient
        var open: NSMClient.Open
        var project: NSMProject
    }

    /// With `NSM_URL` set (nsmd, RaySession, Agordejo): announces, waits for `open` and makes the
    /// project file ready (`NSMProject`). Nil without `NSM_URL`, or when the manager cannot be
    /// reached or refuses the announce (logged: the router runs without session management). A
    /// project that cannot be made ready is answered with `/error` and a status message, and ends
    /// the start (exit 2 for a template or project file, 1 otherwise).
    func joinSessionManager(logger: Logger) throws -> ManagedSession? {
        let environment = ProcessInfo.processInfo.environment
        guard let url = environment["NSM_URL"], !url.isEmpty else { return nil }
        let manager: NSMClient
        let open: NSMClient.Open
        do throws(NSMClient.Failure) {
            manager = try NSMClient(url: url)
            open = try manager.announce(application: "duckrouter", executable: CommandLine.arguments.first ?? "duckrouter")
        } catch {
            logger.warning("NSM: \(error); running without session management")
            return nil
        }
        // A new client's template: one named on the command line (RaySession can pass arguments;
        // nsmd cannot), else DUCKROUTER_TEMPLATE, the user's or the installed default.
        let search = SessionTemplate.Search(explicit: template ?? session, environment: environment,
                                            installed: SessionTemplate.Search.installedFolder())
        do throws(NSMProject.Failure) {
            let project = try NSMProject.prepare(path: open.path, search: search, oscPort: oscPort, httpPort: httpPort, bind: oscBind)
            logger.info("under session management", metadata: ["manager": "\(open.manager)", "path": "\(open.path)", "client": "\(open.clientID)"])
            for note in project.notes { logger.notice("NSM: \(note)") }
            return ManagedSession(manager: manager, open: open, project: project)
        } catch {
            printError("duckrouter: NSM: \(error.description)")
            manager.error(to: "/nsm/client/open", error.code, error.description)
            manager.message(priority: 3, error.description)
            throw ExitCode(error.code == .general ? 1 : 2)
        }
    }
}
