import Foundation

/// Files written whole or not at all: a temporary file beside the target, fsync, then rename (or
/// link, to create only where nothing is), then fsync of the folder. A crash or `kill -9` at any
/// moment leaves the old file or the new one, never a torn one.
enum AtomicFile {
    enum Outcome { case written, alreadyThere }

    /// Writes `data` to `path`. `replacing: false` leaves a file that is already at `path` as it
    /// is (`.alreadyThere`), even one made by someone else a moment ago. Throws strerror's words.
    static func write(_ data: Data, to path: String, replacing: Bool) throws(AtomicFileError) -> Outcome {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        let temporary = url.deletingLastPathComponent().appendingPathComponent("." + url.lastPathComponent + ".tmp").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw AtomicFileError(path: temporary, action: "cannot write", reason: String(cString: strerror(errno))) }
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
                ok = rename(temporary, path) == 0
            } else if link(temporary, path) == 0 {
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

struct AtomicFileError: Error, CustomStringConvertible {
    var path: String
    var action: String
    var reason: String
    var description: String { "\(path): \(action): \(reason)" }
}
