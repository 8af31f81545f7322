import Foundation
import JackRig
import OSCTransport
import Testing

/// Rights from a peer's address: a port in `osc.admin` names a UDP surface's reply port, and the
/// key file's path is told only to peers on this machine or `osc.admin` addresses.
extension PageKeyTests {
    @Test("an osc.admin entry with a port (127.0.0.1:P) grants a UDP sender from port P, not a TCP peer whose source port is P (any program on the host may bind it)")
    func adminPortIsUDPOnly() throws {
        let surfacePort = try OSCPorts.free()
        let rig = try OSCRig(osc: #", "admin": ["127.0.0.1:\#(surfacePort)"]"#)
        defer { rig.close() }
        let rights = OSCMessage("/rights")
        #expect(try Self.askFromPort(rights, to: rig.port, fromPort: surfacePort, tcp: false)?.arguments == [.string("/rights"), .string("admin"), .string("osc.admin")])
        #expect(try Self.askFromPort(rights, to: rig.port, fromPort: surfacePort, tcp: true)?.arguments == [.string("/rights"), .string("owner"), .string("osc.allow")],
                "a TCP peer from the surface's port has its address's rights only")
    }

    @Test("/page names the key file only to a peer on loopback or an osc.admin address; another allowed peer gets the page's address alone",
          .enabled(if: PageKeyTests.ownAddress != nil, "this machine has a non-loopback IPv4 address"))
    func pagePathOnlyToThisMachine() throws {
        let own = try #require(Self.ownAddress)
        let rig = try OSCRig(osc: #", "bind": "0.0.0.0", "allow": ["127.0.0.1/32", "\#(own)/32"]"#, http: true)
        defer { rig.close() }
        let address = OSCArgument.string("http://\(own):\(rig.httpPort)/ui/")
        #expect(try rig.query("/page")?.arguments == [.string("/page"), address, .string(rig.pageKeyFile.path)], "from loopback")
        let fromOwn = try OSCClient(OSCURL(transport: .udp, host: own, port: rig.port))
        #expect(try ask(fromOwn, OSCMessage("/page"))?.arguments == [.string("/page"), address], "from \(own)")
    }

    /// One of this machine's IPv4 addresses that is not loopback (nil: none).
    static let ownAddress: String? = {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return nil }
        defer { freeifaddrs(first) }
        var next = first
        while let entry = next {
            if let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) {
                var v4 = UnsafeRawPointer(address).load(as: sockaddr_in.self).sin_addr
                var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                inet_ntop(AF_INET, &v4, &text, socklen_t(text.count))
                let host = String(cString: text)
                if !host.hasPrefix("127.") { return host }
            }
            next = entry.pointee.ifa_next
        }
        return nil
    }()

    /// Sends `message` to 127.0.0.1:`port` from 127.0.0.1:`fromPort` over UDP or TCP, and returns
    /// its answer.
    static func askFromPort(_ message: OSCMessage, to port: UInt16, fromPort: UInt16, tcp: Bool) throws -> OSCMessage? {
        let fd = socket(AF_INET, Int32((tcp ? SOCK_STREAM : SOCK_DGRAM).rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var source = UDPPeer.address("127.0.0.1", fromPort)
        var target = UDPPeer.address("127.0.0.1", port)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        guard withUnsafePointer(to: &source, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }) == 0,
              withUnsafePointer(to: &target, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }) == 0 else {
            throw Unexpected(description: "a socket from port \(fromPort): \(String(cString: strerror(errno)))")
        }
        var packet = OSCCodec.encode(message)
        if tcp { packet = withUnsafeBytes(of: UInt32(packet.count).bigEndian, Array.init) + packet }
        _ = packet.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let answer: (OSCMessage) -> Bool = { $0.arguments.first == .string(message.path) }
        if tcp { return TCPPeers.readMessages(fd, until: answer, timeout: 2) }
        var set = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        var datagram = [UInt8](repeating: 0, count: 65536)
        while poll(&set, 1, 2000) > 0 {
            let n = recv(fd, &datagram, datagram.count, 0)
            guard n > 0 else { break }
            if let found = TCPPeers.decodeMessage(Array(datagram[0..<n])), answer(found) { return found }
        }
        return nil
    }
}
