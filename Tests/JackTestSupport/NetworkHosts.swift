import Foundation

/// Two hosts on one machine for network audio tests: two network namespaces of this run's own,
/// joined by a veth pair, `a` at 10.77.0.1 and `b` at 10.77.0.2 (addresses that exist only inside
/// them), each with its loopback up. Removed in `close` (and the namespaces' deletion takes the
/// veth pair with it). Needs the right to create namespaces (root, CAP_SYS_ADMIN): `available`.
public final class NetworkHosts: @unchecked Sendable {
    // @unchecked: used from the test's thread only.
    public let a: String
    public let b: String
    public static let addressA = "10.77.0.1"
    public static let addressB = "10.77.0.2"
    private var closed = false

    public init() throws {
        let tag = "dr\(getpid() % 100_000)\(UInt16.random(in: 0...UInt16.max) % 1000)"
        a = "\(tag)a"
        b = "\(tag)b"
        do {
            try Self.ip("netns", "add", a)
            try Self.ip("netns", "add", b)
            try Self.ip("link", "add", "\(a)v", "type", "veth", "peer", "name", "\(b)v")
            try Self.ip("link", "set", "\(a)v", "netns", a)
            try Self.ip("link", "set", "\(b)v", "netns", b)
            for (host, address) in [(a, Self.addressA), (b, Self.addressB)] {
                try Self.ip("-n", host, "addr", "add", "\(address)/24", "dev", "\(host)v")
                try Self.ip("-n", host, "link", "set", "\(host)v", "up")
                try Self.ip("-n", host, "link", "set", "lo", "up")
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    public func close() {
        guard !closed else { return }
        closed = true
        for host in [a, b] { try? Self.ip("netns", "delete", host) }
        // A veth end left in this namespace by a failed set-up.
        try? Self.ip("link", "delete", "\(a)v")
    }

    /// Takes host `name`'s link down or up (the cable pulled, plugged back).
    public func setLink(_ host: String, up: Bool) throws {
        try Self.ip("-n", host, "link", "set", "\(host)v", up ? "up" : "down")
    }

    /// Whether this process may create network namespaces: one is made and removed once.
    public static let available: Bool = {
        let probe = "drprobe\(getpid() % 100_000)"
        guard (try? ip("netns", "add", probe)) != nil else { return false }
        try? ip("netns", "delete", probe)
        return true
    }()

    /// Runs `body` on a thread that has entered network namespace `host`: sockets it opens (an
    /// OSC client) belong to that host, and keep working from any thread afterwards.
    public static func inside<T>(_ host: String, _ body: @escaping @Sendable () throws -> T) throws -> T {
        let box = OutcomeBox<T>()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread { [box] in
            defer { done.signal() }
            let fd = open("/var/run/netns/\(host)", O_RDONLY)
            guard fd >= 0, let setns = Self.setns, setns(fd, 0x4000_0000 /* CLONE_NEWNET */) == 0 else {
                box.outcome = .failure(Failure("cannot enter network namespace \(host): \(String(cString: strerror(errno)))"))
                if fd >= 0 { Glibc.close(fd) }
                return
            }
            Glibc.close(fd)
            box.outcome = Result { try body() }
        }
        thread.start()
        done.wait()
        return try box.outcome!.get()
    }

    /// glibc's setns, which Swift's Glibc module does not declare (it is a _GNU_SOURCE function).
    private static let setns: (@convention(c) (Int32, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setns") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
    }()

    private final class OutcomeBox<T>: @unchecked Sendable {
        // @unchecked: written by the thread before it signals, read after the wait.
        var outcome: Result<T, any Error>?
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @discardableResult
    static func ip(_ arguments: String...) throws -> String {
        try Tool.run("/usr/sbin/ip", arguments)
    }
}
