import Foundation

/// Remote routes (a speaker on another machine, through a JACK network engine) and netjack2's
/// settings, in a session file.
extension Validator {
    /// `{"name": …, "remote": {"engine": "netjack2", "peer": "stagebox"}, "channels": 2}`: the
    /// route's ports are the engine's ports for that far end; `ports` may not be given too.
    mutating func remoteRoute(name: String, _ fields: [String: JSONValue], _ path: String) -> Session.Route? {
        if fields["ports"] != nil {
            fail("\(path).ports", "a remote route's ports are its engine's (from 'remote'): give 'ports' or 'remote', not both")
            return nil
        }
        guard let value = required(fields, "remote", path),
              let remote = object(value, "\(path).remote", allowed: SessionLoader.fields["remote"]!) else { return nil }
        var channels = 2
        if let v = fields["channels"] {
            guard let count = integer(v, "\(path).channels", in: 1...Session.maximumChannels) else { return nil }
            channels = count
        }
        guard let engineValue = required(remote, "engine", "\(path).remote"),
              let engineName = string(engineValue, "\(path).remote.engine") else { return nil }
        guard let engine = Session.Remote.Engine(rawValue: engineName) else {
            let known = Session.Remote.Engine.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
            fail("\(path).remote.engine", "expected one of \(known), got '\(engineName)'")
            return nil
        }
        guard let peerValue = required(remote, "peer", "\(path).remote"),
              let peer = string(peerValue, "\(path).remote.peer") else { return nil }
        if peer.isEmpty || peer.contains(":") || peer.utf8.count > 63 {
            fail("\(path).remote.peer", "expected the name the far end joins under (a JACK client name: 1 to 63 bytes, no ':'), got '\(peer)'")
            return nil
        }
        let far = Session.Remote(engine: engine, peer: peer)
        var route = Session.Route(name: name, ports: far.ports(channels: channels))
        route.remote = far
        return route
    }

    /// `{"address": "10.0.0.1", "port": 19000}`: where netjack2's master side listens.
    mutating func netjack2(_ value: JSONValue) -> Session.NetJack2Settings {
        var settings = Session.NetJack2Settings()
        guard let fields = object(value, "netjack2", allowed: SessionLoader.fields["netjack2"]!) else { return settings }
        if let v = fields["address"], let address = string(v, "netjack2.address") {
            if Self.isIPAddress(address) {
                settings.address = address
            } else {
                fail("netjack2.address", "expected an IPv4 or IPv6 address (a multicast group, or this host's address), got '\(address)'")
            }
        }
        if let v = fields["port"], let port = integer(v, "netjack2.port", in: 1...65535) { settings.port = port }
        return settings
    }

    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}
