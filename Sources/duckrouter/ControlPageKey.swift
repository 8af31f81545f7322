import Foundation
import HTTPControl
import Logging
import OSCControl
import SessionStore

/// The control page's key at start (docs/HTTP.md, "Who may do what"): the one kept beside the
/// state file, or a new one made and kept there; the page's link (its address with the key) is
/// logged, now and each time the key changes, so `make run`, the journal and the service's status
/// show the link a person opens.
enum ControlPageKey {
    static func open(_ http: HTTPControlServer, stateFile: String, logger: Logger) -> PageAccess {
        // Absolute, as `/page` names it: duckctl runs in a folder of its own and reads it as named.
        let file = PageKeyFile(path: URL(fileURLWithPath: PageKeyFile.path(besideState: stateFile)).standardizedFileURL.path)
        let (page, made, problem) = PageAccess.open(address: http.pageAddress, file: file)
        if let problem {
            logger.error("\(problem): the page's key for this run is only in this log (duckctl page cannot read it)")
        } else if made {
            logger.notice("made the control page's key", metadata: ["file": "\(file.path)"])
        }
        logger.notice("control page: \(page.link) (its key gives a person's rights over every app; duckctl page prints the link again)")
        page.onChange { link in logger.notice("the control page's key changed; control page: \(link)") }
        return page
    }
}
