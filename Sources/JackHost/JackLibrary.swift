import CJack
import Glibc

/// Which JACK implementation this process talks to: the libjack it loaded is JACK2's own or
/// PipeWire's (`pipewire-jack`, which replaces it for every JACK program through
/// `LD_LIBRARY_PATH=/usr/lib/<arch>/pipewire-0.3/jack`, `pw-jack`, or the system's libjack).
/// Messages name the server a user actually has to start.
public enum JackLibrary: String, Sendable {
    case jack2 = "JACK2"
    case pipewire = "PipeWire"

    /// Decided once: by what the library says it is (`jack_get_version_string`), which holds
    /// wherever it is installed (Arch puts PipeWire's libjack at /usr/lib/libjack.so.0, others
    /// link it over JACK2's); failing that, by the file `jack_client_open` was loaded from.
    public static let loaded: JackLibrary = {
        let version = CJackShims_version_string().map { String(cString: $0) }
        let file = CJackShims_library_path().map { String(cString: $0) }
        return identify(version: version, file: file)
    }()

    /// PipeWire's libjack says "3.0.0.0 (using PipeWire 0.3.65)"; a version string that says
    /// nothing of it (JACK2's "1.9.21"), or none, falls back to the file's path
    /// (…/pipewire-0.3/jack/libjack.so.0).
    public static func identify(version: String?, file: String?) -> JackLibrary {
        if let version, version.contains("PipeWire") { return .pipewire }
        return file?.contains("/pipewire-") == true ? .pipewire : .jack2
    }

    /// How to start a server for `server` (a name JACK was asked for).
    func howToStart(_ server: String) -> String {
        switch self {
        case .jack2: "start one, e.g. `jackd -n \(server) -d dummy`"
        case .pipewire: "this libjack is PipeWire's: start PipeWire (`systemctl --user start pipewire`, or run `pipewire`)"
        }
    }
}
