import CJack

/// Internal clients: server plug-ins (netjack2's `netmanager`) that run inside the JACK server,
/// loaded by a client. Each call is a round trip to the server: never on the
/// process thread.
extension JackClient {
    /// What `ensureInternalClient` found or did.
    public enum InternalClientOutcome: Equatable, Sendable {
        /// The server already runs one of that name (loaded by someone else, or by us earlier):
        /// left alone.
        case alreadyRunning
        /// Loaded now (JACK's handle of it).
        case loaded(handle: UInt64)
        /// The server could not load it (JACK's status; e.g. a server without that plug-in, or
        /// PipeWire, whose JACK has no internal clients).
        case failed(JackStatus)
    }

    /// Loads the plug-in `object` (e.g. "netmanager") as the internal client `name` with
    /// `arguments`, unless the server already has an internal client of that name.
    /// A server that does not answer in time: `.failed` with JACK's failure flag (what it does
    /// when it answers later stays done).
    public func ensureInternalClient(name: String, object: String, arguments: String) -> InternalClientOutcome {
        let client = handle
        let outcome = try? ask("load the internal client '\(name)'") { () -> InternalClientOutcome in
            var status = jack_status_t(rawValue: 0)
            if jack_internal_client_handle(client, name, &status) != 0 { return .alreadyRunning }
            status = jack_status_t(rawValue: 0)
            let loaded = CJackShims_internal_client_load(client, name, object, arguments, &status)
            if loaded == 0 || status.rawValue & JackFailure.rawValue != 0 {
                return .failed(JackStatus(status.rawValue == 0 ? JackFailure : status))
            }
            return .loaded(handle: loaded)
        }
        return outcome ?? .failed(JackStatus(JackFailure))
    }
}
