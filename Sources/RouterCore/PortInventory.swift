import Engine
import JackHost
import SessionStore

/// The router's JACK ports and meter slots: each app's inputs (and capture outputs), each route's
/// outputs, the input route, and the ports of removed apps that still fade.
///
/// Owns: those records and the meter-slot allocators. Must not touch: the policy, plans, the
/// patchbay (connections are `Patchbay`'s). A value type: a change transaction keeps a copy and,
/// when it rolls back, puts the copy back and unregisters only the ports registered since
/// (`registeredSince`), never ports that were taken back from a fading app. Control queue only.
struct PortInventory {
    var apps: [AppState] = []
    var routes: [RouteState] = []
    var input = InputRoute()
    private(set) var retiring: [RetiringApp] = []
    /// Whether removed apps' ports wait for `takeRetired`.
    var isRetiring: Bool { !retiring.isEmpty }
    private var inputSlots: SlotAllocator
    private var outputSlots: SlotAllocator
    /// Ports this inventory registered since `beginJournal()`, for a rollback to unregister.
    private(set) var registeredSince: [JackPort] = []
    /// The serial of the next volume change (`StageChange`): each differs from every one before.
    private var nextStageSerial: UInt32 = 1

    /// A volume change of `rampFrames` along `curve`, with a serial of its own.
    mutating func stageChange(rampFrames: Int32, curve: GainCurve) -> StageChange {
        defer { nextStageSerial &+= 1 }
        return StageChange(rampFrames: rampFrames, curve: curve, serial: nextStageSerial)
    }

    init(maxInputChannels: Int, maxOutputChannels: Int) {
        inputSlots = SlotAllocator(capacity: maxInputChannels)
        outputSlots = SlotAllocator(capacity: maxOutputChannels)
    }

    func appIndex(_ name: String) -> Int? { apps.firstIndex { $0.name == name } }
    func routeIndex(_ name: String) -> Int? { routes.firstIndex { $0.name == name } }

    mutating func beginJournal() { registeredSince = [] }

    /// Meter slots taken, inputs and outputs (retiring apps' included).
    var slotsInUse: (inputs: Int, outputs: Int) { (inputSlots.inUse, outputSlots.inUse) }

    // MARK: - Session setup (no client yet)

    mutating func addInput(sources: [String]) throws(RouterError) {
        guard let slots = inputSlots.take(sources.count) else { throw .capacity("the input needs \(sources.count) channels; the engine has \(inputSlots.available) left") }
        input = InputRoute(sources: sources, ports: [], slots: slots)
    }

    mutating func addRoute(_ route: Session.Route, gain: Float) throws(RouterError) {
        guard let slots = outputSlots.take(route.channelCount) else {
            throw .capacity("route '\(route.name)' needs \(route.channelCount) output channels; the engine has \(outputSlots.available) left")
        }
        var state = RouteState(name: route.name, channelCount: route.channelCount, meterSlots: slots,
                               destinations: route.ports, gain: gain, lookahead: route.lookahead)
        if let latency = route.unseenLatency { state.beyondMs = latency }
        if route.farEndWatched { state.farEndAnswers = false }
        routes.append(state)
    }

    // MARK: - Registering on a client

    /// Registers every port on a new client: the input route, each app's inputs (and capture
    /// outputs for recording apps), each route's outputs. Meter slots stay as they were.
    mutating func registerAll(on client: JackClient, recordingApps: Set<String>) throws {
        input.ports = try input.sources.indices.map { n in try register(on: client, "input_\(n + 1)", .input) }
        Self.setPrettyNames(input.ports, "input", on: client)
        for index in apps.indices {
            try registerAppPorts(index, on: client, records: recordingApps.contains(apps[index].name))
        }
        for index in routes.indices {
            routes[index].ports = try (1...routes[index].channelCount).map { n in
                try register(on: client, "\(routes[index].name)_out_\(n)", .output)
            }
            Self.setPrettyNames(routes[index].ports, routes[index].name, on: client)
        }
    }

