import CJack
import Dispatch
import Engine

#if canImport(Glibc)
import Glibc
#endif

/// A JACK client: open, register ports, connect, run a process callback, close.
///
/// Every `jack_*` call of the project goes through this type. Use it from one thread (the control
/// thread); JACK calls the process callback on its own real-time thread and the notification
/// handler on its notification thread. Calls that wait for the server's answer run on a queue of
/// the client's own and are waited for up to `answerSeconds` (JackClient+Requests.swift).
public final class JackClient {
    public enum Direction: Sendable { case input, output }

    /// A process callback: frames in this cycle, the argument given at registration.
    public typealias ProcessCallback = @convention(c) (UInt32, UnsafeMutableRawPointer?) -> Int32

    /// The JACK port-buffer function in the engine's shape.
    public static let portBuffer: PortBufferFunction = { port, frames in
        jack_port_get_buffer(OpaquePointer(port), frames)
    }

    public let serverName: String

    /// The server a client joins when none is named: `$JACK_DEFAULT_SERVER`, else `default`.
    public static var defaultServerName: String { ProcessInfoServerName.current }
    private var client: OpaquePointer?
    private var context: Unmanaged<CallbackContext>?
    /// Where the info-shutdown callback leaves its flag and reason; freed in `deinit`.
    private let shutdownNotice: UnsafeMutablePointer<ShutdownNotice>
    /// Where the xrun and buffer-size callbacks leave what they report; freed in `deinit`.
    private let cycleNotes: UnsafeMutablePointer<CycleNotes>
    /// Watches the pipe the shutdown callback writes to, and sends `.serverShutDown` to `events`
    /// (only with `events`). Cancelled in `close()` once JACK can no longer call the callback;
    /// its cancel handler closes both ends of the pipe.
    private var shutdownWatch: DispatchSourceRead?
    private(set) var isActive = false
    /// Ports registered and not yet unregistered (spares included), unregistered one by one before closing.
    var registered: [JackPort] = []
    /// Ports given up on JACK2 while active, kept for the next registrations (`SparePorts`).
    var spares = SparePorts()
    /// Where the calls that wait for the server's answer run, each with a deadline
    /// (`ServerRequests`; JackClient+Requests.swift).
    let requests: ServerRequests
    /// Ports to give up once the server answers again (given up while it did not).
    var deferredGiveUps: [JackPort] = []
    /// A count that moves while the server runs this client's cycles (the owner's cycle counter),
    /// read while a call waits for the server: past `answerSeconds`, a server whose count moves
    /// is slow, not hung, and is waited for up to `patientSeconds`. Control thread only.
    public var serverProgress: (() -> UInt64)?
    /// `activate()` was called: JACK may have activated the client even if its answer came late.
    private var activationAsked = false

    /// The name JACK gave the client (it may differ from the one asked for only if JACK renames).
    public private(set) var name: String

