import Foundation

/// A small HTTP/1.1 client over plain sockets, for tests of the daemon's HTTP server: it can
/// choose its source address (127.0.0.2, outside an allow list of 127.0.0.1) and send bytes that
/// are not valid HTTP, which URLSession cannot. One request per connection (`Connection: close`),
/// read until the server closes it.
enum HTTPClient {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: Data
        /// The body as a JSON object.
        func json() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: body) as? [String: Any] else {
                throw Unexpected(description: "not a JSON object: \(String(decoding: body, as: UTF8.self))")
            }
            return object
        }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    static func get(port: UInt16, _ target: String, method: String = "GET", source: String? = nil, timeout: Double = 5) throws -> Response {
        try send(port: port, Data("\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8),
                 source: source, timeout: timeout)
    }

    /// Sends `request` as it is and parses what comes back until the server closes.
    static func send(port: UInt16, _ request: Data, source: String? = nil, timeout: Double = 5) throws -> Response {
        let bytes = try exchange(port: port, request, source: source, timeout: timeout)
        guard let end = bytes.range(of: Data("\r\n\r\n".utf8)) else {
            throw Failure(description: "no complete response head in \(bytes.count) bytes: \(String(decoding: bytes.prefix(200), as: UTF8.self))")
        }
        let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure(description: "bad status line: \(head[0])") }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: headers, body: Data(bytes[end.upperBound...]))
    }

    /// Connects (from `source`, if given), writes `request` and reads until the server closes the
    /// connection or `timeout` passes.
    static func exchange(port: UInt16, _ request: Data, source: String? = nil, timeout: Double = 5) throws -> Data {
        let fd = try connection(port: port, request, source: source, timeout: timeout)
        defer { close(fd) }
        var received = Data()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { break }
            received.append(contentsOf: chunk[0..<n])
        }
        return received
    }

    /// Connects (from `source`, if given), writes `request` and returns the open socket, unread:
    /// a peer that holds a connection. The caller closes it.
    static func connection(port: UInt16, _ request: Data, source: String? = nil, timeout: Double = 5) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var handedOver = false
        defer { if !handedOver { close(fd) } }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        func address(_ host: String, _ port: UInt16) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            return address
        }
        func withSockaddr<T>(_ address: sockaddr_in, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
            var copy = address
            return withUnsafePointer(to: &copy) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        if let source {
            guard withSockaddr(address(source, 0), { bind(fd, $0, $1) }) == 0 else {
                throw Failure(description: "bind to \(source): \(String(cString: strerror(errno)))")
            }
        }
        guard withSockaddr(address("127.0.0.1", port), { connect(fd, $0, $1) }) == 0 else {
            throw Failure(description: "connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        // The server may answer (and close) before it has read everything, as it does for a
        // body over its limit: a failed write is no failure here; what it answered is the verdict.
        _ = request.withUnsafeBytes { buffer -> Int in
            var sent = 0
            while sent < buffer.count {
                let n = Glibc.send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                if n <= 0 { break }
                sent += n
            }
            return sent
        }
        handedOver = true
        return fd
    }
}
