import Foundation
import ArgumentParser
import OSCTransport

struct Connection: ParsableArguments {
    @Option(help: "The router's host (default: $DUCKROUTER_HOST, else 127.0.0.1).")
    var host = ProcessInfo.processInfo.environment["DUCKROUTER_HOST"] ?? "127.0.0.1"
    @Option(help: "The router's OSC port (default: $DUCKROUTER_PORT, else 9951).")
    var port: UInt16 = ProcessInfo.processInfo.environment["DUCKROUTER_PORT"].flatMap { UInt16($0) } ?? 9951
    @Flag(help: "Use TCP instead of UDP.")
    var tcp = false
    @Option(help: "Seconds to wait for the reply.")
    var timeout = 2.0

    func client() throws -> OSCClient {
        do {
            return try OSCClient(OSCURL(transport: tcp ? .tcp : .udp, host: host, port: port))
        } catch {
            throw Failure(message: "\(error)", code: 2)
        }
    }

    /// Sends `message` and waits for its `/reply` (returned) or `/error` (thrown).
    func call(_ message: OSCMessage) throws -> [OSCArgument] {
        let client = try client()
        return try Self.call(message, on: client, timeout: timeout)
    }

    static func call(_ message: OSCMessage, on client: OSCClient, timeout: Double) throws -> [OSCArgument] {
        // Words that were negative numbers reach messages as typed (see NegativeNumbers).
        let message = OSCMessage(NegativeNumbers.restore(message.path), message.arguments.map { argument in
            if case let .string(word) = argument { return .string(NegativeNumbers.restore(word)) }
            return argument
        })
        do {
            try client.send(message)
            let answer = try client.receive(timeout: timeout) { m in
                (m.path == "/reply" || m.path == "/error") && m.arguments.first == .string(message.path)
            }
            guard let answer else {
                throw Failure(message: "no answer from \(client.url) within \(timeout) s (is duckrouter running?)", code: 2)
            }
            if answer.path == "/error" {
                var code: Int32 = -1
                var text = ""
                if answer.arguments.count >= 3, case let .int32(c) = answer.arguments[1], case let .string(t) = answer.arguments[2] {
                    code = c
                    text = t
                }
                throw Failure(message: "\(message.path): error \(code): \(text)", code: 1)
            }
            return Array(answer.arguments.dropFirst())
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(message: "\(error)", code: 2)
        }
    }
}

struct Failure: Error, CustomStringConvertible {
    var message: String
    var code: Int32
    var description: String { message }
}

/// Prints reply values, one line, strings bare.
func show(_ values: [OSCArgument]) {
    guard !values.isEmpty else { return }
    print(values.map(text).joined(separator: " "))
}

func text(_ argument: OSCArgument) -> String {
    switch argument {
    case let .string(s), let .symbol(s): s
    case let .int32(v): "\(v)"
    case let .float(v): "\(v)"
    case let .double(v): "\(v)"
    case let .int64(v): "\(v)"
    case .true: "true"
    case .false: "false"
    default: "\(argument)"
    }
}

/// Runs a subcommand body, turning failures into messages and exit codes.
func run(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let failure as Failure {
        FileHandle.standardError.write(Data("duckctl: \(failure.message)\n".utf8))
        throw ExitCode(failure.code)
    }
}