    /// Opens a client on the named server (`nil`: `$JACK_DEFAULT_SERVER`, else `default`). Never
    /// starts a server. `events` is called on JACK's notification thread (and `.serverShutDown`
    /// from a queue of the client's own, maybe while that thread calls it); it should only enqueue.
    /// `reportsLatency`: the client tells JACK its ports' latencies itself (`setLatencies`), for
    /// outputs that hear their inputs late; only with `events`. When the server goes away,
    /// `events` gets `.serverShutDown` (from a queue of the client's own) once `shutdownReason`
    /// says why; without `events`, poll `shutdownReason`.
    /// `answerSeconds`: how long a call waits for the server's answer before it fails with
    /// `.serverNotAnswering`; `patientSeconds`, how long while `serverProgress` moves
    /// (JackClient+Requests.swift).
    public init(name: String, server: String? = nil, reportsLatency: Bool = false, answerSeconds: Double = 2,
                patientSeconds: Double = 10, events: (@Sendable (JackEvent) -> Void)? = nil) throws(JackError) {
        let resolvedServer = server ?? ProcessInfoServerName.current
        serverName = resolvedServer
        requests = ServerRequests(deadline: answerSeconds, patience: patientSeconds)
        var status = jack_status_t(rawValue: 0)
        // $JACK_DEFAULT_SERVER is named to the library, not left to it: PipeWire's libjack does
        // not read it (JACK2's does, to the same effect).
        guard let opened = CJackShims_client_open(name, server ?? ProcessInfoServerName.named, &status) else {
            let flags = JackStatus(status)
            if flags.contains(.serverFailed) || flags.contains(.serverError) {
                throw .serverUnavailable(server: resolvedServer, status: flags)
            }
            throw .openFailed(client: name, status: flags)
        }
        client = opened
        let wake = events == nil ? nil : Self.makeWakePipe()
        shutdownNotice = ShutdownNotice.make(wakeDescriptor: wake?.write ?? -1)
        cycleNotes = CycleNotes.make()
        self.name = String(cString: jack_get_client_name(opened))
        jack_on_info_shutdown(opened, infoShutdownCallback, UnsafeMutableRawPointer(shutdownNotice))
        // PipeWire's libjack up to 0.3.70 (Debian 12 has 0.3.65) calls only the plain callback;
        // JACK2 calls only the info one when both are set. Both record into the same notice, and
        // only the first call counts.
        jack_on_shutdown(opened, shutdownCallback, UnsafeMutableRawPointer(shutdownNotice))
        if let events {
            if let wake { shutdownWatch = Self.watch(wake, events: events) }
            let context = Unmanaged.passRetained(CallbackContext(client: opened, handler: events))
            self.context = context
            let arg = context.toOpaque()
            do {
                try check("port registration", jack_set_port_registration_callback(opened, portRegistrationCallback, arg))
                try check("port connect", jack_set_port_connect_callback(opened, portConnectCallback, arg))
                try check("port rename", jack_set_port_rename_callback(opened, portRenameCallback, arg))
                try check("buffer size", jack_set_buffer_size_callback(opened, bufferSizeCallback, UnsafeMutableRawPointer(cycleNotes)))
                try check("sample rate", jack_set_sample_rate_callback(opened, sampleRateCallback, arg))
                try check("xrun", jack_set_xrun_callback(opened, xrunCallback, UnsafeMutableRawPointer(cycleNotes)))
                if reportsLatency { try check("latency", jack_set_latency_callback(opened, latencyCallback, arg)) }
            } catch {
                close()
                throw error
            }
        }
    }

    deinit {
        close()
        // jack_client_close has returned: the info-shutdown, xrun and buffer-size callbacks can
        // no longer run.
        ShutdownNotice.destroy(shutdownNotice)
        CycleNotes.destroy(cycleNotes)
    }

    /// The xruns JACK reported since the last call (with `events`; JACK may report them on the
    /// process thread, so they are counted there and taken here).
    public func takeXruns() -> Int {
        Int(truncatingIfNeeded: cycleNotes.pointee.takeXruns())
    }

    /// The period JACK reported since the last call, if it did (with `events`; JACK2 reports
    /// it on the process thread as it starts, so it is stored there and taken here).
    public func takeBufferSize() -> Int? {
        cycleNotes.pointee.takeBufferSize().map(Int.init)
    }

    /// The queue that reads the shutdown pipe and calls `events` from it (as JACK's notification
    /// thread calls it for the other events).
    private static let shutdownQueue = DispatchQueue(label: "duckrouter.jack-shutdown")

    /// A non-blocking, close-on-exec pipe; nil when none can be made (then the loss is seen at the
    /// next poll of `shutdownReason`).
    private static func makeWakePipe() -> (read: Int32, write: Int32)? {
        // pipe2 is not in Swift's Glibc module; the two calls after leave a window in which a
        // fork could inherit the ends, which the project's child processes close (closefrom).
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        return (ends[0], ends[1])
    }

