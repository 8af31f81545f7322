/// Things JACK tells a client from its notification thread. Handlers only enqueue these; the
/// control thread acts on them. What JACK may report on the process thread, where nothing may be
/// enqueued, is not among them: xruns and the period are taken with `JackClient.takeXruns` and
/// `takeBufferSize`, and the server going away comes as `.serverShutDown` from a queue of the
/// client's own once `JackClient.shutdownReason` says why.
public enum JackEvent: Sendable, Equatable {
    case portRegistered(String)
    /// A port went away; its name is empty when JACK could no longer tell it.
    case portUnregistered(String)
    case portsConnected(String, String)
    case portsDisconnected(String, String)
    case sampleRateChanged(Int)
    /// JACK worked the client's playback latencies out again (with `reportsLatency`): what its
    /// outputs feed may report other latencies now.
    case latenciesChanged
    /// The server shut the client down (`JackClient.shutdownReason` says why): the client is dead,
    /// ask nothing more of it but `close()`.
    case serverShutDown
}
