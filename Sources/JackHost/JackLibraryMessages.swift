import CJack
import Synchronization

/// Where libjack's own error and info messages go (by default libjack prints them to stderr).
///
/// libjack calls these from whichever thread hit the message, occasionally its process thread,
/// so a handler should be quick; the daemon hands them to its logger.
public enum JackLibraryMessages {
    public enum Kind: Sendable { case error, info }
    public typealias Handler = @Sendable (Kind, String) -> Void

    private static let handler = Mutex<Handler?>(nil)

    /// Routes libjack's messages to `handler` (nil: drop them).
    public static func route(to newHandler: Handler?) {
        handler.withLock { $0 = newHandler }
        jack_set_error_function { message in
            guard let message else { return }
            let text = String(cString: message)
            JackLibraryMessages.handler.withLock { $0 }?(.error, text)
        }
        jack_set_info_function { message in
            guard let message else { return }
            let text = String(cString: message)
            JackLibraryMessages.handler.withLock { $0 }?(.info, text)
        }
    }
}
