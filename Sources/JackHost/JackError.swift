/// What went wrong talking to JACK, with the names involved.
public enum JackError: Error, Equatable, CustomStringConvertible {
    /// No JACK server is running under that name (or JACK refused the connection).
    case serverUnavailable(server: String, status: JackStatus)
    case openFailed(client: String, status: JackStatus)
    case portRegistrationFailed(port: String)
    case connectFailed(source: String, destination: String, code: Int32)
    case disconnectFailed(source: String, destination: String, code: Int32)
    case activateFailed(client: String, code: Int32)
    case callbackRegistrationFailed(what: String, code: Int32)
    /// The server has not answered a request for that long (frozen, or hung in its driver):
    /// nothing was asked of it, or what was asked is put right when it answers.
    case serverNotAnswering(request: String, seconds: Double)

    public var description: String {
        switch self {
        case let .serverUnavailable(server, status):
            switch JackLibrary.loaded {
            case .jack2: "no JACK server named '\(server)' is running (\(status)); \(JackLibrary.jack2.howToStart(server))"
            case .pipewire: "PipeWire is not running (\(status)); \(JackLibrary.pipewire.howToStart(server))"
            }
        case let .openFailed(client, status):
            "could not open JACK client '\(client)': \(status)"
        case let .portRegistrationFailed(port):
            "could not register JACK port '\(port)'"
        case let .connectFailed(source, destination, code):
            "could not connect '\(source)' to '\(destination)' (JACK error \(code))"
        case let .disconnectFailed(source, destination, code):
            "could not disconnect '\(source)' from '\(destination)' (JACK error \(code))"
        case let .activateFailed(client, code):
            "could not activate JACK client '\(client)' (JACK error \(code))"
        case let .callbackRegistrationFailed(what, code):
            "could not set the JACK \(what) callback (JACK error \(code))"
        case let .serverNotAnswering(request, seconds):
            "the JACK server has not answered for \(Double(Int((seconds * 10).rounded())) / 10) s (to \(request)): it is frozen, hung or overloaded"
        }
    }
}
