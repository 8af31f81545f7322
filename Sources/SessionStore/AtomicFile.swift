import Foundation

/// Files written whole or not at all: a temporary file beside the target, fsync, then rename (or
/// link, to create only where nothing is), then fsync of the folder. A crash or `kill -9` at any
/// moment leaves the old file or the new one, never a torn one.
enum AtomicFile {
    enum Outcome { case written, alreadyThere }

    /// Writes `data` to `path`. `replacing: false` leaves a file that is already at `path` as it
    /// is (`.alreadyThere`), even one made by someone else a moment ago. `mode`, when given, is
    /// the new file's mode from its first byte on (a secret's 0600). Throws strerror's words.
    static func write(_ data: Data, to path: String, replacing: Bool, mode: mode_t? = nil) throws(AtomicFileError) -> Outcome {
        // A link to the file is followed: the file it names is the one replaced, and the link
        // stays (a person's ~/.config may link to a folder kept elsewhere).
        let target = replacing ? URL(fileURLWithPath: path).resolvingSymlinksInPath().path : path
        let url = URL(fileURLWithPath: target)
        let folder = url.deletingLastPathComponent().path
        // A name of its own for each write (mkstemp): two writers of one file never share a
        // temporary file, so neither can tear the other's.
        var template = Array(url.deletingLastPathComponent().appendingPathComponent("." + url.lastPathComponent + ".tmp.XXXXXX").path.utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let openError = errno
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard fd >= 0 else { throw AtomicFileError(path: temporary, action: "cannot write", reason: String(cString: strerror(openError))) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        // mkstemp makes 0600; the file keeps the mode it had, else 0644 less the umask.
        var existing = stat()
        fchmod(fd, mode ?? (replacing && stat(target, &existing) == 0 ? existing.st_mode & 0o7777 : 0o644 & ~currentUmask))
        var ok = data.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return true
        }
        ok = ok && fsync(fd) == 0
        close(fd)
        var outcome = Outcome.written
        if ok {
            if replacing {
                ok = rename(temporary, target) == 0
            } else if link(temporary, target) == 0 {
                unlink(temporary)
            } else if errno == EEXIST {
                unlink(temporary)
                outcome = .alreadyThere
            } else {
                ok = false
            }
        }
        guard ok else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw AtomicFileError(path: path, action: replacing ? "cannot save" : "cannot create", reason: reason)
        }
        let folderFD = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderFD >= 0 {
            fsync(folderFD)
            close(folderFD)
        }
        return outcome
    }
}

/// The process's umask, read from /proc (umask(2) can only be read by setting it, which would race
/// with other threads creating files); 022 when it cannot be read.
private let currentUmask: mode_t = {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
          let value = mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) else { return 0o022 }
    return value
}()

struct AtomicFileError: Error, CustomStringConvertible {
    var path: String
    var action: String
    var reason: String
    var description: String { "\(path): \(action): \(reason)" }
}
