import Foundation

/// The control page's key (docs/HTTP.md, "Who may do what"): a secret the router makes, whose
/// holder has a person's rights over every app. It is kept in a file of its own beside the state
/// file (`Sessions/x.state.json` → `Sessions/x.page-key`), mode 0600, written whole or not at
/// all, and only when the key is made or changed: state saves and reloads never touch it.
/// `duckctl page` reads it there, as the same user on the same machine.
public struct PageKeyFile: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// Beside the state file: `Sessions/car.state.json` → `Sessions/car.page-key`.
    public static func path(besideState state: String) -> String {
        (state.hasSuffix(".state.json") ? String(state.dropLast(".state.json".count)) : state) + ".page-key"
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The key kept in the file; nil when there is none (no file, or one that holds no key,
    /// which the next `save` replaces). Throws when the file is there and cannot be read.
    public func load() throws(Failure) -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw Failure(description: "\(path): cannot read the page's key: \(error.localizedDescription)")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Self.isWellFormed(text) ? text : nil
    }

    /// The key in a file that can be a router's key file for this user, as `duckctl page` reads
    /// the one a router names: the path must be absolute and end in `.page-key`, and the file
    /// must be a regular file (not a link) of this user's, mode 0600, as the router keeps it. A
    /// peer that answers in the router's place cannot have another of the user's files read and
    /// shown. The checks are made on the file opened (O_NOFOLLOW, then fstat), not on its name
    /// before it is opened, so a file swapped in between is not read either; a FIFO or device
    /// does not block the open. Nil when the file holds no key.
    public func loadKeyFile() throws(Failure) -> String? {
        guard path.hasPrefix("/") else { throw Failure(description: "\(path): not an absolute path; a key file is named by one") }
        guard path.hasSuffix(".page-key") else { throw Failure(description: "\(path): a key file's name ends in .page-key") }
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else {
            if errno == ELOOP { throw Failure(description: "\(path): not a regular file (a link, a folder or a device)") }
            throw Failure(description: "\(path): cannot read the page's key: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw Failure(description: "\(path): cannot read the page's key: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw Failure(description: "\(path): not a regular file (a link, a folder or a device)") }
        guard status.st_uid == getuid() else { throw Failure(description: "\(path): owned by user \(status.st_uid), not by this user (\(getuid()))") }
        guard status.st_mode & 0o777 == 0o600 else {
            throw Failure(description: "\(path): mode \(String(status.st_mode & 0o777, radix: 8)), not 0600 as the router keeps it")
        }
        // A key is at most 128 characters and a newline: more than a page is no key file.
        var buffer = [UInt8](repeating: 0, count: 4096)
        var count = 0
        while count < buffer.count {
            let got = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw Failure(description: "\(path): cannot read the page's key: \(String(cString: strerror(errno)))") }
            if got == 0 { break }
            count += got
        }
        let text = String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Self.isWellFormed(text) ? text : nil
    }

    /// Writes `key` atomically, readable by this user only.
    public func save(_ key: String) throws(Failure) {
        do {
            _ = try AtomicFile.write(Data((key + "\n").utf8), to: path, replacing: true, mode: 0o600)
        } catch {
            throw Failure(description: "\(path): cannot keep the page's key (\(error))")
        }
    }

    /// The kept key, or a new one made and kept when there is none; `made` says which.
    public func loadOrMake() throws(Failure) -> (key: String, made: Bool) {
        if let key = try load() {
            // A copy made with a looser mode is tightened: the key is as good as the file's mode.
            var status = stat()
            if stat(path, &status) == 0, status.st_mode & 0o077 != 0 { chmod(path, 0o600) }
            return (key, false)
        }
        let key = Self.newKey()
        try save(key)
        return (key, true)
    }

    /// The page's link: its address with the key in the fragment, which a browser sends to no
    /// server and puts in no Referer (`http://host:9952/ui/#key=…`).
    public static func link(address: String, key: String) -> String { "\(address)#key=\(key)" }

    /// A new key: 256 random bits from the system's generator (getrandom), as base64url
    /// without padding (43 characters, safe in a URL as it is).
    public static func newKey() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A key as `newKey` makes them (or one a person wrote of at least 128 bits): 22 to 128
    /// base64url characters.
    public static func isWellFormed(_ text: String) -> Bool {
        (22...128).contains(text.utf8.count)
            && text.utf8.allSatisfy { c in
                (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x5F
            }
    }

    /// Whether `presented` is `key`, in a time that depends on their lengths only (never on
    /// where they first differ), so a peer cannot find the key a character at a time.
    public static func matches(_ presented: String, _ key: String) -> Bool {
        let a = Array(presented.utf8)
        let b = Array(key.utf8)
        var difference: UInt8 = a.count == b.count ? 0 : 1
        for i in 0..<max(a.count, b.count) {
            difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return difference == 0
    }
}
