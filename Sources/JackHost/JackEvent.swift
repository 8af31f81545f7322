/// Things JACK tells a client from its notification thread. Handlers only enqueue these; the
/// control thread acts on them. The server going away is not one of them: JACK may report that
/// on its process thread, where nothing may be enqueued; poll `JackClient.shutdownReason`.
public enum JackEvent: Sendable, Equatable {
    case portRegistered(String)
    /// A port went away; its name is empty when JACK could no longer tell it.
    case portUnregistered(String)
    case portsConnected(String, String)
    case portsDisconnected(String, String)
    case bufferSizeChanged(Int)
    case sampleRateChanged(Int)
    case xrun
    /// JACK worked the client's playback latencies out again (with `reportsLatency`): what its
    /// outputs feed may report other latencies now.
    case latenciesChanged
    /// The server shut the client down (`JackClient.shutdownReason` says why): the client is dead,
    /// ask nothing more of it but `close()`.
    case serverShutDown
}
