import Foundation
import OSCTransport

/// Whether a router's address is this machine's: `duckctl page` reads the router's key from a
/// local file, so it talks only to a router on this machine, where that file is the router's.
enum ThisMachine {
    /// The address `host` resolves to (as `OSCClient` resolves it), if it is a loopback address
    /// or one of this machine's interfaces' addresses; nil otherwise.
    static func address(of host: String) -> SocketAddress? {
        guard let address = SocketAddress(host: host, port: 0) else { return nil }
        return address.isLoopback || interfaceAddresses().contains(address.bytes) ? address : nil
    }

    /// The addresses of this machine's interfaces (getifaddrs).
    static func interfaceAddresses() -> Set<[UInt8]> {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return [] }
        defer { freeifaddrs(first) }
        var found: Set<[UInt8]> = []
        var next = first
        while let entry = next {
            if let address = entry.pointee.ifa_addr, let parsed = SocketAddress(address) { found.insert(parsed.bytes) }
            next = entry.pointee.ifa_next
        }
        return found
    }

    /// The users owning the sockets bound to `port` (the kernel's tables, /proc/net: UDP, or TCP
    /// listening), IPv4 and IPv6; empty when none is. `duckctl page` asks only a router that is
    /// this user's: the key file it reads is this user's, so a program of another user's that
    /// took the router's port while it was down cannot name one and have it shown.
    static func owners(of port: UInt16, tcp: Bool) -> Set<uid_t> {
        var owners: Set<uid_t> = []
        let suffix = String(format: ":%04X", port)
        for table in tcp ? ["tcp", "tcp6"] : ["udp", "udp6"] {
            guard let file = FileHandle(forReadingAtPath: "/proc/net/\(table)"), let data = try? file.readToEnd() else { continue }
            try? file.close()
            // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
            for row in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
                let fields = row.split(separator: " ")
                guard fields.count > 7, fields[1].hasSuffix(suffix), !tcp || fields[3] == "0A", let uid = uid_t(fields[7]) else { continue }
                owners.insert(uid)
            }
        }
        return owners
    }
}

