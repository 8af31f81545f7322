@testable import HTTPControl
import SessionStore
import Testing

/// Where the control page's link points, and how a WebSocket presents the page's key.
@Suite("the control page's link and key")
struct PageLinkTests {
    static let lan = try! NetworkRange.parse("192.168.1.0/24").get()
    static let loopback = try! NetworkRange.parse("127.0.0.1/32").get()

    @Test("the link's host: the bind address; on every interface, the first non-loopback address osc.allow admits (IPv4 first), else 127.0.0.1")
    func host() {
        let interfaces = ["127.0.0.1", "::1", "fe80::1%eth0", "2001:db8::5", "10.0.0.7", "192.168.1.20"]
        #expect(HTTPControlServer.pageHost(bind: "127.0.0.1", allow: [Self.lan], interfaces: interfaces) == "127.0.0.1")
        #expect(HTTPControlServer.pageHost(bind: "192.168.1.20", allow: [Self.lan], interfaces: interfaces) == "192.168.1.20")
        #expect(HTTPControlServer.pageHost(bind: "0.0.0.0", allow: [Self.loopback, Self.lan], interfaces: interfaces) == "192.168.1.20")
        #expect(HTTPControlServer.pageHost(bind: "::", allow: [Self.loopback, Self.lan], interfaces: interfaces) == "192.168.1.20")
        #expect(HTTPControlServer.pageHost(bind: "0.0.0.0", allow: [Self.loopback], interfaces: interfaces) == "127.0.0.1")
        let v6 = try! NetworkRange.parse("2001:db8::/32").get()
        #expect(HTTPControlServer.pageHost(bind: "::", allow: [v6], interfaces: interfaces) == "2001:db8::5")
    }

    @Test("the key on a WebSocket's URL: ?key=, with other words or none, on any path")
    func presentedKey() {
        #expect(WebSocketSession.presentedKey(in: "/?key=abc_-D") == "abc_-D")
        #expect(WebSocketSession.presentedKey(in: "/ui/?x=1&key=abc") == "abc")
        #expect(WebSocketSession.presentedKey(in: "/?key=") == "")
        #expect(WebSocketSession.presentedKey(in: "/") == nil)
        #expect(WebSocketSession.presentedKey(in: "/?keys=abc") == nil)
        #expect(WebSocketSession.presentedKey(in: "/?key=a%2Db") == "a-b")
    }
}
