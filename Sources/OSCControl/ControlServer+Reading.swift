import ControlVocabulary
import OSCTransport
import Policy
import RouterCore

/// Reading the control plane for other front ends (HTTP's OSCQuery): a read runs on the OSC
/// server's thread, as an OSC query does, and answers paths through the same decoder and the same
/// `answer` as an OSC message without arguments. It never runs a change.
extension ControlServer {
    /// What a read sees: one status of the router, taken when the read starts, and the values the
    /// OSC paths would reply with, answered from that status. Valid only inside `read`'s body.
    public struct Reader {
        /// The router's status when the read started (apps, routes, states, volumes).
        public let status: RouterStatus
        fileprivate let server: ControlServer

        /// The OSC port and bind address, for OSCQuery's HOST_INFO.
        public var configuration: Configuration { server.configuration }

        /// Each app's notify address (what `/app/<name>/notify` replies), by app.
        public var notifyAddresses: [String: String] { server.notifyTargets.mapValues(\.url) }

        /// What `path` replies to an OSC message without arguments, when that is a query:
        /// `.success` with the reply values, `.failure` with the `/error` it would get (an unknown
        /// path, app or route; or a path that is not a query, such as `/app/x/activate`, which
        /// is refused here instead of run).
        public func value(_ path: String) -> Result<[OSCArgument], PolicyError> {
            do throws(PolicyError) {
                guard case let .query(query) = try ControlCommand.decode(OSCMessage(path)) else {
                    return .failure(PolicyError(.badArgument, "\(path) is not a query"))
                }
                return .success(try server.answer(query, state: status.policy))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Runs `body` on the OSC server's thread with a fresh reading of the state and returns what
    /// it returns, or nil when the OSC server has stopped (or stops before `body` runs): a caller
    /// is never left waiting at shutdown. The caller's thread waits (asynchronously) and never the
    /// control queue: the status is one trip to it, the same as `/state` costs.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Reader) -> T) async -> T? {
        await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            // execute runs exactly one of the two closures, once.
            server.execute({ [self] in
                continuation.resume(returning: body(Reader(status: router.status(), server: self)))
            }, ifStopped: {
                continuation.resume(returning: nil)
            })
        }
    }

    /// What OSCQuery's HOST_INFO names: the JACK client name and the OSC port, or nil when the
    /// OSC server has stopped. No reading of the whole state: one short trip to the control queue
    /// for the name, made from the OSC server's thread as `read`'s are, so the caller waits
    /// without holding a thread (a busy control queue never ties up Swift's concurrency pool).
    public func hostInfo() async -> (client: String, oscPort: UInt16)? {
        await withCheckedContinuation { (continuation: CheckedContinuation<(client: String, oscPort: UInt16)?, Never>) in
            server.execute({ [self] in
                continuation.resume(returning: (router.jackClientName(), configuration.port))
            }, ifStopped: {
                continuation.resume(returning: nil)
            })
        }
    }
}
