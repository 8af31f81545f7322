import CJack
import Glibc

/// Which JACK implementation this process talks to: the libjack it loaded is JACK2's own or
/// PipeWire's (`pipewire-jack`, which replaces it for every JACK program through
/// `LD_LIBRARY_PATH=/usr/lib/<arch>/pipewire-0.3/jack`, `pw-jack`, or the system's libjack).
/// Messages name the server a user actually has to start.
public enum JackLibrary: String, Sendable {
    case jack2 = "JACK2"
    case pipewire = "PipeWire"

    /// Decided once, from the file `jack_client_open` was loaded from.
    public static let loaded: JackLibrary = {
        guard let file = CJackShims_library_path() else { return .jack2 }
        return String(cString: file).contains("/pipewire-") ? .pipewire : .jack2
    }()

    /// How to start a server for `server` (a name JACK was asked for).
    func howToStart(_ server: String) -> String {
        switch self {
        case .jack2: "start one, e.g. `jackd -n \(server) -d dummy`"
        case .pipewire: "this libjack is PipeWire's: start PipeWire (`systemctl --user start pipewire`, or run `pipewire`)"
        }
    }
}
