import Foundation

/// What a command run to its end wrote, stdout and stderr apart, and its exit status.
struct CommandOutput: CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String
    var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }

    /// Runs `executable` with `arguments`, the test's environment with `environment` laid over it
    /// (an empty value removes a variable), stdin empty, stdout and stderr each a pipe.
    static func of(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                   directory: URL? = nil) throws -> CommandOutput {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value.isEmpty ? nil : value }
        process.environment = merged
        if let directory { process.currentDirectoryURL = directory }
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Both pipes read to their end before waiting: a full pipe would stall the command.
        let errors = ReadToEnd(stderr.fileHandleForReading)
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CommandOutput(status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
                             stderr: String(decoding: errors.wait(), as: UTF8.self))
    }
}

/// A pipe read to its end on a thread of its own.
private final class ReadToEnd: @unchecked Sendable {
    // @unchecked: `data` is written once by the reader thread before `done` is signalled, and read
    // only after `wait` has seen it.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }.start()
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}