    /// Forgets every port (they died with the client). Slots, gains and records stay.
    mutating func forgetPorts() {
        for index in apps.indices {
            apps[index].ports = []
            apps[index].capturePorts = []
        }
        for index in retiring.indices {
            retiring[index].ports = []
            retiring[index].capturePorts = []
        }
        for index in routes.indices { routes[index].ports = [] }
        input.ports = []
    }

    private mutating func register(on client: JackClient, _ name: String, _ direction: JackClient.Direction) throws -> JackPort {
        let port = try client.registerAudioPort(name, direction: direction)
        registeredSince.append(port)
        return port
    }

    /// Registers an app's `<app>_in_<n>` ports (and its capture outputs when it records) when it
    /// has none yet. `reusing`: ports of channels taken back from a retiring app of that name.
    private mutating func registerAppPorts(_ index: Int, on client: JackClient, records: Bool, reusing: [JackPort?] = []) throws {
        guard apps[index].ports.isEmpty else { return }
        let name = apps[index].name
        var ports: [JackPort] = []
        for n in 1...apps[index].channelCount {
            if n <= reusing.count, let port = reusing[n - 1] {
                ports.append(port)
            } else {
                ports.append(try register(on: client, "\(name)_in_\(n)", .input))
            }
        }
        Self.setPrettyNames(ports, name, on: client)
        apps[index].ports = ports
        if !apps[index].captureSlots.isEmpty || records {
            try addCapturePorts(toApp: index, on: client)
        }
    }

    /// Gives a recording app its capture outputs `<app>_capture_<n>`, one per input channel (none
    /// when the session has no input), keeping the slots it had before a reconnect.
    mutating func addCapturePorts(toApp index: Int, on client: JackClient) throws {
        guard !input.sources.isEmpty, apps[index].capturePorts.isEmpty else { return }
        let reuse = apps[index].captureSlots.count == input.sources.count
        guard reuse || outputSlots.available >= input.sources.count else {
            throw RouterError.capacity("'\(apps[index].name)' needs \(input.sources.count) capture outputs; the engine has \(outputSlots.available) left")
        }
        var ports: [JackPort] = []
        do {
            for n in 1...input.sources.count { ports.append(try register(on: client, "\(apps[index].name)_capture_\(n)", .output)) }
        } catch {
            // None of them stays: a half set would hold its names for good.
            for port in ports { client.unregister(port) }
            registeredSince.removeAll { ports.contains($0) }
            throw error
        }
        Self.setPrettyNames(ports, "\(apps[index].name) capture", on: client)
        apps[index].capturePorts = ports
        if !reuse { apps[index].captureSlots = outputSlots.take(ports.count)! }
    }

    // MARK: - Apps coming and going

