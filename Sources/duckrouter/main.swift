import ArgumentParser
import Dispatch
import Foundation
import HTTPControl
import Zeroconf
import JackHost
import Logging
import OSCControl
import RemoteRoutes
import RouterCore
import SessionStore
import Synchronization

/// `duckrouter [run] SESSION` runs the daemon (the default); `duckrouter check FILE…` validates.
struct DuckRouterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duckrouter",
        abstract: "A real-time audio mixer and ducking router for JACK, driven by audio-session rules.",
        discussion: """
            `duckrouter SESSION` (or `duckrouter run SESSION`) runs the router; \
            `duckrouter check FILE…` validates session files without starting. \
            `duckrouter run --help` lists the router's options.
            """,
        subcommands: [Run.self, Check.self],
        defaultSubcommand: Run.self)
}

/// Validates session files, reporting every problem with its file, line and field.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Validate session files without starting the router.",
        discussion: "Exit code 0 when every file is valid, 2 when one is not (every problem of every file is listed on stderr). Files are only read.")

    @Argument(help: "Session files to check.")
    var files: [String]

    func run() throws {
        var invalid = false
        for file in files {
            do {
                let session = try SessionLoader.load(path: file)
                func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
                print("\(file): valid (\(count(session.routes.count, "route")), \(count(session.apps.count, "app")))")
            } catch {
                invalid = true
                for line in error.description.split(separator: "\n") { printError("duckrouter: \(line)") }
            }
        }
        if invalid { throw ExitCode(2) }
    }
}

