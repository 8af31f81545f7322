import JackHost
import Logging

/// The router's connections in the JACK graph: routes to their destination ports, the session's
/// input ports to the input route, each app's `connect` sources to its inputs (and, for exclusive
/// apps, nobody else's), and whether each route's device is there.
///
/// Owns: the names of ports JACK said were unregistered that may linger in its graph for a moment.
/// Must not touch: the policy, plans, or which ports exist (that is `PortInventory`'s); it is
/// handed the inventory to read. Control queue only.
struct Patchbay {
    let logger: Logger
    /// Ports JACK reported unregistered that may still be in its graph for a moment.
    private var unregisteredPorts: Set<String> = []

    init(logger: Logger) {
        self.logger = logger
    }

    /// A new client: nothing is known of the graph yet.
    mutating func reset() { unregisteredPorts = [] }

    mutating func portRegistered(_ name: String) { unregisteredPorts.remove(name) }

    /// JACK says so before the port has left the graph (jack_port_by_name still finds it), so the
    /// name counts as gone until it registers again.
    mutating func portUnregistered(_ name: String) { unregisteredPorts.insert(name) }

    /// Whether each route's destination ports all exist (a route without any always is).
    mutating func routePresence(_ routes: [RouteState], on client: JackClient) -> [Bool] {
        // Names JACK announced as gone that have left the graph by now need no remembering.
        unregisteredPorts = unregisteredPorts.filter { client.portExists($0) }
        return routes.map { route in route.destinations.allSatisfy { !unregisteredPorts.contains($0) && client.portExists($0) } }
    }

    /// Connects the session's input ports to the input route's ports, where they exist.
    func connectInputs(_ input: InputRoute, on client: JackClient, onlyPort newPort: String? = nil) {
        guard input.ports.count == input.sources.count else { return }
        for (k, source) in input.sources.enumerated() where newPort == nil || newPort == source {
            guard client.portExists(source) else {
                logger.warning("input port is missing; will connect when it appears", metadata: ["port": "\(source)"])
                continue
            }
            connect(source, input.ports[k].name, on: client, ["input": "\(source)"])
        }
    }

    /// Connects each route channel to its destination port, where that port exists.
    func connectRoutes(_ routes: [RouteState], on client: JackClient, onlyPort newPort: String? = nil) {
        for route in routes where route.ports.count == route.channelCount {
            for (k, destination) in route.destinations.enumerated() where newPort == nil || newPort == destination {
                guard client.portExists(destination) else {
                    logger.warning("route destination is missing; will connect when it appears",
                                   metadata: ["route": "\(route.name)", "port": "\(destination)"])
                    continue
                }
                connect(route.ports[k].name, destination, on: client, ["route": "\(route.name)"])
            }
        }
    }

    /// Connects the ports an app's `connect` patterns match to the app's inputs. Never removes a
    /// connection a person made, unless the app is exclusive.
    func connectSources(of app: AppState, on client: JackClient) {
        guard !app.connect.isEmpty, !app.ports.isEmpty else { return }
        let own = client.name + ":"
        let candidates = client.ports(direction: .output).filter { !$0.hasPrefix(own) }
        var sources: [String] = []
        for pattern in app.connect {
            for port in candidates where pattern.matches(port) && !sources.contains(port) { sources.append(port) }
        }
        let assignments = ChannelMap.sourceAssignments(sources: sources, channels: app.ports.count)
        for (source, channel) in assignments {
            connect(source, app.ports[channel].name, on: client, ["app": "\(app.name)"])
        }
        guard app.exclusive else { return }
        for (channel, port) in app.ports.enumerated() {
            for source in client.connections(of: port.name)
            where !assignments.contains(where: { $0.source == source && $0.channel == channel }) {
                do {
                    try client.disconnect(source, from: port.name)
                    logger.notice("removed a connection to an exclusive app", metadata: ["app": "\(app.name)", "source": "\(source)"])
                } catch {
                    logger.error("\(error)", metadata: ["app": "\(app.name)"])
                }
            }
        }
    }

    private func connect(_ source: String, _ destination: String, on client: JackClient, _ metadata: Logger.Metadata) {
        do {
            try client.connect(source, to: destination)
        } catch {
            logger.error("\(error)", metadata: metadata)
        }
    }
}
