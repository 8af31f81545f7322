import Dispatch
import Foundation
import Logging
import ArgumentParser
import SessionStore

extension Logger.Level: @retroactive ExpressibleByArgument {}

func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// SIGINT, SIGTERM and SIGHUP, blocked in the main thread before any other thread exists, so
/// that every thread (JACK's, dispatch's, OSC's) inherits the block and only the signal thread's
/// sigwait takes them. The default disposition is restored first: a shell starts background jobs
/// with SIGINT ignored, and an ignored signal would be discarded instead of waiting for sigwait.
enum Signals {
    static let set: sigset_t = {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGHUP)
        return set
    }()

    static func block() {
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
        signal(SIGHUP, SIG_DFL)
        var mask = set
        pthread_sigmask(SIG_BLOCK, &mask, nil)
    }
}

/// What SIGHUP runs, once the router runs; reloads run one at a time.
final class Reloader: @unchecked Sendable {
    // @unchecked: `action` is read and written only under `lock` (an NSLock, which TSan sees;
    // Synchronization's Mutex it does not on Linux).
    private let lock = NSLock()
    private var action: (@Sendable () -> Void)?
    private let queue = DispatchQueue(label: "duckrouter.reload")

    func set(_ body: @escaping @Sendable () -> Void) { lock.withLock { action = body } }

    func request(logger: Logger) {
        guard let body = lock.withLock({ action }) else {
            logger.notice("SIGHUP while starting: ignored (send it again once the router runs)")
            return
        }
        queue.async(execute: body)
    }
}

/// A value set once, after the closures that read it were made (under a lock: NSLock, which
/// TSan sees).
final class LateBound<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `stored` is read and written only under `lock`.
    private let lock = NSLock()
    private var stored: Value?
    var value: Value? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// The session file as last loaded (before the state file was laid over it): reloads apply the
/// edits between it and the new file.
final class FileSession: @unchecked Sendable {
    // @unchecked: used from the reload queue only, after start-up.
    var session: Session
    init(_ session: Session) { self.session = session }
}