/// The daemon: loads a session, runs the router until SIGINT or SIGTERM.
///
/// Exit codes: 0 after a clean stop, 1 when no JACK server runs at start or the OSC port or an
/// HTTP port that was asked for cannot be opened (the default HTTP port taken turns HTTP off; a server that goes away later is waited for), 2 when the session file is unreadable or invalid, 64 for bad command-line
/// arguments.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the router on a session file (the default command).",
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

    @Option(name: .customLong("http-port"), help: "TCP port for HTTP (OSCQuery), on the OSC bind address and allow list (default: the session's http.port, else 9952; 0 turns it off).")
    var httpPort: Int?

    @Option(name: .customLong("state"), help: "Where run-time changes are kept (default: beside the session, Sessions/x.json → Sessions/x.state.json).")
    var statePath: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        if let rampMilliseconds, !(rampMilliseconds.isFinite && (1...5000).contains(rampMilliseconds)) {
            throw ValidationError("--ramp expects milliseconds from 1 to 5000, got \(rampMilliseconds)")
        }
        if let oscPort, !(1...65535).contains(oscPort) {
            throw ValidationError("--osc-port expects a port from 1 to 65535, got \(oscPort)")
        }
        if let httpPort, !(0...65535).contains(httpPort) {
            throw ValidationError("--http-port expects a port from 1 to 65535, or 0 for none, got \(httpPort)")
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

        // Under the New Session Manager (NSM_URL set), the manager says where the session lives
        // and what the JACK client is called; saving waits for its `save` (docs/SESSIONS.md).
        var sessionPath = session
        var stateFilePath = statePath ?? StateFile.path(besideSession: session)
        var jackClientName = clientName
        var nsm: NSMClient?
        if let url = ProcessInfo.processInfo.environment["NSM_URL"], !url.isEmpty {
            do {
                let manager = try NSMClient(url: url)
                let open = try manager.announce(application: "duckrouter", capabilities: ":dirty:",
                                                executable: CommandLine.arguments.first ?? "duckrouter")
                sessionPath = open.path + ".json"
                stateFilePath = open.path + ".state.json"
                jackClientName = open.clientID
                if !FileManager.default.fileExists(atPath: sessionPath) {
                    // A new NSM client: start from the session named on the command line.
                    do {
                        try FileManager.default.createDirectory(atPath: (sessionPath as NSString).deletingLastPathComponent,
                                                                withIntermediateDirectories: true)
                        let template = (try? Data(contentsOf: URL(fileURLWithPath: session))) ?? Data("{}\n".utf8)
                        try template.write(to: URL(fileURLWithPath: sessionPath))
                    } catch {
                        manager.error(to: "/nsm/client/open", .createFailed, "cannot create \(sessionPath): \(error.localizedDescription)")
                        printError("duckrouter: NSM: cannot create \(sessionPath): \(error.localizedDescription)")
                        throw ExitCode(1)
                    }
                }
                logger.info("under session management", metadata: ["path": "\(open.path)", "client": "\(open.clientID)"])
                nsm = manager
            } catch let failure as NSMClient.Failure {
                logger.warning("NSM: \(failure); running without session management")
            }
        }

        let loaded: Session
        do {
            loaded = try SessionLoader.load(path: sessionPath)
        } catch {
            for line in error.description.split(separator: "\n") { printError("duckrouter: \(line)") }
            nsm?.error(to: "/nsm/client/open", .badProject, error.description)
            throw ExitCode(2)
        }

        // Run-time changes from earlier runs (docs/SESSIONS.md, "Run-time changes are kept").
        let stateFile = StateFile(path: stateFilePath)
        var restored = loaded
        do {
            if let saved = try stateFile.load() {
                let (merged, notes) = loaded.applying(saved)
                restored = merged
                for note in notes { logger.notice("state file: \(note); left out", metadata: ["file": "\(stateFile.path)"]) }
                logger.info("restored the state of the last run", metadata: ["file": "\(stateFile.path)"])
            }
        } catch {
            let aside = stateFile.moveAside()
            logger.error("\(error); starting from the session alone\(aside.map { " (the unreadable file is kept as \($0))" } ?? "")")
        }
        let saves = DispatchQueue(label: "duckrouter.save", qos: .utility)
        let dirty = Atomic<Bool>(false)

        var configuration = Router.Configuration(session: restored, server: server)
        configuration.meterLoudness = restored.loudness.meter
        configuration.fileDucking = loaded.ducking
        if let nsm {
            // The manager decides when to save: a change only makes the session dirty.
            configuration.onSave = { _ in
                if !dirty.exchange(true, ordering: .acquiringAndReleasing) { nsm.setDirty(true) }
            }
        } else {
            configuration.onSave = { state in
                saves.async {
                    do throws(StateFile.LoadError) { try stateFile.save(state) } catch { logger.error("\(error)") }
                }
            }
        }
        configuration.clientName = jackClientName
        configuration.rampMilliseconds = rampMilliseconds
        let relay = NotificationRelay()
        configuration.onNotification = { relay.send($0) }
        let oscConfiguration: ControlServer.Configuration
        do {
            oscConfiguration = try ControlServer.Configuration(session: loaded.osc, port: oscPort, bind: oscBind)
        } catch {
            printError("duckrouter: \(sessionPath): \(error)")
            nsm?.error(to: "/nsm/client/open", .badProject, "\(sessionPath): \(error)")
            throw ExitCode(2)
        }

        // OSCQuery over HTTP, on the OSC bind address and allow list (docs/HTTP.md). Bound before
        // the router opens JACK ports, so a taken port stops nothing half-started. A port someone
        // asked for (--http-port, the session's http.port) that cannot be opened is an error; the
        // default one (which every instance would try) only turns HTTP off, with a warning.
        var http: HTTPControlServer?
        let httpPort = self.httpPort ?? loaded.http.port
        let httpPortAsked = self.httpPort != nil || loaded.http.isPortSet
        if httpPort != 0 {
            let server = HTTPControlServer(configuration: .init(port: httpPort, osc: oscConfiguration),
                                           logger: Logger(label: "duckrouter.http"))
            do {
                try server.start()
                http = server
            } catch where !httpPortAsked {
                logger.warning("HTTP off: the default port \(httpPort) cannot be opened (\(error)); give each instance its own http.port")
            } catch {
                printError("duckrouter: \(error)")
                nsm?.error(to: "/nsm/client/open", .general, "\(error)")
                throw ExitCode(1)
            }
        }

        // SIGINT, SIGTERM and SIGHUP are blocked in every thread (see the end of this file) and
        // taken by one thread with sigwait from before the router starts; the main thread stops
        // everything once start-up is over, so a signal that comes while it starts is kept, not
        // lost. A second stop signal exits at once (a stop that hangs must not need kill -9).
        // SIGHUP reloads the session file once the router runs.
        let stopRequested = DispatchSemaphore(value: 0)
        let reload = Reloader()
        let signals = Thread {
            var requested = false
            while true {
                var number: Int32 = 0
                var set = Signals.set
                guard sigwait(&set, &number) == 0 else { continue }
                if number == SIGHUP {
                    reload.request(logger: logger)
                    continue
                }
                let name = number == SIGINT ? "SIGINT" : "SIGTERM"
                if requested {
                    logger.warning("second \(name) while stopping: exiting now")
                    Foundation.exit(1)
                }
                requested = true
                logger.info("stopping", metadata: ["signal": "\(name)"])
                stopRequested.signal()
            }
        }
        signals.name = "duckrouter.signals"
        signals.start()

        // The senders and far-end watches of routes over zita-njbridge (docs/NETWORK.md), made
        // once the router exists; the router's reconnection reaches them through this.
        let remotes = LateBound<RemoteRoutes>()
        let router: Router
        do {
            // A server that goes away is waited for (docs/RELIABILITY.md): libjack's complaints
            // while it is away are only debug lines, the router's own say what happens.
            configuration.onJackConnection = { isConnected in
                connected.store(isConnected, ordering: .relaxed)
                if isConnected { remotes.value?.jackReturned() }
            }
            router = try Router(configuration: configuration, logger: logger)
        } catch {
            printError("duckrouter: \(error)")
            http?.stop()
            throw ExitCode(1)
        }

        connected.store(true, ordering: .relaxed)

        let control: ControlServer
        do {
            control = try ControlServer(configuration: oscConfiguration, router: router, relay: relay,
                                        logger: Logger(label: "duckrouter.osc"))
        } catch {
            printError("duckrouter: \(error)")
            http?.stop()
            router.stop()
            throw ExitCode(1)
        }
        control.start()
        // Senders and watches once nothing else can fail at start (a taken OSC port would start
        // and kill them).
        let remoteRoutes = RemoteRoutes(session: restored, server: server, logger: Logger(label: "duckrouter.remote")) { route, answers in
            router.setFarEndAnswers(route: route, answers)
        }
        remotes.value = remoteRoutes
        remoteRoutes.start()

        if let http {
            http.attach(control)
        } else if httpPort == 0 {
            // Said here, not at the port check, so that a start that fails before (no JACK server)
            // still says only why it failed.
            logger.info("HTTP off (http.port 0)")
        }

        // Zeroconf (docs/HTTP.md): OSC and OSCQuery published through avahi, unless the router
        // listens on a loopback address only.
        let admitsNetwork = oscConfiguration.allow.contains { !$0.isLoopback }
        let services = Advertiser.services(bind: oscConfiguration.bind, admitsNetwork: admitsNetwork, oscPort: control.port,
                                           httpPort: http.map { UInt16(clamping: $0.configuration.port) })
        let advertiser = Advertiser(name: router.jackClientName(), services: services)
        if services.isEmpty && Advertiser.isLoopback(oscConfiguration.bind) {
            logger.info("zeroconf: not advertised: OSC and HTTP listen on \(oscConfiguration.bind) only (osc.bind)")
        } else if services.isEmpty {
            logger.info("zeroconf: not advertised: osc.allow admits this machine only")
        } else {
            advertiser.start()
        }

        let fileSession = FileSession(loaded)
        reload.set { [sessionPath] in
            logger.info("SIGHUP: reloading the session file", metadata: ["file": "\(sessionPath)"])
            let new: Session
            do {
                new = try SessionLoader.load(path: sessionPath)
            } catch {
                for line in "\(error)".split(separator: "\n") { logger.error("\(line)") }
                logger.error("reload refused: the router keeps running the session as it was")
                return
            }
            var notes = router.reload(from: fileSession.session, to: new)
            if new.osc != fileSession.session.osc { notes.append("OSC settings changed: restart to apply") }
            if new.http != fileSession.session.http { notes.append("HTTP settings changed: restart to apply") }
            if new.loudness != fileSession.session.loudness { notes.append("loudness settings changed: restart to apply") }
            fileSession.session = new
            for note in notes { logger.warning("reload: \(note)") }
            logger.info("reloaded the session file", metadata: ["file": "\(sessionPath)"])
        }

        if let nsm {
            nsm.reply(to: "/nsm/client/open", "opened \(sessionPath)")
            nsm.listen {
                // Clean from the moment the state is taken: a change after it makes it dirty again.
                dirty.store(false, ordering: .releasing)
                let state = router.currentSavedState()
                do throws(StateFile.LoadError) {
                    try stateFile.save(state)
                } catch {
                    dirty.store(true, ordering: .releasing)
                    return .failure(NSMClient.Failure(description: error.description))
                }
                if !dirty.load(ordering: .acquiring) { nsm.setDirty(false) }
                return .success("saved \(stateFile.path)")
            }
        }

        // Not dispatchMain(): on Linux it leaves the main thread waiting in sigsuspend with every
        // signal unblocked, and SIGINT would then kill the process instead of reaching sigwait.
        stopRequested.wait()
        advertiser.stop()
        http?.stop()
        control.stop()
        router.stop()      // hands over a pending save
        remoteRoutes.stop()   // senders after the router: their ports going is not a route lost
        saves.sync {}      // and waits for it to be written
        Foundation.exit(0)
    }
}

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

Signals.block()
DuckRouterCommand.main()
