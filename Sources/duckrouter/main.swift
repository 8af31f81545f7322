import ArgumentParser
import Dispatch
import Foundation
import JackHost
import Logging
import OSCControl
import RouterCore
import SessionStore
import Synchronization

/// The daemon: loads a session, runs the router until SIGINT or SIGTERM.
///
/// Exit codes: 0 after a clean stop, 1 when JACK is unavailable or goes away or the OSC port
/// cannot be opened, 2 when the session file is unreadable or invalid, 64 for bad command-line
/// arguments.
struct DuckRouterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duckrouter",
        abstract: "A real-time audio mixer and ducking router for JACK, driven by audio-session rules.",
        discussion: """
            Registers an input-port group per app (<app>_in_<n>) and an output-port group per route \
            (<route>_out_<n>) as the session file declares them, connects them, and mixes in JACK's \
            process thread. Stop it with Ctrl-C (SIGINT) or SIGTERM.
            """)

    @Argument(help: "The session file to run.")
    var session: String = "Sessions/default.json"

    @Option(name: .long, help: "The JACK server to join (default: $JACK_DEFAULT_SERVER, else 'default'). Never starts one.")
    var server: String?

    @Option(name: .customLong("client-name"), help: "The JACK client name (default: the session's 'client', else 'duckrouter').")
    var clientName: String?

    @Option(name: .customLong("ramp"), help: "Gain ramp time in milliseconds for every level change (default: the session's 'ramp', else 20).")
    var rampMilliseconds: Double?

    @Option(name: .customLong("osc-port"), help: "UDP and TCP port for OSC control (default: the session's osc.port, else 9951).")
    var oscPort: Int?

    @Option(name: .customLong("osc-bind"), help: "Address to listen on for OSC (default: the session's osc.bind, else 127.0.0.1; 0.0.0.0 for every interface).")
    var oscBind: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        if let rampMilliseconds, !(rampMilliseconds.isFinite && (1...5000).contains(rampMilliseconds)) {
            throw ValidationError("--ramp expects milliseconds from 1 to 5000, got \(rampMilliseconds)")
        }
        if let oscPort, !(1...65535).contains(oscPort) {
            throw ValidationError("--osc-port expects a port from 1 to 65535, got \(oscPort)")
        }
    }

    func run() throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "duckrouter")
        // libjack's own messages go to the log: at debug level while connecting (a missing server
        // is reported once, by us), as warnings once the router runs.
        let connected = Atomic<Bool>(false)
        JackLibraryMessages.route { kind, text in
            let level: Logger.Level = connected.load(ordering: .relaxed) && kind == .error ? .warning : .debug
            logger.log(level: level, "libjack: \(text)")
        }

        let loaded: Session
        do {
            loaded = try SessionLoader.load(path: session)
        } catch {
            for line in error.description.split(separator: "\n") { printError("duckrouter: \(line)") }
            throw ExitCode(2)
        }

        var configuration = Router.Configuration(session: loaded, server: server)
        configuration.clientName = clientName
        configuration.rampMilliseconds = rampMilliseconds
        let relay = NotificationRelay()
        configuration.onNotification = { relay.send($0) }
        let oscConfiguration: ControlServer.Configuration
        do {
            oscConfiguration = try ControlServer.Configuration(session: loaded.osc, port: oscPort, bind: oscBind)
        } catch {
            printError("duckrouter: \(session): \(error)")
            throw ExitCode(2)
        }

        // Signals are taken by dispatch sources, so the default handlers must not kill us first.
        // The sources exist before the router does: a signal that comes while it starts is kept
        // and handled once the main queue runs (what has started by then is stopped).
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let stopping = Mutex<@Sendable () -> Void>({})
        let signals = [SIGINT, SIGTERM].map { (number: Int32) -> DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler {
                logger.info("stopping", metadata: ["signal": "\(number == SIGINT ? "SIGINT" : "SIGTERM")"])
                stopping.withLock { $0 }()
                Foundation.exit(0)
            }
            source.resume()
            return source
        }

        let router: Router
        do {
            router = try Router(configuration: configuration, logger: logger, onServerLost: { _ in
                printError("duckrouter: the JACK server went away; exiting")
                Foundation.exit(1)
            })
        } catch {
            printError("duckrouter: \(error)")
            throw ExitCode(1)
        }

        connected.store(true, ordering: .relaxed)

        let control: ControlServer
        do {
            control = try ControlServer(configuration: oscConfiguration, router: router, relay: relay,
                                        logger: Logger(label: "duckrouter.osc"))
        } catch {
            printError("duckrouter: \(error)")
            router.stop()
            throw ExitCode(1)
        }
        control.start()

        stopping.withLock { $0 = { control.stop(); router.stop() } }
        withExtendedLifetime(signals) { dispatchMain() }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

DuckRouterCommand.main()