    /// Sends `.serverShutDown` to `events` when the shutdown callback writes its byte. The
    /// callback writes once, so the event is sent once.
    private static func watch(_ wake: (read: Int32, write: Int32), events: @escaping @Sendable (JackEvent) -> Void) -> DispatchSourceRead {
        let source = DispatchSource.makeReadSource(fileDescriptor: wake.read, queue: shutdownQueue)
        source.setEventHandler {
            var bytes = (UInt8(0), UInt8(0), UInt8(0), UInt8(0))
            guard withUnsafeMutableBytes(of: &bytes, { read(wake.read, $0.baseAddress, $0.count) }) > 0 else { return }
            events(.serverShutDown)
        }
        source.setCancelHandler {
            Glibc.close(wake.read)
            Glibc.close(wake.write)
        }
        source.resume()
        return source
    }

    private func check(_ what: String, _ code: Int32) throws(JackError) {
        if code != 0 { throw .callbackRegistrationFailed(what: what, code: code) }
    }

    var handle: OpaquePointer {
        guard let client else { preconditionFailure("JackClient used after close()") }
        return client
    }

    public var isOpen: Bool { client != nil }

    /// Why the JACK server shut this client down (JACK's own words), or nil while it is there.
    ///
    /// JACK's info-shutdown notification may run on its real-time thread, so it only stores a
    /// flag and the reason's bytes, and writes a byte to a pipe the client watches (which sends
    /// `.serverShutDown` to `events`). Read this from the control thread (a single atomic load
    /// while the server is there). Once it is non-nil the client is dead:
    /// ask nothing more of it but `close()`. It stays readable after `close()`.
    public var shutdownReason: String? { shutdownNotice.pointee.reason }

    public var sampleRate: Int { Int(jack_get_sample_rate(handle)) }
    public var bufferSize: Int { Int(jack_get_buffer_size(handle)) }

    /// The JACK process thread of this client (valid after `activate()`).
    public var processThread: pthread_t { jack_client_thread_id(handle) }

    /// Sets the process callback. Only before `activate()`.
    public func setProcessCallback(_ callback: ProcessCallback, argument: UnsafeMutableRawPointer?) throws(JackError) {
        try check("process", jack_set_process_callback(handle, callback, argument))
    }

    public func activate() throws(JackError) {
        let client = handle
        activationAsked = true
        let code = try ask("activate") { jack_activate(client) }
        if code != 0 { throw .activateFailed(client: name, code: code) }
        isActive = true
    }

    /// Stops the process callback; returns when no cycle is running. A server that does not
    /// answer within the deadline leaves the client active (`unansweredRequest` says so): close
    /// it off the calling thread.
    public func deactivate() {
        guard let client, isActive, (try? ask("deactivate", { jack_deactivate(client) })) != nil else { return }
        isActive = false
    }

    /// Deactivates and closes the client; safe to call twice.
    ///
    /// While the server is there, the client's ports are unregistered one by one first. JACK2's
    /// server sends a notification per port (and per port property) to every client during
    /// `jack_client_close`, the closing one included, after that client has stopped reading them:
    /// with a hundred ports the socket fills and the server blocks for good on its write, while
    /// the client waits for the server's answer (seen with jackd 1.9.21). Unregistered first,
    /// those notifications reach a client that still reads them.
    public func close() {
        // A request past its deadline still uses the client: the close waits for it (for good,
        // if the server never answers: close such a client off the control thread).
        requests.drain()
        if let client {
            // An activation answered late may have taken effect: deactivating an inactive client
            // does nothing.
            if isActive || activationAsked { jack_deactivate(client) }
            // The latency callback must not look at ports being unregistered, nor a range worked
            // out before be set on them; nothing queued may outlive the client.
            if let context = context?.takeUnretainedValue() {
                context.latency.withLock { $0 = LatencyPlan(generation: $0.generation &+ 1) }
                context.drain()
            }
            if !shutdownNotice.pointee.isServerGone {
                for port in registered.reversed() { jack_port_unregister(client, port.pointer) }
            }
            registered = []
            spares = SparePorts()
            deferredGiveUps = []
            jack_client_close(client)
            self.client = nil
            isActive = false
        }
        // jack_client_close has returned: no shutdown callback can begin; one under way (JACK2's
        // process thread, after a failure) is waited for before the pipe may close.
        shutdownNotice.pointee.waitForCallback()
        shutdownWatch?.cancel()
        shutdownWatch = nil
        context?.release()
        context = nil
    }

