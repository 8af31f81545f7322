import NIOCore
import OSCTransport
import SessionStore

/// Where a person opens the control page (docs/HTTP.md, "The control page").
extension HTTPControlServer {
    /// The page's address without its key, as a person (a phone on the Wi-Fi) would open it:
    /// `http://<host>:<port>/ui/`.
    public var pageAddress: String {
        let interfaces = (try? System.enumerateDevices())?.compactMap { $0.address?.ipAddress } ?? []
        let host = Self.pageHost(bind: configuration.bind, allow: configuration.allow, interfaces: interfaces)
        return "http://\(host.contains(":") ? "[\(host)]" : host):\(configuration.port)/ui/"
    }

    /// The host of the page's address: the bind address; on every interface (`0.0.0.0`, `::`),
    /// this machine's first address that `osc.allow` admits and that is not loopback (IPv4
    /// first), else 127.0.0.1.
    static func pageHost(bind: String, allow: [NetworkRange], interfaces: [String]) -> String {
        guard bind == "0.0.0.0" || bind == "::" else { return bind }
        let candidates = interfaces.filter { !$0.contains("%") }.sorted { !$0.contains(":") && $1.contains(":") }
        for candidate in candidates {
            guard let address = OSCTransport.SocketAddress(host: candidate, port: 0) else { continue }
            let isLoopback = address.bytes.count == 4 ? address.bytes[0] == 127 : address.bytes == [UInt8](repeating: 0, count: 15) + [1]
            if !isLoopback && allow.contains(where: { $0.contains(address.bytes, port: 0) }) { return candidate }
        }
        return "127.0.0.1"
    }
}
