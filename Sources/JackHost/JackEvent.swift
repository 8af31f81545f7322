/// Things JACK tells a client from its notification thread. Handlers only enqueue these; the
/// control thread acts on them.
public enum JackEvent: Sendable, Equatable {
    case portRegistered(String)
    /// A port went away; its name is empty when JACK could no longer tell it.
    case portUnregistered(String)
    case portsConnected(String, String)
    case portsDisconnected(String, String)
    case bufferSizeChanged(Int)
    case sampleRateChanged(Int)
    case xrun
    /// The server shut the client down or went away; the reason is JACK's text.
    case shutdown(reason: String)
}
