#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The process's file descriptors: its limit, how many are open, and the reserve kept for
/// everything that is not a TCP peer (docs/RELIABILITY.md, "Descriptor budget").
///
/// Every socket, pipe and file takes a descriptor, and the process may hold `RLIMIT_NOFILE`'s
/// soft limit of them. Peers must not take the last ones: the state file, JACK (its sockets and
/// shared memory), OSC destinations and the HTTP server need some too. So the OSC server turns a
/// TCP peer away when the descriptor its accept got is among the last `reserve(soft:)` of the limit
/// (the kernel hands out the lowest free number, so that number says how many are in use), and
/// the HTTP server when the next free one is (`isShort`), both against the limit as it is now;
/// no notification destination is opened then either. So peers never hold the reserve; the
/// process's own needs (a save, JACK) take from it.
///
/// The process must not run out: Linux's libdispatch checks its worker threads once a second
/// by opening /proc/<tid>/stat, and takes a failed open (EMFILE included) for a vanished thread
/// and crashes the process ("workq: registered worker exited prematurely", SIGILL).
public enum DescriptorBudget {
    /// Descriptors kept for everything but OSC's TCP peers: 256, or a quarter of a soft limit
    /// under 1024.
    public static func reserve(soft: Int) -> Int { min(256, soft / 4) }
    /// The highest the soft limit is raised to at start: descriptors are cheap, but a child
    /// process started by some libraries closes every number up to the limit first.
    public static let ceiling = 16384

    /// The soft and hard limits (`Int.max` for no limit).
    public static func limits() -> (soft: Int, hard: Int) {
        var value = rlimit()
        guard getrlimit(resource, &value) == 0 else { return (Int.max, Int.max) }
        return (count(value.rlim_cur), count(value.rlim_max))
    }

    /// Raises the soft limit to the hard one, at most `ceiling` (never lowers it): the limits
    /// before and after. Opens `isShort`'s descriptor of its own too.
    @discardableResult
    public static func raiseSoftLimit() -> (before: Int, after: Int, hard: Int) {
        // The daemon calls this first: `isShort`'s descriptor is opened while there are plenty.
        _ = probe
        var value = rlimit()
        guard getrlimit(resource, &value) == 0 else { return (Int.max, Int.max, Int.max) }
        let before = count(value.rlim_cur)
        let hard = count(value.rlim_max)
        let wanted = min(hard, ceiling)
        guard wanted > before else { return (before, before, hard) }
        value.rlim_cur = rlim_t(wanted)
        guard setrlimit(resource, &value) == 0 else { return (before, before, hard) }
        return (before, wanted, hard)
    }

    /// Descriptors open now (the entries of /proc/self/fd, less the one that reads it); nil when
    /// /proc cannot be read (which itself may mean none is left).
    public static func openCount() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var entries = 0
        while let entry = readdir(directory) {
            if entry.pointee.d_name.0 != UInt8(ascii: ".") { entries += 1 }
        }
        return max(0, entries - 1)
    }

    /// The most TCP peers the OSC server admits under a soft limit of `soft`: `configured`, or
    /// fewer when the limit leaves less than that beyond the reserve.
    static func peerLimit(configured: Int, soft: Int) -> Int {
        min(configured, max(0, soft - reserve(soft: soft)))
    }

    /// Whether a descriptor just opened is among the last `reserve(soft:)` of the soft limit.
    static func isInReserve(_ fd: Int32, soft: Int) -> Bool {
        Int(fd) >= soft - reserve(soft: soft)
    }

    /// What a peer turned away for want of descriptors is told, over OSC and HTTP alike.
    public static let shortMessage = "the router is short of descriptors; try again"

    /// Whether the next descriptor opened would be among the last `reserve(soft:)` of the soft
    /// limit as it is now (it may have been lowered since start): the lowest free number, found
    /// by duplicating a descriptor of its own and closing the copy. True when none is left.
    public static func isShort() -> Bool {
        let soft = limits().soft
        let copy = fcntl(probe, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { return errno == EMFILE }
        close(copy)
        return isInReserve(copy, soft: soft)
    }

    /// What `isShort` duplicates: /dev/null, opened once (closing a copy of it costs nothing,
    /// where closing a copy of a log file may flush it); standard error if it cannot be opened.
    private static let probe: Int32 = {
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        return fd >= 0 ? fd : STDERR_FILENO
    }()

    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)

    private static func count(_ value: rlim_t) -> Int {
        value > rlim_t(Int.max / 2) ? Int.max / 2 : Int(value)   // RLIM_INFINITY is all ones
    }
}
