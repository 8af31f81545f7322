import CJack

/// Ports an active client on JACK2 no longer needs, kept instead of unregistered.
///
/// JACK2's libjack (1.9.21 and every release since 1.9.11, jackaudio/jack2#216) keeps a client's
/// own ports in a list that two threads use without a lock: the client's notification thread walks
/// it whenever JACK recomputes latencies (after any change to the graph, made by anyone, a period
/// later), and `jack_port_unregister` takes the port's node out of it, and frees it, on the
/// caller's thread before it asks the server. A walk standing on that node reads freed memory
/// and the process dies (a SIGSEGV inside libjack, seen here with apps registering and
/// unregistering while audio ran). Nothing outside libjack can lock that walk, and a client
/// gets no latency notification only while it is inactive; so an active client on JACK2 never
/// unregisters: a port it gives up is disconnected, loses its metadata, is renamed
/// `~spare_in_<k>` or `~spare_out_<k>` ('~' is in no app's or route's name) and kept, and the
/// next port registered in that direction is a spare renamed. So the client holds, in each
/// direction, as many ports as it ever held at once; spares leave with it (`close()` deactivates,
/// then unregisters). Other clients see a rename (JACK sends no registration for it). On
/// PipeWire, whose libjack locks its lists, and on an inactive client, ports are unregistered.
struct SparePorts {
    private(set) var ports: [(port: JackPort, direction: JackClient.Direction)] = []
    /// Names are never used twice: a spare's name is free the moment it is renamed.
    private var named = 0

    mutating func nextName(_ direction: JackClient.Direction) -> String {
        named += 1
        return "~spare_\(direction == .input ? "in" : "out")_\(named)"
    }

    mutating func keep(_ port: JackPort, _ direction: JackClient.Direction) { ports.append((port, direction)) }

    mutating func take(_ direction: JackClient.Direction) -> JackPort? {
        guard let index = ports.firstIndex(where: { $0.direction == direction }) else { return nil }
        return ports.remove(at: index).port
    }

    mutating func putBack(_ port: JackPort, _ direction: JackClient.Direction) { ports.insert((port, direction), at: 0) }

    mutating func remove(_ pointer: OpaquePointer) { ports.removeAll { $0.port.pointer == pointer } }
}

extension JackClient {
    /// Whether `unregister` keeps the port as a spare (see `SparePorts`).
    var keepsSpares: Bool { isActive && JackLibrary.loaded == .jack2 }

    /// Gives a spare of `direction` the name `shortName` (disconnected first: a patchbay may have
    /// connected it meanwhile), or nil when there is none. Throws, keeping the spare, when the
    /// name is taken or too long for JACK (its rename checks neither) or the server refuses.
    func reuseSpare(_ shortName: String, direction: Direction) throws(JackError) -> JackPort? {
        // A request would be refused without running: the spares stay as they are.
        if awaitingServer { throw notAnswering("register port '\(name):\(shortName)'") }
        guard let spare = spares.take(direction) else { return nil }
        let fullName = "\(name):\(shortName)"
        // jack_port_name_size() counts the terminating zero and one byte more than
        // jack_port_register accepts (JACK2 refuses 320 bytes of a 321 size; its rename would cut).
        guard !shortName.isEmpty, fullName.utf8.count < Int(jack_port_name_size()) - 1,
              jack_port_by_name(handle, fullName) == nil else {
            spares.putBack(spare, direction)
            throw .portRegistrationFailed(port: fullName)
        }
        // Not asked first (jack_port_connected reads the graph as of the last cycle, and would
        // miss a connection made since): one request, which does nothing when there are none.
        let client = handle
        let renamed: Int32
        do throws(JackError) {
            renamed = try ask("register port '\(fullName)' (a spare renamed)", {
                jack_port_disconnect(client, spare.pointer)
                return jack_port_rename(client, spare.pointer, shortName)
            }, late: { _ in spare.pointer })
        } catch {
            // Renamed or not, later: `settle` takes it back then.
            registered.removeAll { $0 == spare }
            throw error
        }
        guard renamed == 0 else {
            spares.putBack(spare, direction)
            throw .portRegistrationFailed(port: fullName)
        }
        let port = JackPort(pointer: spare.pointer, name: String(cString: jack_port_name(spare.pointer)))
        if let index = registered.firstIndex(of: spare) { registered[index] = port }
        return port
    }

    /// Keeps `port` (`registered[index]`) as a spare: disconnected, without its metadata (its
    /// pretty name, and whatever others set on it), renamed. A rename jackd refuses (it refuses
    /// none while it runs: only a server that has just gone away) would leave it holding a name an
    /// app may want back: then it is unregistered after all.
    /// A server that does not answer in time leaves the port to `settle`.
    func keepAsSpare(_ port: JackPort, at index: Int) {
        let direction: Direction = jack_port_flags(port.pointer) & Int32(bitPattern: JackPortIsInput.rawValue) != 0 ? .input : .output
        let client = handle
        let spareName = spares.nextName(direction)
        guard let code = try? ask("give up port '\(port.name)'", {
            jack_port_disconnect(client, port.pointer)
            let code = jack_port_rename(client, port.pointer, spareName)
            if code == 0 { jack_remove_properties(client, jack_port_uuid(port.pointer)) }
            return code
        }, late: { _ in port.pointer }) else {
            registered.remove(at: index)
            return
        }
        guard code == 0 else {
            registered.remove(at: index)
            _ = try? ask("unregister port '\(port.name)'") { jack_port_unregister(client, port.pointer) }
            return
        }
        let renamed = JackPort(pointer: port.pointer, name: String(cString: jack_port_name(port.pointer)))
        registered[index] = renamed
        spares.keep(renamed, direction)
    }

    /// The names of the spares kept, for diagnostics.
    public var spareNames: [String] { spares.ports.map(\.port.name) }

    /// How many ports this client holds, spares included (what counts against JACK's limits).
    public var portCount: Int { registered.count }
}