    /// Registers an audio port `shortName` on this client.
    public func registerAudioPort(_ shortName: String, direction: Direction) throws(JackError) -> JackPort {
        try settle()
        if let spare = try reuseSpare(shortName, direction: direction) { return spare }
        let flags = direction == .input ? JackPortIsInput.rawValue : JackPortIsOutput.rawValue
        let client = handle
        let registering = try ask("register port '\(name):\(shortName)'", {
            jack_port_register(client, shortName, CJackShims_default_audio_type(), UInt(flags), 0)
        }, late: { $0 })
        guard let port = registering else {
            throw .portRegistrationFailed(port: "\(name):\(shortName)")
        }
        let registeredPort = JackPort(pointer: port, name: String(cString: jack_port_name(port)))
        registered.append(registeredPort)
        return registeredPort
    }

    /// Unregisters a port: its name leaves the graph, with its connections. On JACK2, while the
    /// client is active, it is kept as a spare under another name instead (`SparePorts`: libjack
    /// would otherwise race its own notification thread). A port in the latency plan
    /// (`setLatencies`) must be taken out first.
    /// A port this client does not hold under that name (unregistered already, or given up and
    /// since reused under another) is left alone. With the server gone, the port is only forgotten.
    /// While the server does not answer, the port is given up once it answers again.
    public func unregister(_ port: JackPort) {
        guard registered.contains(port) else { return }
        if shutdownNotice.pointee.isServerGone {
            registered.removeAll { $0 == port }
            return
        }
        if (try? settle()) == nil {
            if !deferredGiveUps.contains(port) { deferredGiveUps.append(port) }
            return
        }
        giveUp(port)
    }

    /// Gives up a port this client holds (`registered`), the server answering so far.
    func giveUp(_ port: JackPort) {
        guard let index = registered.firstIndex(of: port) else { return }
        // A request would be refused without running: the port waits, still held.
        if awaitingServer {
            if !deferredGiveUps.contains(port) { deferredGiveUps.append(port) }
            return
        }
        if keepsSpares {
            keepAsSpare(port, at: index)
            return
        }
        registered.remove(at: index)
        let client = handle
        // Not answered: the port is forgotten here; it goes with the client if not before.
        _ = try? ask("unregister port '\(port.name)'") { jack_port_unregister(client, port.pointer) }
    }

    /// Sets the port's pretty name (JACK metadata `http://jackaudio.org/metadata/pretty-name`),
    /// what patchbays such as QjackCtl, Carla and RaySession show instead of the raw name.
    /// Returns false when the server refused (older servers without metadata).
    @discardableResult
    public func setPrettyName(_ port: JackPort, _ prettyName: String) -> Bool {
        let client = handle
        return (try? ask("set the pretty name of '\(port.name)'") {
            jack_set_property(client, jack_port_uuid(port.pointer), CJackShims_pretty_name_key(), prettyName, nil)
        }) == 0
    }

