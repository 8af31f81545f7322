import JackHost
import Policy

/// Why a router request was refused. A refused request changes nothing.
public enum RouterError: Error, Equatable, CustomStringConvertible {
    case jack(JackError)
    case unknownApp(String)
    case unknownRoute(String)
    /// A value outside what the setting accepts (NaN, infinity, out of range).
    case badValue(setting: String, value: Double, expected: String)
    /// The plan could not be built (engine capacity); the previous mix keeps playing.
    case capacity(String)
    /// The audio-session policy refused the event; its code is the OSC error code.
    case policy(PolicyError)
    /// A change of a batch (an OSC bundle) was refused, so none of the batch applied.
    case batch(index: Int, PolicyError)
    /// The router has stopped (the JACK server went away, or it was shut down).
    case stopped

    public var description: String {
        switch self {
        case let .jack(error): error.description
        case let .unknownApp(name): "no app named '\(name)'"
        case let .unknownRoute(name): "no route named '\(name)'"
        case let .badValue(setting, value, expected): "\(setting): expected \(expected), got \(value)"
        case let .capacity(message): message
        case let .policy(error): error.message
        case let .batch(index, error): "change \(index + 1) of the batch was refused, so none applied: \(error.message)"
        case .stopped: "the router has stopped"
        }
    }
}

extension RouterError {
    /// A policy refusal of change `index` of `count`: the change's own error when it came alone,
    /// `.batch` naming it otherwise.
    static func refusal(_ error: PolicyError, change index: Int, of count: Int) -> RouterError {
        count == 1 ? .policy(error) : .batch(index: index, error)
    }

    /// Any error met while changing ports or plans, as a router error.
    init(_ error: any Error) {
        switch error {
        case let error as RouterError: self = error
        case let error as JackError: self = .jack(error)
        default: self = .capacity("\(error)")
        }
    }
}

extension JackError {
    /// A request refused because the server has not answered (in time, or an earlier request).
    var isServerNotAnswering: Bool {
        if case .serverNotAnswering = self { true } else { false }
    }
}
