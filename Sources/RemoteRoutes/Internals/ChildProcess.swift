#if canImport(Glibc)
import Glibc
#endif

/// A child process started with `posix_spawn`: its standard output and error through one pipe,
/// stopped with signals, reaped with `waitpid`.
///
/// The daemon blocks SIGINT, SIGTERM and SIGHUP in every thread and takes them with sigwait
/// (duckrouter's main.swift); a child inherits a signal mask, so the child's is cleared and those
/// three are set back to their defaults here, or it could never be stopped with SIGTERM. The
/// child gets a process group of its own: a Ctrl-C in the daemon's terminal reaches the daemon,
/// which stops the child itself, in order.
struct ChildProcess {
    let pid: pid_t
    /// The pipe's read end (close-on-exec); end of file once the child has exited.
    let output: Int32

    struct SpawnError: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts `path` with `arguments` (argv[1…]) and the daemon's environment plus `environment`.
    static func spawn(_ path: String, _ arguments: [String], environment: [String: String]) throws(SpawnError) -> ChildProcess {
        var pipeEnds: [Int32] = [-1, -1]
        // Close-on-exec from the start: a sender started by another thread meanwhile must not
        // inherit this pipe (its reader would then wait for that other child's end too).
        guard let pipe2 = Self.pipe2, pipe2(&pipeEnds, Int32(O_CLOEXEC)) == 0 else {
            throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        defer { close(pipeEnds[1]) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the child's copies.
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // Nothing else of the daemon's (libjack's socket to its server, above all: an orphaned
        // child holding it would keep the router's JACK client alive).
        guard let closeFrom = Self.addCloseFrom, closeFrom(&actions, 3) == 0 else {
            close(pipeEnds[0])
            throw SpawnError(description: "posix_spawn_file_actions_addclosefrom_np is missing (glibc 2.34 or later)")
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        // The C strings live until posix_spawn has copied them into the child.
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var merged: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") { merged[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
            entry += 1
        }
        for (key, value) in environment { merged[key] = value }
        let envp = merged.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }

        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard status == 0 else {
            close(pipeEnds[0])
            throw SpawnError(description: "cannot start \(path): \(String(cString: strerror(status)))")
        }
        return ChildProcess(pid: pid, output: pipeEnds[0])
    }

    /// glibc's pipe2, which Swift's Glibc module does not declare (a _GNU_SOURCE function).
    private static let pipe2: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32).self)
    }()

    /// glibc's posix_spawn_file_actions_addclosefrom_np (2.34), which Swift's Glibc module does
    /// not declare.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Reads the child's output until it closes (the child has exited), a line at a time; lines
    /// longer than 1,000 bytes are cut. Closes the pipe.
    func readLines(_ body: (String) -> Void) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: 10) {
                body(String(decoding: pending[..<newline].prefix(1000), as: UTF8.self))
                pending.removeSubrange(...newline)
            }
            if pending.count > 1000 {
                body(String(decoding: pending.prefix(1000), as: UTF8.self))
                pending.removeAll()
            }
        }
        if !pending.isEmpty { body(String(decoding: pending, as: UTF8.self)) }
        close(output)
    }

    /// Waits until the child has exited, without reaping it: its pid stays its own (a zombie)
    /// until `wait`, so signals sent meanwhile reach no other process.
    func awaitExit() {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
    }

    /// Waits for the child to exit and reaps it: how it ended, in words.
    func wait() -> String {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return "could not be waited for: \(String(cString: strerror(errno)))" }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import (macros).
        let signal = status & 0x7f
        if signal == 0 { return "exit status \((status >> 8) & 0xff)" }
        return "killed by signal \(signal)"
    }

    /// Sends `signal` to the child's process group: the child and anything it started (which
    /// would otherwise keep the output pipe open). Only while the child has not been reaped: its
    /// pid, the group's id, is still its own then.
    func send(_ signal: Int32) {
        kill(-pid, signal)
    }

    /// The full path of `name` on `$PATH` (or `name` itself when it holds a slash), if executable.
    static func find(_ name: String) -> String? {
        if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = "\(folder)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
