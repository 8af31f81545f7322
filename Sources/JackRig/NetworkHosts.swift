import Foundation

/// Two hosts on one machine for network audio tests: two network namespaces of this run's own,
/// joined by a veth pair, `a` at 10.77.0.1 and `b` at 10.77.0.2 (addresses that exist only inside
/// them), each with its loopback up; with `thirdHost`, a third, `c` at 10.77.1.2, joined to `a`
/// (at 10.77.1.1 there) by a veth pair of its own. Removed in `close` (and the namespaces'
/// deletion takes the veth pairs with them). Needs the right to create namespaces (root,
/// CAP_SYS_ADMIN): `available`.
public final class NetworkHosts: @unchecked Sendable {
    // @unchecked: used from the test's thread only.
    public let a: String
    public let b: String
    /// The third host (with `thirdHost`), reaching `a` at `addressAForC`.
    public let c: String?
    public static let addressA = "10.77.0.1"
    public static let addressB = "10.77.0.2"
    public static let addressAForC = "10.77.1.1"
    public static let addressC = "10.77.1.2"
    private var closed = false

    public init(thirdHost: Bool = false) throws {
        let tag = "dr\(getpid() % 100_000)\(UInt16.random(in: 0...UInt16.max) % 1000)"
        a = "\(tag)a"
        b = "\(tag)b"
        c = thirdHost ? "\(tag)c" : nil
        do {
            try Self.ip("netns", "add", a)
            try Self.ip("netns", "add", b)
            try Self.join(a, "\(a)v", Self.addressA, to: b, "\(b)v", Self.addressB)
            if let c {
                try Self.ip("netns", "add", c)
                try Self.join(a, "\(a)w", Self.addressAForC, to: c, "\(c)v", Self.addressC)
            }
            for host in [a, b] + (c.map { [$0] } ?? []) { try Self.ip("-n", host, "link", "set", "lo", "up") }
        } catch {
            close()
            throw error
        }
    }

    /// A veth pair between two hosts: `end` in `host` at `address`, `peerEnd` in `peer` at
    /// `peerAddress`, both up, on a /24 of their own.
    private static func join(_ host: String, _ end: String, _ address: String, to peer: String, _ peerEnd: String, _ peerAddress: String) throws {
        try ip("link", "add", end, "type", "veth", "peer", "name", peerEnd)
        try ip("link", "set", end, "netns", host)
        try ip("link", "set", peerEnd, "netns", peer)
        for (namespace, device, at) in [(host, end, address), (peer, peerEnd, peerAddress)] {
            try ip("-n", namespace, "addr", "add", "\(at)/24", "dev", device)
            try ip("-n", namespace, "link", "set", device, "up")
        }
    }

    deinit { close() }

    public func close() {
        guard !closed else { return }
        closed = true
        for host in [a, b] + (c.map { [$0] } ?? []) { try? Self.ip("netns", "delete", host) }
        // A veth end left in this namespace by a failed set-up.
        try? Self.ip("link", "delete", "\(a)v")
        if c != nil { try? Self.ip("link", "delete", "\(a)w") }
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
