import Foundation
import OSCTransport

/// A client of the New Session Manager (NSM, https://new-session-manager.jackaudio.org/api/):
/// announce, open, save, dirty and clean, over the UDP address in `NSM_URL`.
///
/// The manager decides where the session lives (`open`'s path) and the JACK client name (its
/// client id); it asks for saves and stops the program with SIGTERM. Under NSM, duckrouter does not
/// save by itself: changes make it dirty, and `save` writes them.
public final class NSMClient: @unchecked Sendable {
    // @unchecked: `socket` is used for receiving by the listening thread only; sends are single
    // sendto calls on the same UDP socket, which the kernel serialises.

    /// What `/nsm/client/open` said.
    public struct Open: Equatable, Sendable {
        /// Where this client keeps its files (it appends its own extensions).
        public var path: String
        public var displayName: String
        /// The JACK client name to use.
        public var clientID: String
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// NSM's error codes used here.
    public enum ErrorCode: Int32 {
        case general = -1, notNow = -8, badProject = -9, createFailed = -10
    }

    public let url: OSCURL
    private let socket: OSCClient
    private var listener: Thread?

    public init(url text: String) throws(Failure) {
        guard let url = OSCURL(text), url.transport == .udp else {
            throw Failure(description: "NSM_URL '\(text)' is not an osc.udp:// address")
        }
        self.url = url
        do {
            socket = try OSCClient(url)
        } catch {
            throw Failure(description: "cannot reach the session manager at \(text): \(error)")
        }
    }

    /// Announces the program and waits for the manager's answer and its `open`.
    public func announce(application: String, capabilities: String, executable: String,
                         timeout: Double = 10) throws(Failure) -> Open {
        do {
            try socket.send(OSCMessage("/nsm/server/announce", [
                .string(application), .string(capabilities), .string(executable), .int32(1), .int32(2), .int32(getpid()),
            ]))
            let answer = try socket.receive(timeout: timeout) { message in
                (message.path == "/reply" || message.path == "/error") && message.arguments.first == .string("/nsm/server/announce")
            }
            guard let answer else { throw Failure(description: "the session manager at \(url) did not answer the announce") }
            guard answer.path == "/reply" else { throw Failure(description: "the session manager refused the announce: \(answer)") }
            let open = try socket.receive(timeout: timeout) { $0.path == "/nsm/client/open" }
            guard let open, open.arguments.count >= 3, case let .string(path) = open.arguments[0],
                  case let .string(display) = open.arguments[1], case let .string(id) = open.arguments[2] else {
                throw Failure(description: "the session manager sent no valid /nsm/client/open")
            }
            return Open(path: path, displayName: display, clientID: id)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(description: "talking to the session manager at \(url): \(error)")
        }
    }

    /// Answers a request (`/nsm/client/open`, `/nsm/client/save`).
    public func reply(to path: String, _ message: String) {
        try? socket.send(OSCMessage("/reply", [.string(path), .string(message)]))
    }

    public func error(to path: String, _ code: ErrorCode, _ message: String) {
        try? socket.send(OSCMessage("/error", [.string(path), .int32(code.rawValue), .string(message)]))
    }

    /// `/nsm/client/is_dirty` or `/nsm/client/is_clean`.
    public func setDirty(_ dirty: Bool) {
        try? socket.send(OSCMessage(dirty ? "/nsm/client/is_dirty" : "/nsm/client/is_clean"))
    }

    /// Listens for the manager's requests on a thread of its own: `save` is called for each
    /// `/nsm/client/save` and answered with its result; a second `open` is refused (no switching).
    public func listen(save: @escaping @Sendable () -> Result<String, Failure>) {
        let thread = Thread { [self] in
            while true {
                guard let packet = try? socket.receive(timeout: 1) else { continue }
                for message in OSCClient.messages(in: packet) {
                    switch message.path {
                    case "/nsm/client/save":
                        switch save() {
                        case let .success(text): reply(to: message.path, text)
                        case let .failure(failure): error(to: message.path, .general, failure.description)
                        }
                    case "/nsm/client/open":
                        error(to: message.path, .notNow, "duckrouter cannot switch sessions while it runs (no :switch: capability)")
                    default:
                        break
                    }
                }
            }
        }
        thread.name = "duckrouter.nsm"
        listener = thread
        thread.start()
    }
}
