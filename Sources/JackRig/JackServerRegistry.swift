import Foundation

/// JACK2's table of running servers, read (and, for dead owners only, cleaned) from outside.
///
/// JACK2 keeps one POSIX shared-memory segment, `/dev/shm/jack-shm-registry`, shared by every
/// server of the machine. Its header holds `MAX_SERVERS` (8) entries of (pid, "jack-<uid>:<name>:")
/// (jack2 `common/shm.h`, `jack_shm_header_t`). A server claims an entry when it starts
/// (`jack_register_server` in `common/shm.c`) and frees it at a clean exit; a server that is
/// killed keeps its entry. JACK itself reclaims a dead entry only when a new server takes the
/// same name, so entries of dead servers under other names fill the table until no server can
/// start ("too many servers already active").
///
/// Every access takes JACK's own registry lock, the System V semaphore JACK2 uses
/// (`JACK_SEMAPHORE_KEY` 0x282929, `semop -1` with `SEM_UNDO`, so a killed holder releases it).
public enum JackServerRegistry {
    /// One entry of the table: a server name and the process that registered it.
    public struct Entry: Equatable, Sendable, CustomStringConvertible {
        /// The server name as given to `jackd -n`.
        public var name: String
        /// The user the name belongs to (names are per user, the table is per machine).
        public var uid: Int
        public var pid: Int32

        /// True when the process `pid` has ended (it does not exist, or is a zombie waiting to be
        /// reaped): the server died without freeing its entry. A pid that runs (even if reused by
        /// another program, or another user's) counts as alive: only a provably dead owner makes
        /// an entry stale.
        public var ownerIsGone: Bool {
            if kill(pid, 0) == -1 { return errno == ESRCH }
            // "pid (comm) S ...": the state follows the last ')'.
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
        }

        public var description: String { "'\(name)' (uid \(uid), pid \(pid)\(ownerIsGone ? ", gone" : ""))" }
    }

    /// jack2 `common/shm.h`: MAX_SERVERS, and the layout of `jack_shm_header_t` on Linux
    /// (uint32 magic, uint16 protocol, int32 type, size, hdr_len, entry_len, then
    /// `jack_shm_server_t server[MAX_SERVERS]` of pid_t and char[JACK_SERVER_NAME_SIZE + 1]).
    public static let maxServers = 8
    static let path = "/dev/shm/jack-shm-registry"
    static let magic: UInt32 = 0x4a41_434b   // "JACK"
    static let serversOffset = 24
    static let serverNameSize = 257
    static let serverEntrySize = 264         // 4 + 257, aligned to 4
    static let headerSize = serversOffset + maxServers * serverEntrySize
    static let semaphoreKey: key_t = 0x282929

    public enum Failure: Error, CustomStringConvertible {
        case unreadable(String)
        public var description: String {
            switch self { case let .unreadable(why): "JACK's server registry \(JackServerRegistry.path): \(why)" }
        }
    }

    /// The entries in use now; empty when no JACK server ever ran since boot (no registry yet).
    public static func entries() throws -> [Entry] {
        try withRegistry(writable: false) { header in readEntries(header).map(\.entry) }
    }

    /// The entry of server `name` of this user, if any.
    public static func entry(named name: String) throws -> Entry? {
        try entries().first { $0.name == name && $0.uid == Int(getuid()) }
    }

    /// Frees the entries whose owning process no longer exists, under JACK's registry lock (the
    /// same check and the same write JACK2 does for an entry of its own name). Entries of live
    /// processes are never touched. Returns what was freed.
    @discardableResult
    public static func reclaimStaleEntries() throws -> [Entry] {
        try withRegistry(writable: true) { header in
            var freed: [Entry] = []
            for (slot, entry) in readEntries(header) where entry.ownerIsGone {
                (header + serversOffset + slot * serverEntrySize).initializeMemory(as: UInt8.self, repeating: 0, count: serverEntrySize)
                freed.append(entry)
            }
            return freed
        }
    }

    /// (slot, entry) for every slot in use.
    private static func readEntries(_ header: UnsafeMutableRawPointer) -> [(slot: Int, entry: Entry)] {
        (0..<maxServers).compactMap { slot in
            let base = header + serversOffset + slot * serverEntrySize
            let pid = base.loadUnaligned(as: Int32.self)
            guard pid != 0 else { return nil }
            let bytes = UnsafeRawBufferPointer(start: base + 4, count: serverNameSize)
            let prefix = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            // "jack-<uid>:<name>:" (jack_get_server_prefix)
            guard prefix.hasPrefix("jack-"), prefix.hasSuffix(":"),
                  let colon = prefix.firstIndex(of: ":"), let uid = Int(prefix[prefix.index(prefix.startIndex, offsetBy: 5)..<colon])
            else { return (slot, Entry(name: prefix, uid: -1, pid: pid)) }
            let name = String(prefix[prefix.index(after: colon)..<prefix.index(before: prefix.endIndex)])
            return (slot, Entry(name: name, uid: uid, pid: pid))
        }
    }

    /// Maps the registry's header and runs `body` on it under JACK's registry lock.
    private static func withRegistry<T>(writable: Bool, _ body: (UnsafeMutableRawPointer) throws -> T) throws -> T {
        let fd = open(path, writable ? O_RDWR : O_RDONLY)
        if fd < 0 {
            if errno == ENOENT { return try withUnsafeTemporaryAllocation(byteCount: headerSize, alignment: 8) { empty in
                empty.initializeMemory(as: UInt8.self, repeating: 0)
                return try body(empty.baseAddress!)
            } }
            throw Failure.unreadable(String(cString: strerror(errno)))
        }
        defer { close(fd) }
        let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
        guard let mapped = mmap(nil, headerSize, protection, MAP_SHARED, fd, 0), mapped != MAP_FAILED else {
            throw Failure.unreadable("mmap: \(String(cString: strerror(errno)))")
        }
        defer { munmap(mapped, headerSize) }
        guard mapped.loadUnaligned(as: UInt32.self) == magic,
              mapped.loadUnaligned(fromByteOffset: 16, as: Int32.self) == Int32(headerSize)
        else { throw Failure.unreadable("not the layout of JACK2 1.9 (magic or header length differ)") }
        let lock = try RegistryLock()
        defer { lock.unlock() }
        return try body(mapped)
    }

    /// JACK2's registry semaphore (`jack_shm_lock_registry`).
    private struct RegistryLock {
        let id: Int32
        init() throws {
            // JACK creates it with one token on first use; it exists once a registry exists.
            id = semget(JackServerRegistry.semaphoreKey, 0, 0)
            guard id >= 0 else { throw Failure.unreadable("its lock (semaphore 0x282929): \(String(cString: strerror(errno)))") }
            var take = sembuf(sem_num: 0, sem_op: -1, sem_flg: Int16(SEM_UNDO))
            while semop(id, &take, 1) == -1 {
                guard errno == EINTR else { throw Failure.unreadable("its lock: \(String(cString: strerror(errno)))") }
            }
        }
        func unlock() {
            var give = sembuf(sem_num: 0, sem_op: 1, sem_flg: Int16(SEM_UNDO))
            _ = semop(id, &give, 1)
        }
    }
}
