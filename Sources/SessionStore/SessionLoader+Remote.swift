import Foundation

/// Remote routes (a speaker on another machine, through a JACK network engine) and netjack2's
/// settings, in a session file.
extension Validator {
    /// `{"name": …, "remote": {"engine": "netjack2", "peer": "stagebox"}, "channels": 2}`, or
    /// `"remote": {"engine": "zita-njbridge", "host": "10.0.0.2", "port": 30123}`: the route's
    /// ports are the engine's ports for that far end; `ports` may not be given too.
    mutating func remoteRoute(name: String, _ fields: [String: JSONValue], _ path: String) -> Session.Route? {
        if fields["ports"] != nil {
            fail("\(path).ports", "a remote route's ports are its engine's (from 'remote'): give 'ports' or 'remote', not both")
            return nil
        }
        guard let value = required(fields, "remote", path),
              let remote = object(value, "\(path).remote", allowed: nil) else { return nil }
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
        let far: Session.Remote
        switch engine {
        case .netjack2:
            _ = object(value, "\(path).remote", allowed: SessionLoader.fields["remote"]!)
            guard let peerValue = required(remote, "peer", "\(path).remote"),
                  let peer = clientName(peerValue, "\(path).remote.peer", "the name the far end joins under") else { return nil }
            far = .netjack2(peer: peer)
        case .zitaNjbridge:
            _ = object(value, "\(path).remote", allowed: SessionLoader.fields["remote zita-njbridge"]!)
            guard let bridge = bridge(remote, route: name, "\(path).remote") else { return nil }
            far = .zitaNjbridge(bridge)
        }
        var route = Session.Route(name: name, ports: far.ports(channels: channels))
        route.remote = far
        return route
    }

    /// zita-njbridge's fields: `host` and `port` (required), `format`, `client`, `watch`, `latency`.
    private mutating func bridge(_ fields: [String: JSONValue], route: String, _ path: String) -> Session.Remote.Bridge? {
        guard let hostValue = required(fields, "host", path), let host = string(hostValue, "\(path).host"),
              let portValue = required(fields, "port", path), let port = integer(portValue, "\(path).port", in: 1...65535) else { return nil }
        guard !host.hasPrefix("-"), Self.isIPAddress(host) || Self.isHostName(host) else {
            fail("\(path).host", "expected the far host's address or name (where zita-n2j listens), got '\(host)'")
            return nil
        }
        var bridge = Session.Remote.Bridge(host: host, port: port, client: "j2n-\(route)")
        if let v = fields["format"], let text = string(v, "\(path).format") {
            if let format = Session.Remote.Bridge.SampleFormat(rawValue: text) {
                bridge.format = format
            } else {
                let known = Session.Remote.Bridge.SampleFormat.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
                fail("\(path).format", "expected one of \(known), got '\(text)'")
            }
        }
        if let v = fields["client"], let client = clientName(v, "\(path).client", "the JACK client name of the sender") {
            bridge.client = client
        }
        switch fields["watch"] {
        case nil: break
        case .bool(false)?: bridge.watch = nil
        case let v?:
            if case .number = v {
                if let watch = integer(v, "\(path).watch", in: 1...65535) { bridge.watch = watch }
            } else {
                fail("\(path).watch", "expected the far duckrouter's OSC port (1 to 65535), or false to trust the sender alone; got \(v.kind)")
            }
        }
        if let v = fields["latency"], let latency = number(v, "\(path).latency", in: 0...2000, unit: "ms") {
            bridge.latency = latency
        }
        // A group's members do not answer /ping sent to the group (none joins it for OSC).
        if bridge.watch != nil && Self.isMulticast(host) {
            fail("\(path).watch", "'\(host)' is a multicast group, whose receivers cannot be asked /ping there: give \"watch\": false")
        }
        return bridge
    }

    static func isMulticast(_ text: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return (UInt32(bigEndian: v4.s_addr) >> 28) == 0xE }
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { $0[0] == 0xFF } }
        return false
    }

    /// A JACK client name: 1 to 63 bytes, no ':'.
    private mutating func clientName(_ value: JSONValue, _ path: String, _ what: String) -> String? {
        guard let name = string(value, path) else { return nil }
        if name.isEmpty || name.contains(":") || name.utf8.count > 63 {
            fail(path, "expected \(what) (a JACK client name: 1 to 63 bytes, no ':'), got '\(name)'")
            return nil
        }
        return name
    }

    static func isHostName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 253 && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }
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
