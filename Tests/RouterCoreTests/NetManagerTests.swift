@testable import RouterCore
import SessionStore
import Testing

@Suite("netjack2's netmanager as the router loads it")
struct NetManagerTests {
    @Test("its load arguments are the session's address and port")
    func loadArguments() {
        var settings = Session.NetJack2Settings()
        #expect(JackLink.NetManager(settings, routes: []).arguments == "-a 225.3.19.154 -p 19000", "netjack2's own defaults")
        settings.address = "10.0.0.1"
        settings.port = 19100
        let manager = JackLink.NetManager(settings, routes: ["stage"])
        #expect(manager.arguments == "-a 10.0.0.1 -p 19100")
        #expect(manager.routes == ["stage"])
    }
}
