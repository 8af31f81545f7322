import Foundation

/// Where a request may come from (docs/HTTP.md, "Who may connect"): every request's `Host`
/// (`hostRefusal`), and for a WebSocket also which browsers' pages may open it. A WebSocket
/// changes things, and a browser lets any page open one to any address, so a page from elsewhere
/// could reach a router on the listener's own network. Refused:
/// - a request whose `Origin` (sent by every browser) is not the router's own page: its host and
///   port must be the request's `Host`;
/// - a request whose `Host` is a name that is not this machine's (DNS rebinding: an outside name
///   made to point at the router gives its page the same origin): allowed are IP addresses,
///   `localhost` (and names under it), and this machine's host name, with or without `.local`.
/// Programs that are not browsers (OSCQuery clients) send no `Origin` and are not refused for it.
///
/// This is a browser's defence against other sites, never a proof of who the peer is: any
/// program may send any `Origin`. Passing it grants nothing; rights come from the peer's address
/// and the page's key (docs/HTTP.md, "Who may do what").
public enum OriginCheck {
    /// Why the upgrade is refused, or nil.
    public static func refusal(host: String?, origin: String?, machineNames: [String]) -> String? {
        guard let host else { return "the request has no valid Host" }
        if let refusal = hostRefusal(host, machineNames: machineNames) { return refusal }
        guard let origin else { return nil }
        guard let url = URL(string: origin), let scheme = url.scheme, scheme == "http" || scheme == "https", let originHost = url.host else {
            return "the page's origin '\(origin.prefix(128))' is not this router's"
        }
        let bracketed = originHost.contains(":") && !originHost.hasPrefix("[") ? "[\(originHost)]" : originHost
        let originAuthority = bracketed + (url.port.map { ":\($0)" } ?? "")
        guard originAuthority.lowercased() == host.lowercased() else {
            return "a page from \(origin.prefix(128)) may not control this router (only its own page may)"
        }
        return nil
    }

    /// Why a request's `Host` is refused (any request, not only an upgrade: a page rebound to
    /// the router's address must not read it either), or nil.
    public static func hostRefusal(_ host: String, machineNames: [String]) -> String? {
        guard let hostName = hostName(host) else { return "the request has no valid Host" }
        let lowered = hostName.lowercased()
        let isAddress = IPv4Address(lowered) || lowered.contains(":")
        let isLocal = lowered == "localhost" || lowered.hasSuffix(".localhost")
        let isMachine = machineNames.contains { $0.lowercased() == lowered || "\($0.lowercased()).local" == lowered }
        guard isAddress || isLocal || isMachine else {
            return "Host '\(hostName.prefix(128))' is not this machine's name; open the page by the router's address"
        }
        return nil
    }

    /// The name part of a Host header (`name`, `name:port`, `[v6]:port`), or nil if malformed.
    static func hostName(_ host: String) -> String? {
        if host.hasPrefix("[") {
            guard let end = host.firstIndex(of: "]") else { return nil }
            return String(host[host.index(after: host.startIndex)..<end])
        }
        let name = host.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        return name.isEmpty ? nil : name
    }

    private static func IPv4Address(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }

    /// This machine's host name (read once).
    static let machineNames: [String] = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return [] }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? [] : [name]
    }()
}
