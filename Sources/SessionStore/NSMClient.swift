import Foundation
import OSCTransport

/// A client of the New Session Manager (NSM, https://new-session-manager.jackaudio.org/api/, API
/// 1.1): announce, open, save, dirty and clean, and status messages, over the UDP address in
/// `NSM_URL`.
///
/// The manager decides where the session lives (`open`'s path) and the JACK client name (its
/// client id); it asks for saves and stops the program with SIGTERM. Under NSM, duckrouter does not
/// save by itself: changes make it dirty, and `save` writes them.
public final class NSMClient: @unchecked Sendable {
    // @unchecked: `socket` is used for receiving by the listening thread only; sends are single
    // sendto calls on the same UDP socket, which the kernel serialises; `dirty` is guarded by
    // `dirtyLock`.

    /// The version of the NSM API this client follows, as it announces it.
    public static let apiVersion: (major: Int32, minor: Int32) = (1, 1)
    /// What it can do: tell when it has unsaved changes, and send status messages.
    public static let capabilities = ":dirty:message:"

    /// What `/nsm/client/open` said.
    public struct Open: Equatable, Sendable {
        /// Where this client keeps its files (it appends its own extensions).
        public var path: String
        public var displayName: String
        /// The JACK client name to use.
        public var clientID: String
        /// The manager's name, from its answer to the announce.
        public var manager: String
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// NSM's error codes used here (the API has none of its own for a failed save: -1).
    public enum ErrorCode: Int32, Sendable {
        case general = -1, notNow = -8, badProject = -9, createFailed = -10
    }

    public let url: OSCURL
    private let socket: OSCClient
    private var listener: Thread?
    /// Changes since the last save. is_dirty is sent when it becomes true, is_clean when a save
    /// makes it false again, each under the lock with the change of the flag, so the manager hears
    /// them in the order the flag changed (a change made as a save ends is never shown clean).
    private let dirtyLock = NSLock()
    private var dirty = false

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
    public func announce(application: String, executable: String, timeout: Double = 10) throws(Failure) -> Open {
        do {
            try socket.send(OSCMessage("/nsm/server/announce", [
                .string(application), .string(Self.capabilities), .string(executable),
                .int32(Self.apiVersion.major), .int32(Self.apiVersion.minor), .int32(getpid()),
            ]))
            let answer = try socket.receive(timeout: timeout) { message in
                (message.path == "/reply" || message.path == "/error") && message.arguments.first == .string("/nsm/server/announce")
            }
            guard let answer else { throw Failure(description: "the session manager at \(url) did not answer the announce") }
            guard answer.path == "/reply" else { throw Failure(description: "the session manager refused the announce: \(answer)") }
            // /reply "/nsm/server/announce" s:message s:name_of_session_manager s:capabilities
            var manager = ""
            if answer.arguments.count > 2, case let .string(name) = answer.arguments[2] { manager = name }
            let open = try socket.receive(timeout: timeout) { $0.path == "/nsm/client/open" }
            guard let open, open.arguments.count >= 3, case let .string(path) = open.arguments[0],
                  case let .string(display) = open.arguments[1], case let .string(id) = open.arguments[2] else {
                throw Failure(description: "the session manager sent no valid /nsm/client/open")
            }
            return Open(path: path, displayName: display, clientID: id, manager: manager)
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

    /// A status message for the manager to show (`/nsm/client/message`): `priority` 0 (chatter)
    /// to 3 (most important).
    public func message(priority: Int32, _ text: String) {
        try? socket.send(OSCMessage("/nsm/client/message", [.int32(min(max(priority, 0), 3)), .string(text)]))
    }

    /// A short label shown beside the client in the manager's list (`/nsm/client/label`: nsmd
    /// and its GUIs show it; a manager that does not know it ignores it).
    public func label(_ text: String) {
        try? socket.send(OSCMessage("/nsm/client/label", [.string(text)]))
    }

    /// Something changed since the last save: `/nsm/client/is_dirty`, once until a save.
    public func changed() {
        dirtyLock.withLock {
            guard !dirty else { return }
            dirty = true
            try? socket.send(OSCMessage("/nsm/client/is_dirty"))
        }
    }

    /// Listens for the manager's requests on a thread of its own: `save` is called for each
    /// `/nsm/client/save` and answered with its result, then `/nsm/client/is_clean` is sent when
    /// the save made a dirty client clean (not when nothing had changed, nor when a change came
    /// while it saved); a second `open` is refused (no switching).
    public func listen(save: @escaping @Sendable () -> Result<String, Failure>) {
        let thread = Thread { [self] in
            while true {
                guard let packet = try? socket.receive(timeout: 1) else { continue }
                for message in OSCClient.messages(in: packet) {
                    switch message.path {
                    case "/nsm/client/save":
                        // Clean from the moment the state is taken: a change after it makes it dirty again.
                        let wasDirty = dirtyLock.withLock {
                            defer { dirty = false }
                            return dirty
                        }
                        switch save() {
                        case let .success(text):
                            reply(to: message.path, text)
                            dirtyLock.withLock {
                                if wasDirty && !dirty { try? socket.send(OSCMessage("/nsm/client/is_clean")) }
                            }
                        case let .failure(failure):
                            // Not saved: dirty. The manager was told unless nothing had been
                            // (a change whose own save this one took over: said now).
                            dirtyLock.withLock {
                                guard !dirty else { return }
                                dirty = true
                                if !wasDirty { try? socket.send(OSCMessage("/nsm/client/is_dirty")) }
                            }
                            error(to: message.path, .general, failure.description)
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
