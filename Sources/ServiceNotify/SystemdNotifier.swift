#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// Tells the service manager how the router is doing (systemd's `sd_notify` protocol: one
/// datagram of `KEY=value` lines to the socket named by `$NOTIFY_SOCKET`). Outside systemd
/// (no `$NOTIFY_SOCKET`) every call does nothing, so the router runs the same from a shell.
///
/// `Type=notify` in dist/duckrouter.service makes `systemctl --user start` return once `ready()`
/// is sent: the JACK client is active and OSC answers.
public final class SystemdNotifier: Sendable {
    /// The socket's address as the environment gave it; nil outside systemd.
    public let socketPath: String?
    /// Once stopping is said, nothing says ready again (a reload that ends during the stop).
    private let stopped = Atomic<Bool>(false)

    /// Takes `$NOTIFY_SOCKET` out of the environment, so that the programs the router runs
    /// (zita-j2n) do not inherit it.
    public static func fromEnvironment() -> SystemdNotifier {
        let notifier = SystemdNotifier(socketPath: getenv("NOTIFY_SOCKET").map { String(cString: $0) })
        unsetenv("NOTIFY_SOCKET")
        return notifier
    }

    public init(socketPath: String?) {
        self.socketPath = socketPath?.isEmpty == false ? socketPath : nil
    }

    /// Start-up is over (the router mixes and answers OSC), or a reload is; or, while it waits
    /// for the JACK server, it runs and says so in `status`.
    public func ready(status: String) {
        guard !stopped.load(ordering: .acquiring) else { return }
        send(["READY=1", "STATUS=\(status)"])
    }

    /// A new status line, readiness unchanged (the control page's link after its key changed).
    public func status(_ status: String) {
        guard !stopped.load(ordering: .acquiring) else { return }
        send(["STATUS=\(status)"])
    }

    /// A SIGHUP reload began; `ready` ends it. systemd wants the monotonic clock with it.
    public func reloading() {
        guard !stopped.load(ordering: .acquiring) else { return }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        send(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)"])
    }

    public func stopping() {
        stopped.store(true, ordering: .releasing)
        send(["STOPPING=1"])
    }

    /// Sends one datagram; failures are ignored, as sd_notify's callers do: the service manager
    /// going away must not stop the router.
    private func send(_ lines: [String]) {
        guard let socketPath else { return }
        let message = lines.map { $0.replacingNewlines() }.joined(separator: "\n")
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // An abstract socket is written '@name' and addressed with a leading NUL.
        var pathBytes = Array(socketPath.utf8)
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + (pathBytes.first == 0 ? 0 : 1))
        _ = message.withCString { text in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    sendto(fd, text, strlen(text), Int32(MSG_NOSIGNAL), socketAddress, length)
                }
            }
        }
    }
}

private extension String {
    /// A status line must stay one line.
    func replacingNewlines() -> String { String(map { $0 == "\n" ? " " : $0 }) }
}
