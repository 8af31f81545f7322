import Glibc

/// Port numbers free to listen on, found by binding them for a moment the way the listeners will:
/// UDP and TCP for OSC, TCP for HTTP, TCP with SO_REUSEADDR (so a port whose last connections
/// linger in TIME_WAIT counts as free, as it is to a listener).
///
/// Free now is not free later: another program may take the port before the listener binds it.
/// Callers that hand ports to several instances keep a record of what they handed out.
public enum FreePorts {
    /// Whether `port` on `host` can be bound now, for TCP and, with `udp`, for UDP too.
    public static func isFree(_ port: UInt16, host: String, udp: Bool) -> Bool {
        guard port != 0, let address = SocketAddress(host: host, port: port) else { return false }
        let family = address.family
        var kinds = [Int32(SOCK_STREAM.rawValue)]
        if udp { kinds.append(Int32(SOCK_DGRAM.rawValue)) }
        var opened: [Int32] = []
        defer { for fd in opened { close(fd) } }
        for kind in kinds {
            let fd = socket(family, kind | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return false }
            opened.append(fd)
            if kind == Int32(SOCK_STREAM.rawValue) { setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1) }
            if family == AF_INET6 { setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0) }
            guard address.withSockaddr(family: family, { bind(fd, $0, $1) }) == 0 else { return false }
        }
        return true
    }

    /// The first port from `start` up, at most `count` of them, that is free (`isFree`) and not
    /// in `avoiding`; nil when none is.
    public static func first(from start: UInt16, host: String, udp: Bool, avoiding: Set<UInt16> = [], count: Int = 200) -> UInt16? {
        var port = Int(start)
        var tried = 0
        while tried < count, port <= 65535 {
            let candidate = UInt16(port)
            if !avoiding.contains(candidate), isFree(candidate, host: host, udp: udp) { return candidate }
            port += 1
            tried += 1
        }
        return nil
    }
}
