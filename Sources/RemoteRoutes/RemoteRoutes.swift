import Dispatch
import Logging
import SessionStore

/// What the daemon runs beside the router for the session's remote routes over zita-njbridge: a
/// `BridgeSender` (zita-j2n) for each, and a `FarEndWatch` for each whose far end is watched.
/// netjack2 needs neither (the router loads netmanager into its server; its far ends come and go
/// as JACK clients).
///
/// Owns: the senders and watches. Touches the router only through `onFarEnd` (route, answers),
/// which the daemon points at `Router.setFarEndAnswers`.
public final class RemoteRoutes: Sendable {
    public let senders: [BridgeSender]
    public let watches: [FarEndWatch]

    /// The sender executable, looked up on `$PATH`.
    public static let senderName = "zita-j2n"

    /// zita-j2n's command line for `bridge` with `channels` channels, joining JACK server
    /// `server` (nil: libjack's default server).
    public static func senderArguments(_ bridge: Session.Remote.Bridge, channels: Int, server: String?) -> [String] {
        var arguments = ["--jname", bridge.client, "--chan", "\(channels)", "--\(bridge.format.rawValue)"]
        if let server { arguments += ["--jserv", server] }
        return arguments + [bridge.host, "\(bridge.port)"]
    }

    /// `server`: the JACK server the router joins, named to the senders (nil: libjack's default
    /// server; the caller names `$JACK_DEFAULT_SERVER`'s, which PipeWire's libjack does not read).
    public init(session: Session, server: String?, logger: Logger,
                onFarEnd: @escaping @Sendable (_ route: String, _ answers: Bool) -> Void) {
        let bridged = session.bridgedRoutes
        var senders: [BridgeSender] = []
        var watches: [FarEndWatch] = []
        let executable = bridged.isEmpty ? nil : ChildProcess.find(Self.senderName)
        for (route, bridge) in bridged {
            if let executable {
                senders.append(BridgeSender(route: route.name, executable: executable,
                                            arguments: Self.senderArguments(bridge, channels: route.channelCount, server: server),
                                            logger: logger))
            } else {
                logger.error("\(Self.senderName) is not installed (Debian: apt install zita-njbridge): route '\(route.name)' stays unavailable")
            }
            if let watch = bridge.watch {
                let name = route.name
                logger.info("watching the far end: the route is available while its duckrouter answers /ping",
                            metadata: ["route": "\(name)", "at": "\(bridge.host):\(watch)"])
                watches.append(FarEndWatch(route: name, host: bridge.host, port: watch, logger: logger) { answers in
                    onFarEnd(name, answers)
                })
            } else {
                logger.notice("the far end is not watched (watch: false): the route is available while its sender runs", metadata: ["route": "\(route.name)"])
            }
        }
        self.senders = senders
        self.watches = watches
    }

    public func start() {
        for sender in senders { sender.start() }
        for watch in watches { watch.start() }
    }

    /// The JACK server is back: senders waiting to start again start now.
    public func jackReturned() {
        for sender in senders { sender.restartSoon() }
    }

    /// Stops watching and stops the senders, all at once (each watch told to stop, each sender sent
    /// SIGTERM, then waited for together: 2 s, then SIGKILL for any left, whatever the number of
    /// routes); returns when all have ended, or been given up on. Not from the router's control
    /// queue (a watch tells the router on it).
    public func stop() {
        let watching = watches.filter { $0.requestStop() }
        let sending = senders.filter { $0.requestStop() }
        let deadline = DispatchTime.now() + 2
        for sender in sending { sender.awaitStop(killAfter: deadline) }
        for watch in watching { watch.awaitStop(until: deadline) }
    }
}
