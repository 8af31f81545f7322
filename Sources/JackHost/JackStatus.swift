import CJack

/// `jack_status_t` as a Swift option set, with the words JACK's documentation uses.
public struct JackStatus: OptionSet, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    init(_ status: jack_status_t) { rawValue = status.rawValue }

    public static let failure = JackStatus(JackFailure)
    public static let invalidOption = JackStatus(JackInvalidOption)
    public static let nameNotUnique = JackStatus(JackNameNotUnique)
    public static let serverStarted = JackStatus(JackServerStarted)
    public static let serverFailed = JackStatus(JackServerFailed)
    public static let serverError = JackStatus(JackServerError)
    public static let noSuchClient = JackStatus(JackNoSuchClient)
    public static let loadFailure = JackStatus(JackLoadFailure)
    public static let initFailure = JackStatus(JackInitFailure)
    public static let shmFailure = JackStatus(JackShmFailure)
    public static let versionError = JackStatus(JackVersionError)
    public static let backendError = JackStatus(JackBackendError)
    public static let clientZombie = JackStatus(JackClientZombie)

    public var description: String {
        let names: [(JackStatus, String)] = [
            (.failure, "failure"), (.invalidOption, "invalid option"), (.nameNotUnique, "name not unique"),
            (.serverStarted, "server started"), (.serverFailed, "could not connect to the server"),
            (.serverError, "server error"), (.noSuchClient, "no such client"), (.loadFailure, "load failure"),
            (.initFailure, "init failure"), (.shmFailure, "shared memory failure"),
            (.versionError, "protocol version mismatch"), (.backendError, "backend error"),
            (.clientZombie, "client zombified"),
        ]
        let present = names.filter { contains($0.0) }.map(\.1)
        return present.isEmpty ? "ok" : present.joined(separator: ", ")
    }
}
