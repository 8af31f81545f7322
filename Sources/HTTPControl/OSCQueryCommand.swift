import Foundation

/// The JSON text frames of OSCQuery's WebSocket (OSCQueryProposal, "Listening"):
/// `{"COMMAND": "LISTEN", "DATA": "/path"}` and `IGNORE` from a client; `PATH_ADDED`,
/// `PATH_REMOVED` from the server, and our `ERROR` (DATA: path and message) when a client's
/// command cannot be followed.
///
/// Pure: decoding takes any text a peer sends (checked by the fuzz target) and never traps.
public enum OSCQueryCommand: Equatable, Sendable {
    case listen(String)
    case ignore(String)

    /// The longest path taken; longer ones are refused before they are looked up.
    static let maximumPathBytes = 1024

    /// A client's command, or why it is not one.
    public static func decode(_ text: String) -> Result<OSCQueryCommand, OSCQueryCommandError> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]),
              let fields = object as? [String: Any] else {
            return .failure(OSCQueryCommandError("not a JSON object: expected {\"COMMAND\": \"LISTEN\", \"DATA\": \"/path\"}"))
        }
        guard let command = fields["COMMAND"] as? String else {
            return .failure(OSCQueryCommandError("COMMAND is missing or not a string"))
        }
        guard let path = fields["DATA"] as? String else {
            return .failure(OSCQueryCommandError("DATA is missing or not a string (an OSC path)"))
        }
        guard path.hasPrefix("/"), path.utf8.count <= maximumPathBytes else {
            return .failure(OSCQueryCommandError("DATA must be an OSC path of at most \(maximumPathBytes) bytes, starting with /"))
        }
        switch command {
        case "LISTEN": return .success(.listen(path))
        case "IGNORE": return .success(.ignore(path))
        default:
            return .failure(OSCQueryCommandError("unknown COMMAND '\(command.prefix(64))': expected LISTEN or IGNORE"))
        }
    }

    /// A server message: `{"COMMAND": command, "DATA": data}`.
    static func message(_ command: String, _ data: Any) -> String {
        String(decoding: OSCQueryJSON.data(["COMMAND": command, "DATA": data]), as: UTF8.self)
    }
}

/// Why a text frame is not an OSCQuery command.
public struct OSCQueryCommandError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