    /// Adds an app with its meter slots and, while the server is there (`client`), its input ports
    /// `<app>_in_1…`. It starts silent: the policy opens it when it is activated.
    ///
    /// An app removed moments ago still owns its port names and slots while it fades: a new app of
    /// that name takes them back, channel for channel (JACK would refuse the names otherwise). Its
    /// channels beyond the new count go on retiring; channels beyond the old count are new.
    /// On failure the inventory may be half changed: the transaction puts its copy back.
    mutating func addApp(_ name: String, channelCount: Int, connect: [PortPattern], on client: JackClient?, records: Bool) throws {
        let reclaimed = retiring.indices.filter { retiring[$0].name == name }
        var ports: [JackPort?] = []
        var slots: [Int32] = []
        var capturePorts: [JackPort] = []
        var captureSlots: [Int32] = []
        var surplus = RetiringApp(name: name, firstChannel: channelCount, ports: [], meterSlots: [])
        // Their channels together are 0..<n (a removed app, and what it once dropped). A piece
        // retired before the server went away has no ports left (their names are free). Pieces of
        // one name are all with ports or all without.
        for piece in reclaimed.map({ retiring[$0] }).sorted(by: { $0.firstChannel < $1.firstChannel }) {
            for (k, slot) in piece.meterSlots.enumerated() {
                let port = k < piece.ports.count ? piece.ports[k] : nil
                if piece.firstChannel + k < channelCount {
                    slots.append(slot)
                    ports.append(port)
                } else {
                    surplus.meterSlots.append(slot)
                    if let port { surplus.ports.append(port) }
                }
            }
            if piece.firstChannel == 0 {
                capturePorts = piece.capturePorts
                captureSlots = piece.captureSlots
            }
        }
        let needed = channelCount - slots.count
        guard let fresh = inputSlots.take(needed) else {
            throw RouterError.capacity("'\(name)' needs \(needed) more input channels; the engine has \(inputSlots.available) left")
        }
        retiring = retiring.enumerated().filter { !reclaimed.contains($0.offset) }.map(\.element)
        if !surplus.meterSlots.isEmpty { retiring.append(surplus) }
        apps.append(AppState(name: name, channelCount: channelCount, meterSlots: slots + fresh,
                             capturePorts: capturePorts, captureSlots: captureSlots, connect: connect))
        if let client { try registerAppPorts(apps.count - 1, on: client, records: records, reusing: ports) }
    }

    /// A removed app: its ports and slots go on retiring until no plan reads them.
    mutating func retire(_ name: String) {
        guard let index = appIndex(name) else { return }
        let app = apps.remove(at: index)
        retiring.append(RetiringApp(name: app.name, ports: app.ports, meterSlots: app.meterSlots,
                                    capturePorts: app.capturePorts, captureSlots: app.captureSlots))
    }

    /// After a plan was published: retiring apps none of whose slots that plan uses are stamped
    /// with its generation.
    mutating func noteCleared(inPlan generation: UInt64, slotsInUse: (inputs: Set<Int32>, outputs: Set<Int32>)) {
        for index in retiring.indices where retiring[index].clearedInPlan == nil {
            if !retiring[index].meterSlots.contains(where: slotsInUse.inputs.contains)
                && !retiring[index].captureSlots.contains(where: slotsInUse.outputs.contains) {
                retiring[index].clearedInPlan = generation
            }
        }
    }

    /// Takes out the retiring apps whose clearing plan the audio thread has adopted (no cycle
    /// reads their ports again) and frees their slots. Returns their ports, for the caller to
    /// unregister.
    mutating func takeRetired(adopted: UInt64) -> [JackPort] {
        let done = retiring.filter { app in app.clearedInPlan.map { adopted >= $0 } ?? false }
        guard !done.isEmpty else { return [] }
        retiring.removeAll { app in app.clearedInPlan.map { adopted >= $0 } ?? false }
        for app in done {
            inputSlots.give(app.meterSlots)
            outputSlots.give(app.captureSlots)
        }
        return done.flatMap { $0.ports + $0.capturePorts }
    }

    /// Every port this router has (for latency reports), retiring ones included.
    var allInputPorts: [JackPort] { input.ports + apps.flatMap(\.ports) + retiring.flatMap(\.ports) }
    var allCapturePorts: [JackPort] { apps.flatMap(\.capturePorts) + retiring.flatMap(\.capturePorts) }

    // MARK: - Names

    /// What patchbays show for channel `n` (from 1) of `count`: "music L"/"music R" for a pair,
    /// "nav" for one channel, "surround 3" otherwise.
    static func prettyName(_ base: String, channel n: Int, of count: Int) -> String {
        switch count {
        case 1: base
        case 2: "\(base) \(n == 1 ? "L" : "R")"
        default: "\(base) \(n)"
        }
    }

    private static func setPrettyNames(_ ports: [JackPort], _ base: String, on client: JackClient) {
        for (k, port) in ports.enumerated() { client.setPrettyName(port, prettyName(base, channel: k + 1, of: ports.count)) }
    }
}
