import Foundation

/// A JACK server name held by this process: an exclusive `flock` on a lock file per name, taken
/// before a server is started under that name and kept until `release()` (or until the process
/// dies: the kernel drops the lock with the last descriptor, so a crashed run leaves no claim).
///
/// Two claims on one name never both succeed, whether they come from two processes or from two
/// `JackServer`s in one process (`flock` locks belong to the open file, not to the process).
/// The lock files live in one machine-wide folder per user, `/tmp/duckrouter-jack-<uid>/`, so that
/// every run agrees on them whatever its environment (`$XDG_RUNTIME_DIR` is not set in every
/// shell); they are small, kept, and never deleted (deleting a lock file someone holds would let
/// a third party lock a new file of the same name).
public final class JackServerNameClaim: @unchecked Sendable {
    // @unchecked: `descriptor` is written only by `release()`, which callers serialise (a
    // JackServer releases its claim once, from `stop()`).
    public let name: String
    private var descriptor: Int32

    public struct Failure: Error, CustomStringConvertible {
        public var name: String
        public var why: String
        public var description: String { "cannot claim the JACK server name '\(name)': \(why)" }
    }

    public static var folder: URL {
        URL(fileURLWithPath: "/tmp/duckrouter-jack-\(getuid())", isDirectory: true)
    }

    public static func lockFile(for name: String) -> URL {
        folder.appendingPathComponent("\(name).lock")
    }

    /// Claims `name`; nil when another claim holds it.
    public init?(_ name: String) throws {
        try FileManager.default.createDirectory(at: Self.folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let fd = open(Self.lockFile(for: name).path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw Failure(name: name, why: "open \(Self.lockFile(for: name).path): \(String(cString: strerror(errno)))")
        }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let why = errno
            close(fd)
            if why == EWOULDBLOCK { return nil }
            throw Failure(name: name, why: "flock: \(String(cString: strerror(why)))")
        }
        self.name = name
        descriptor = fd
        // Who holds it, for people looking at a stuck name (the lock, not this text, is the claim).
        let note = "pid \(getpid())\n"
        _ = ftruncate(fd, 0)
        _ = note.withCString { write(fd, $0, strlen($0)) }
    }

    public var isHeld: Bool { descriptor >= 0 }

    /// Gives the name back.
    public func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)   // drops the lock
        descriptor = -1
    }

    deinit { release() }
}