    /// What the latency callback reports (with `reportsLatency`): every output hears every input,
    /// each output up to `added` frames later. With `recompute`, JACK is asked to recompute every
    /// latency now (a server round trip that calls every client): only when what is added changes.
    /// Ports coming and going need none: JACK recomputes when they are connected or disconnected.
    ///
    /// `beyond`: frames that what an output feeds adds out of JACK's sight (a network bridge's far
    /// end, whose ports report none): that output's playback latency is what it feeds plus this,
    /// and the inputs' includes it, so players upstream can compensate.
    public func setLatencies(inputs: [JackPort], outputs: [(port: JackPort, added: UInt32)], beyond: [JackPort: UInt32] = [:],
                             recompute: Bool = false) {
        guard let context, client != nil else { return }
        var plan = LatencyPlan(inputs: inputs.map { UInt(bitPattern: $0.pointer) },
                               outputs: outputs.map { (UInt(bitPattern: $0.port.pointer), $0.added, beyond[$0.port] ?? 0) })
        let callbacks = context.takeUnretainedValue()
        callbacks.latency.withLock {
            plan.generation = $0.generation &+ 1
            $0 = plan
        }
        if recompute && isActive { _ = try? ask("recompute latencies") { callbacks.recompute() } }
    }

    /// Connects two ports by full name. Already connected counts as success.
    public func connect(_ source: String, to destination: String) throws(JackError) {
        let client = handle
        let code = try ask("connect '\(source)' to '\(destination)'") { jack_connect(client, source, destination) }
        if code != 0 && code != EEXIST { throw .connectFailed(source: source, destination: destination, code: code) }
    }

    public func disconnect(_ source: String, from destination: String) throws(JackError) {
        let client = handle
        let code = try ask("disconnect '\(source)' from '\(destination)'") { jack_disconnect(client, source, destination) }
        if code != 0 { throw .disconnectFailed(source: source, destination: destination, code: code) }
    }

    /// JACK's clock, in microseconds (`jack_get_time`): the clock frame times are measured on.
    public var microseconds: UInt64 { jack_get_time() }

    /// The frame time at a moment on JACK's clock (`jack_time_to_frames`).
    public func frameTime(atMicroseconds time: UInt64) -> UInt32 { jack_time_to_frames(handle, time) }

    /// The moment on JACK's clock of a frame time (`jack_frames_to_time`).
    public func microseconds(atFrameTime frame: UInt32) -> UInt64 { jack_frames_to_time(handle, frame) }

    /// The current JACK frame time (for measuring, not on the process path).
    public var frameTime: UInt32 { jack_frame_time(handle) }

    /// This client as an opaque pointer for `cycleStartFrame`, from a process callback.
    public var rawHandle: UnsafeMutableRawPointer { UnsafeMutableRawPointer(handle) }

    /// The frame time at the start of the current cycle (`jack_last_frame_time`); callable from a
    /// process callback with `rawHandle`.
    public static let cycleStartFrame: @convention(c) (UnsafeMutableRawPointer?) -> UInt32 = { client in
        jack_last_frame_time(OpaquePointer(client))
    }
}

/// A port this client registered.
public struct JackPort: Hashable, @unchecked Sendable {
    // jack_port_t pointers are stable until the port is unregistered; JackPort is only a handle.
    let pointer: OpaquePointer
    /// The full name, `client:port`.
    public let name: String

    /// The handle the engine hands back to `JackClient.portBuffer`.
    public var handle: PortHandle { PortHandle(UnsafeMutableRawPointer(pointer)) }
}

extension JackClient {
    /// The server `$JACK_DEFAULT_SERVER` names, unless it is unset, empty or `default`: what a
    /// client opened with no server name joins. For programs run as children with a JACK server
    /// option (PipeWire's libjack does not read the variable).
    public static var serverFromEnvironment: String? { ProcessInfoServerName.named }
}

/// The server name JACK will use when none is given.
enum ProcessInfoServerName {
    static var current: String { named ?? "default" }

    /// `$JACK_DEFAULT_SERVER` when it names a server other than `default`, else nil.
    static var named: String? {
        guard let value = getenv("JACK_DEFAULT_SERVER"), value.pointee != 0 else { return nil }
        let name = String(cString: value)
        return name == "default" ? nil : name
    }
}
