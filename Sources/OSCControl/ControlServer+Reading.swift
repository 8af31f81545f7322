import ControlVocabulary
import OSCTransport
import Policy
import RouterCore
import Synchronization

/// The OSC server as the other front ends use it (`ControlService`: HTTP's OSCQuery, its
/// WebSocket): a read runs on the OSC server's thread, as an OSC query does, and answers paths
/// through the same decoder and the same row's answer as an OSC message without arguments. It
/// never runs a change.
extension ControlServer: ControlService {
    /// Runs `body` on the OSC server's thread with a fresh reading of the state and returns what
    /// it returns, or nil when the OSC server has stopped (or stops before `body` runs): a caller
    /// is never left waiting at shutdown. The caller's thread waits (asynchronously) and never the
    /// control queue: the status is one trip to it, the same as `/state` costs.
    public func read<T: Sendable>(_ body: @escaping @Sendable (ControlReading) -> T) async -> T? {
        await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            // execute runs exactly one of the two closures, once.
            server.execute({ [self] in
                continuation.resume(returning: body(reading(router.status())))
            }, ifStopped: {
                continuation.resume(returning: nil)
            })
        }
    }

    /// The reading of `status`, with the notify addresses this server keeps. The apps' why is
    /// left to whoever shows it (`ControlReading.withWhy`): most reads only compare.
    func reading(_ status: RouterStatus) -> ControlReading {
        var reading = ControlReading(policy: status.policy, notify: notifyTargets.mapValues(\.url))
        reading.apps = status.apps.map { .init(name: $0.name, state: $0.state, peaks: $0.peakDecibels) }
        reading.routes = status.routes.map { .init(name: $0.name, volume: $0.volume, peaks: $0.peakDecibels) }
        reading.nowPlaying = status.nowPlaying
        reading.outsideInterruptions = status.outsideInterruptions
        return reading
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

    /// Has `/state` show the HTTP server's connections, read from `provider` (any thread).
    public func showInState(http provider: @escaping @Sendable () -> HTTPConnectionState) {
        httpState.set(provider)
    }
}

/// Where `/state` finds the HTTP server's counts, once one is attached.
final class HTTPStateSource: Sendable {
    private let provider = Mutex<(@Sendable () -> HTTPConnectionState)?>(nil)

    func set(_ provider: @escaping @Sendable () -> HTTPConnectionState) { self.provider.withLock { $0 = provider } }
    func read() -> HTTPConnectionState? { provider.withLock { $0 }?() }
}
