import Foundation
import JackHost
import JackRig

/// The JACK side of the chaos run: a private server (jackd, or PipeWire with `JACK_IMPL=pipewire`),
/// one source client playing every app's tone, and one sink client per route. The run kills and
/// brings back each of them; the router only ever sees their ports come and go.
public final class ChaosStage: @unchecked Sendable {
    // @unchecked: used from the harness's thread only.
    public let server: JackServer
    public private(set) var source: TestClient?
    public private(set) var sinks: [String: ToneSink] = [:]
    public let sampleRate: Int
    /// The server's period now (the run changes it).
    public var period: Int

    public init(period: Int) throws {
        server = try JackServer(period: period)
        self.period = period
        sampleRate = server.sampleRate
        try startSource()
        for device in ChaosSession.devices { try plug(device.route) }
    }

    public var implementation: String { JackServer.Implementation.current.program }

    public func startSource() throws {
        let apps = ChaosSession.everyApp
        let outputs = apps.flatMap { app in app.sourcePorts.map { String($0.split(separator: ":").last!) } }
        let client = try TestClient(name: ChaosSession.source, server: server.name, outputs: outputs)
        for (index, app) in apps.enumerated() {
            let tone = Signals.sine(frequency: app.frequency, amplitude: ChaosSession.amplitude, sampleRate: sampleRate)
            client.setSignal(tone, output: 2 * index)
            client.setSignal(tone, output: 2 * index + 1)
        }
        source = client
    }

    public func killSource() {
        source?.close()
        source = nil
    }

    /// A route's device comes (back): its sink client and ports.
    public func plug(_ route: String) throws {
        guard sinks[route] == nil, let device = ChaosSession.devices.first(where: { $0.route == route }) else { return }
        sinks[route] = try ToneSink(name: device.client, server: server.name, inputs: ["in_1", "in_2"],
                                    stepLimit: ChaosSession.stepLimit(sampleRate: sampleRate))
    }

    /// A route's device is unplugged: its client closes and its ports vanish (what it saw until
    /// then is kept for `takeEvents`).
    public func unplug(_ route: String) {
        guard let sink = sinks.removeValue(forKey: route) else { return }
        sink.close()
        pending += sink.takeEvents().map { (route, $0) }
        closedLostEvents += sink.lostEvents
    }

    /// Events of sinks closed since the last `takeEvents`.
    private var pending: [(route: String, event: ToneSink.Event)] = []
    private var closedLostEvents = 0

    /// Events lost to a full ring in any sink, closed ones too.
    public var lostEvents: Int { closedLostEvents + sinks.values.reduce(0) { $0 + $1.lostEvents } }

    /// The server killed: every client of it is gone with it.
    public func killServer() {
        server.kill9()
        killSource()
        for route in Array(sinks.keys) { unplug(route) }
    }

    /// The server started again, then the source and every device in `routes`; returns when
    /// the server was launched.
    @discardableResult
    public func restartServer(devices routes: [String]) throws -> Date {
        let launched = try server.restart()
        try startSource()
        for route in routes { try plug(route) }
        return launched
    }

    /// Plays the tones of OSC-registered apps into their ports, as the programs behind them would
    /// once their ports appear: connects each source port to `<router>:<app>_in_<k>` if not yet.
    /// Returns whether it connected any: a tone joins mid-wave, a step at the sinks that is the
    /// program's and not the router's (an app already active is heard from the next cycle).
    @discardableResult
    public func connectRegistered(_ apps: [ChaosModel.App], routerClient: String = "duckrouter") -> Bool {
        guard let source else { return false }
        var connected = false
        for app in apps where !app.fromSession {
            for (index, port) in app.sourcePorts.enumerated() {
                let destination = "\(routerClient):\(app.name)_in_\(index + 1)"
                guard source.client.portExists(destination), !source.client.connections(of: port).contains(destination) else { continue }
                if (try? source.connect(port, to: destination)) != nil { connected = true }
            }
        }
        return connected
    }

    /// Every sink's events since the last call, by route.
    public func takeEvents() -> [(route: String, event: ToneSink.Event)] {
        defer { pending = [] }
        return pending + sinks.sorted { $0.key < $1.key }.flatMap { route, sink in sink.takeEvents().map { (route, $0) } }
    }

    public func stop() {
        // A server left frozen would hold every close: it goes on first.
        server.resume()
        killSource()
        for route in Array(sinks.keys) { unplug(route) }
        server.stop()
    }
}
