import CJack

/// What JACK shares with its clients, read without asking the server (no answer to wait for):
/// the ports in the graph, their connections, pretty names and latencies.
extension JackClient {
    /// The pretty name of the port named `fullName`, if it has one.
    public func prettyName(of fullName: String) -> String? {
        guard let port = jack_port_by_name(handle, fullName) else { return nil }
        var value: UnsafeMutablePointer<CChar>?
        var type: UnsafeMutablePointer<CChar>?
        guard jack_get_property(jack_port_uuid(port), CJackShims_pretty_name_key(), &value, &type) == 0, let value else { return nil }
        defer {
            jack_free(value)
            if let type { jack_free(type) }
        }
        return String(cString: value)
    }

    /// The playback latency (frames) of what one of this client's outputs feeds: the range over
    /// the ports it is connected to, as JACK has them (0 when it feeds none). Read from the
    /// graph JACK shares with its clients, but JACK2 first waits for a graph change under way
    /// (about a period): call it when the graph changed, not for every status, and never on the
    /// process thread.
    public func downstreamPlaybackLatency(of port: JackPort) -> ClosedRange<UInt32> {
        guard isOpen else { return 0...0 }
        let range = JackHost.downstreamPlaybackLatency(of: port.pointer, client: handle)
        return range.min...max(range.min, range.max)
    }

    /// The playback latency range (frames) JACK reports for the port named `fullName`: how long
    /// until what it carries now is heard (the port looked up by name, then its latency read).
    public func playbackLatency(of fullName: String) -> ClosedRange<UInt32>? {
        guard let port = jack_port_by_name(handle, fullName) else { return nil }
        var range = jack_latency_range_t(min: 0, max: 0)
        jack_port_get_latency_range(port, JackPlaybackLatency, &range)
        return range.min...max(range.min, range.max)
    }

    /// The capture latency range (frames) JACK reports for the port named `fullName`: how long
    /// ago what it carries now entered the graph.
    public func captureLatency(of fullName: String) -> ClosedRange<UInt32>? {
        guard let port = jack_port_by_name(handle, fullName) else { return nil }
        var range = jack_latency_range_t(min: 0, max: 0)
        jack_port_get_latency_range(port, JackCaptureLatency, &range)
        return range.min...max(range.min, range.max)
    }

    /// Full names of the audio ports in the graph, in JACK's order, optionally only inputs or
    /// outputs. `pattern` is JACK's own regular expression filter (nil: all ports).
    public func ports(matching pattern: String? = nil, direction: Direction? = nil) -> [String] {
        let flags: UInt
        switch direction {
        case .input: flags = UInt(JackPortIsInput.rawValue)
        case .output: flags = UInt(JackPortIsOutput.rawValue)
        case nil: flags = 0
        }
        return Self.takeNames(jack_get_ports(handle, pattern, CJackShims_default_audio_type(), flags))
    }

    /// Whether a port of that full name exists in the graph.
    public func portExists(_ fullName: String) -> Bool {
        jack_port_by_name(handle, fullName) != nil
    }

    /// Full names of the ports connected to the port named `fullName`.
    public func connections(of fullName: String) -> [String] {
        guard let port = jack_port_by_name(handle, fullName) else { return [] }
        return Self.takeNames(jack_port_get_all_connections(handle, port))
    }

    /// Copies a NULL-terminated list of port names that JACK allocated, and frees it.
    fileprivate static func takeNames(_ list: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> [String] {
        guard let list else { return [] }
        defer { jack_free(list) }
        var names: [String] = []
        var i = 0
        while let entry = list[i] {
            names.append(String(cString: entry))
            i += 1
        }
        return names
    }
}
