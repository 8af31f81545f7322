import ArgumentParser
import BuildInfo
import Dispatch
import Foundation
import HTTPControl
import Zeroconf
import JackHost
import Logging
import OSCControl
import OSCTransport
import RemoteRoutes
import RouterCore
import ServiceNotify
import SessionStore
import Synchronization

/// The daemon: loads a session, runs the router until SIGINT or SIGTERM.
///
/// Exit codes: 0 after a clean stop, 1 when no JACK server runs at start (without
/// --wait-for-server) or the OSC port or an HTTP port that was asked for cannot be opened (the
/// default HTTP port taken turns HTTP off; a server that goes away later is waited for), 2 when
/// the session file (or the --create-from template) is unreadable or invalid, 64 for bad
/// command-line arguments. Under NSM also 2 for a new client's template found nowhere, and 1 for
/// no free port; a start that fails once the manager's open came answers it with /error first.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the router on a session file (the default command).",
        discussion: """
            Registers an input-port group per app (<app>_in_<n>) and an output-port group per route \
            (<route>_out_<n>) as the session file declares them, connects them, and mixes in JACK's \
            process thread. Stop it with Ctrl-C (SIGINT) or SIGTERM; SIGHUP re-reads the session file \
            and applies its edits while it runs. Run-time changes are kept in a state file beside \
            the session (x.json: x.state.json) and restored at the next start. \
            Environment: JACK_DEFAULT_SERVER, the JACK server to join; NSM_URL, run under the New \
            Session Manager; DUCKROUTER_TEMPLATE, the template of a new NSM client (a path, or \
            a name looked up as $XDG_CONFIG_HOME/duckrouter/templates/NAME.json, by default \
            ~/.config/duckrouter/templates/NAME.json, then in the installed sessions; without it, \
            NAME is default); DUCKROUTER_UI, the control page's folder; NOTIFY_SOCKET, set by \
            systemd, which is told when the router is ready, reloading and stopping. \
            Exit codes: 0 after a clean stop; 1 when no JACK server runs at start (unless \
            --wait-for-server) or the OSC port, or an HTTP port that was asked for, cannot be \
            opened; 2 when the session file (or the --create-from template, or under NSM a new \
            client's template) is invalid, unreadable or nowhere; 64 for bad arguments. Under \
            NSM a start that fails once the manager's open came answers it with /error first. \
            The documentation is in /usr/share/doc/duckrouter (PREFIX/share/doc/duckrouter after \
            make install; docs/ in the source).
            """)

    @Argument(help: "The session file to run (default: Sessions/default.json); under NSM, a new client's template.")
    var session: String?

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

    @Flag(name: .customLong("wait-for-server"), help: "When no JACK server runs at start, wait for one (retrying with a growing pause up to 5 s) instead of exiting with 1. SIGTERM stops the wait.")
    var waitForServer = false

    @Option(name: .customLong("create-from"), help: ArgumentHelp("When the session file does not exist, create it (and its folder) as a copy of this file first; an existing file is never touched.", valueName: "template"))
    var template: String?

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
        // Room for every peer, JACK and the state file (docs/RELIABILITY.md, "Descriptor budget");
        // said once the router runs (a start that fails says only why).
        let descriptors = DescriptorBudget.raiseSoftLimit()
        let notifier = SystemdNotifier.fromEnvironment()
        // libjack's own messages go to the log: at debug level while connecting (a missing server
        // is reported once, by us), as warnings once the router runs.
        let connected = Atomic<Bool>(false)
        JackLibraryMessages.route { kind, text in
            let level: Logger.Level = connected.load(ordering: .relaxed) && kind == .error ? .warning : .debug
            logger.log(level: level, "libjack: \(text)")
        }

        // Under the New Session Manager (NSM_URL set), the manager says where the session lives
        // and what the JACK client is called; saving waits for its `save` (docs/SESSIONS.md).
        var sessionPath = session ?? "Sessions/default.json"
        var stateFilePath = statePath ?? StateFile.path(besideSession: sessionPath)
        var jackClientName = clientName
        let managed = try joinSessionManager(logger: logger)
        let nsm = managed?.manager
        if let managed {
            sessionPath = managed.project.sessionPath
            stateFilePath = managed.project.statePath
            jackClientName = managed.open.clientID
        }
        /// A start that fails once the manager has sent `open`: said on standard error and, under
        /// NSM, in the answer to `open` (the API wants one; the manager shows it to the user).
        func failure(_ exit: Int32, _ code: NSMClient.ErrorCode, _ text: String) -> ExitCode {
            for line in text.split(separator: "\n") { printError("duckrouter: \(line)") }
            nsm?.error(to: "/nsm/client/open", code, text)
            return ExitCode(exit)
        }

        if nsm == nil, let template {
            do {
                if try SessionTemplate.createIfMissing(sessionPath, from: template) {
                    logger.notice("created the session file from a template", metadata: ["file": "\(sessionPath)", "template": "\(template)"])
                }
            } catch {
                printError("duckrouter: \(error)")
                throw ExitCode(2)
            }
        }

        let loaded: Session
        do {
            loaded = try SessionLoader.load(path: sessionPath)
            for line in SessionError.warnings(of: loaded, file: sessionPath) { logger.warning("\(line)") }
        } catch {
            throw failure(2, .badProject, error.description)
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

        var configuration = Router.Configuration(session: restored, server: server)
        configuration.meterLoudness = restored.loudness.meter
        configuration.fileDucking = loaded.ducking
        if let nsm {
            // The manager decides when to save: a change only makes the session dirty, at once
            // (the router's own saves wait 200 ms to coalesce).
            configuration.onChange = { nsm.changed() }
            configuration.onSave = { _, done in done(nil) }
        } else {
            // A save not written is kept by the router and handed over again (it logs it).
            configuration.onSave = { state, done in
                saves.async {
                    do throws(StateFile.LoadError) {
                        try stateFile.save(state)
                        done(nil)
                    } catch {
                        done(error.description)
                    }
                }
            }
        }
        configuration.clientName = jackClientName
        configuration.rampMilliseconds = rampMilliseconds
        let relay = NotificationRelay()
        configuration.onNotification = { relay.send($0) }
        var oscConfiguration: ControlServer.Configuration
        do {
            oscConfiguration = try ControlServer.Configuration(session: loaded.osc, port: oscPort, bind: oscBind)
        } catch {
            throw failure(2, .badProject, "\(sessionPath): \(error)")
        }

        // OSCQuery over HTTP, on the OSC bind address and allow list (docs/HTTP.md). Bound before
        // the router opens JACK ports, so a taken port stops nothing half-started. A port someone
        // asked for (--http-port, the session's http.port) that cannot be opened is an error; the
        // default one (which every instance would try) only turns HTTP off, with a warning.
        var http: HTTPControlServer?
        let httpPort = self.httpPort ?? loaded.http.port
        let httpPortAsked = self.httpPort != nil || loaded.http.isPortSet
        if httpPort != 0 {
            let server = HTTPControlServer(configuration: .init(port: httpPort, bind: oscConfiguration.bind, allow: oscConfiguration.allow, admin: oscConfiguration.admin),
                                           logger: Logger(label: "duckrouter.http"))
            do {
                try server.start()
                http = server
            } catch where !httpPortAsked {
                logger.warning("HTTP off: the default port \(httpPort) cannot be opened (\(error)); give each instance its own http.port")
            } catch {
                throw failure(1, .general, "\(error)")
            }
        }

        // The control page's key, kept beside the state file (docs/HTTP.md, "Who may do what").
        let page = http.map { ControlPageKey.open($0, stateFile: stateFilePath, logger: logger) }
        oscConfiguration.page = page

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
        // A server that goes away is waited for (docs/RELIABILITY.md): libjack's complaints
        // while it is away are only debug lines, the router's own say what happens.
        configuration.onJackConnection = { isConnected in
            connected.store(isConnected, ordering: .relaxed)
            if isConnected { remotes.value?.jackReturned() }
        }
        // With --wait-for-server (the systemd unit's way: the user's JACK or PipeWire may start
        // after it), a server that is not there yet is waited for too, with a growing pause.
        var started: Router?
        var pause = 0.5
        var waited = false
        while started == nil {
            do {
                started = try Router(configuration: configuration, logger: logger)
            } catch let .jack(.serverUnavailable(server, _)) where waitForServer {
                if !waited {
                    logger.notice("waiting for the JACK server '\(server)' to start (--wait-for-server)")
                    // Started, as far as systemd goes: `systemctl --user start` (and the
                    // login that starts the unit) must not wait for a JACK server that may come
                    // much later. The status says what it waits for.
                    notifier.ready(status: "waiting for the JACK server '\(server)' to start")
                    nsm?.message(priority: 2, "waiting for the JACK server '\(server)' to start")
                    waited = true
                }
                if stopRequested.wait(timeout: .now() + pause) == .success {
                    logger.info("stopped while waiting for the JACK server")
                    nsm?.error(to: "/nsm/client/open", .general, "stopped while waiting for the JACK server '\(server)'")
                    notifier.stopping()
                    http?.stop()
                    Foundation.exit(0)
                }
                pause = min(pause * 2, 5)
            } catch {
                http?.stop()
                throw failure(1, .general, "\(error)")
            }
        }
        let router = started!
        if waited { logger.info("the JACK server is there: starting") }

        connected.store(true, ordering: .relaxed)

        let control: ControlServer
        do {
            control = try ControlServer(configuration: oscConfiguration, router: router, relay: relay,
                                        logger: Logger(label: "duckrouter.osc"))
        } catch {
            http?.stop()
            router.stop()
            throw failure(1, .general, "\(error)")
        }
        control.start()
        let raised = descriptors.after > descriptors.before ? " (raised from \(descriptors.before))" : ""
        let ceiling = descriptors.hard > descriptors.after ? " (hard limit \(descriptors.hard); raised at most to \(DescriptorBudget.ceiling))" : ""
        logger.info("descriptor limit \(descriptors.after)\(raised)\(ceiling)")
        // Senders and watches once nothing else can fail at start (a taken OSC port would start
        // and kill them).
        let remoteRoutes = RemoteRoutes(session: restored, server: server ?? JackClient.serverFromEnvironment,
                                        logger: Logger(label: "duckrouter.remote")) { route, answers in
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
        let runningStatus = "running \(sessionPath) as JACK client '\(router.jackClientName())', OSC port \(control.port)"
            + (http.map { ", HTTP port \($0.configuration.port)" } ?? "")
        // With the page's link as it is now (its key may change while it runs).
        var readyStatus: String { runningStatus + (page.map { "; control page: \($0.link)" } ?? "") }
        page?.onChange { _ in notifier.status(readyStatus) }
        // Ready before a SIGHUP can be taken: a reload's RELOADING/READY pair must not end start-up.
        notifier.ready(status: readyStatus)
        reload.set { [sessionPath] in
            logger.info("SIGHUP: reloading the session file", metadata: ["file": "\(sessionPath)"])
            notifier.reloading()
            let new: Session
            do {
                new = try SessionLoader.load(path: sessionPath)
                for line in SessionError.warnings(of: new, file: sessionPath) { logger.warning("\(line)") }
            } catch {
                notifier.ready(status: readyStatus)
                for line in "\(error)".split(separator: "\n") { logger.error("\(line)") }
                logger.error("reload refused: the router keeps running the session as it was")
                return
            }
            // Notes: what waits for a restart (edits only a restart applies, steps refused).
            let notes = router.reload(from: fileSession.session, to: new)
            fileSession.session = new
            // Ready before the log line that says it is done (what a reader of the log waits for).
            notifier.ready(status: readyStatus)
            for note in notes { logger.warning("reload: \(note)") }
            logger.info("reloaded the session file", metadata: ["file": "\(sessionPath)"])
        }

        if let nsm {
            // Where surfaces find this instance: in the answer, the manager's list and its messages.
            let ports = "OSC port \(control.port)" + (http.map { ", HTTP port \($0.configuration.port)" } ?? ", HTTP off")
            nsm.reply(to: "/nsm/client/open", "opened \(sessionPath): \(ports)")
            nsm.label("OSC \(control.port)" + (http.map { " · HTTP \($0.configuration.port)" } ?? ""))
            for note in managed?.project.notes ?? [] { nsm.message(priority: 1, note) }
            nsm.message(priority: 1, "running as JACK client '\(router.jackClientName())': \(ports)")
            nsm.listen {
                do throws(StateFile.LoadError) {
                    try stateFile.save(router.currentSavedState())
                } catch {
                    return .failure(NSMClient.Failure(description: error.description))
                }
                return .success("saved \(stateFile.path)")
            }
        }

        // Not dispatchMain(): on Linux it leaves the main thread waiting in sigsuspend with every
        // signal unblocked, and SIGINT would then kill the process instead of reaching sigwait.
        stopRequested.wait()
        notifier.stopping()
        advertiser.stop()
        http?.stop()
        control.stop()
        router.stop()      // hands over a pending save
        remoteRoutes.stop()   // senders after the router: their ports going is not a route lost
        saves.sync {}      // and waits for it to be written
        // A write under way at stop that failed is handed over once more.
        if router.handOverUnsavedAfterStop() { saves.sync {} }
        if let failure = router.lastSaveFailure, failure.retrying {
            logger.error("stopping with the last changes unsaved: \(failure.reason)", metadata: ["file": "\(stateFile.path)"])
        }
        Foundation.exit(0)
    }
}
