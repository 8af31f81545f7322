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
}
