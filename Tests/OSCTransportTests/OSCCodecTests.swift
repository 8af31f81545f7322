import OSCTransport
import Testing

@Suite("OSC codec (liblo)")
struct OSCCodecTests {
    @Test("a message with every argument type survives encoding and decoding")
    func roundTrip() throws {
        let message = OSCMessage("/app/music/volume", [
            .int32(-7), .float(0.5), .string("héllo"), .blob([1, 2, 3]), .int64(1 << 40), .double(-2.25),
            .symbol("sym"), .character(65), .midi([1, 2, 3, 4]), .true, .false, .nil, .infinitum,
            .timetag(OSCTimetag(seconds: 3_900_000_000, fraction: 12345)), .string(""),
        ])
        let decoded = try OSCCodec.decode(OSCCodec.encode(message))
        #expect(decoded == .message(message))
    }

    @Test("a bundle keeps its time tag and its messages in order")
    func bundle() throws {
        let messages = [OSCMessage("/a", [.int32(1)]), OSCMessage("/b", [.string("x")])]
        let tag = OSCTimetag(unixTime: 1_800_000_000.25)
        #expect(try OSCCodec.decode(OSCCodec.encodeBundle(messages, timetag: tag)) == .bundle(tag, messages.map { .message($0) }))
        #expect(abs(tag.unixTime - 1_800_000_000.25) < 1e-6)
    }

    @Test("malformed packets are refused, not crashed on", arguments: [
        [UInt8](), [0x2f], Array("/abc".utf8), Array("/abc\0\0\0\0,i\0\0".utf8), Array("/abc\0\0\0\0,s\0\0abcd".utf8),
        Array("abc\0,\0\0\0".utf8), Array("#bundle\0".utf8), Array("#bundle\0\0\0\0\0\0\0\0\u{1}\0\0\0\u{40}".utf8),
        Array("/a\0\0,q\0\0".utf8),
    ])
    func malformed(bytes: [UInt8]) {
        #expect(throws: OSCDecodeError.self) { try OSCCodec.decode(bytes) }
    }

    @Test("OSC URLs: udp, tcp, bare host:port, IPv6; malformed ones are refused")
    func urls() {
        #expect(OSCURL("osc.udp://127.0.0.1:9000/") == OSCURL(transport: .udp, host: "127.0.0.1", port: 9000))
        #expect(OSCURL("osc.tcp://localhost:9001") == OSCURL(transport: .tcp, host: "localhost", port: 9001))
        #expect(OSCURL("10.0.0.2:53") == OSCURL(transport: .udp, host: "10.0.0.2", port: 53))
        #expect(OSCURL("osc.udp://[::1]:9000/")?.host == "::1")
        for bad in ["", "osc.udp://host", "osc.unix:///tmp/x", "http://a:1/", "osc.udp://:80/", "osc.udp://a:0/", "osc.udp://a:99999/"] {
            #expect(OSCURL(bad) == nil, "\(bad)")
        }
    }
}

@Suite("OSC server and client over loopback")
struct OSCServerTests {
    @Test("UDP and TCP (length-prefixed) requests reach the handler; replies reach the client", arguments: [OSCURL.Transport.udp, .tcp])
    func echo(transport: OSCURL.Transport) throws {
        var configuration = OSCServer.Configuration()
        configuration.port = 0
        let server = try OSCServer(configuration: configuration)
        server.start { [unowned server] bytes, peer in
            guard case let .message(m)? = try? OSCCodec.decode(bytes) else { return }
            server.send(OSCCodec.encode(OSCMessage("/reply", [.string(m.path)] + m.arguments)), to: peer)
        }
        defer { server.stop() }
        let client = try OSCClient(OSCURL(transport: transport, host: "127.0.0.1", port: server.port))
        try client.send(OSCMessage("/ping", [.int32(3), .string("x")]))
        let answer = try client.receive(timeout: 2) { $0.path == "/reply" }
        #expect(answer == OSCMessage("/reply", [.string("/ping"), .int32(3), .string("x")]))
    }
}
