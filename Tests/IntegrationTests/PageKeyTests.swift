import Foundation
import JackRig
import OSCTransport
import SessionStore
import Testing

/// Issue 36: a peer's rights come from who it is (its address, or the control page's key it
/// holds), never from what it says. The daemon under jackd, real WebSockets (the OSCQuery client
/// of Resources/oscquery_client.py), OSC over UDP and TCP, plain HTTP, and duckctl.
@Suite("Rights from an address or the page's key", .serialized)
struct PageKeyTests {
    /// Registers `synth` from a UDP client of its own (which then owns it) and returns that client.
    static func synthOwnedByAnother(_ rig: OSCRig) throws -> OSCClient {
        let owner = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(owner, OSCMessage("/app/register", [.string("synth"), .string("ambient")]))?.path == "/reply")
        return owner
    }

    /// A WebSocket opened with `key` (nil: none) and an Origin equal to Host, as the page's.
    static func webSocket(_ rig: OSCRig, key: String?) throws -> OSCQueryClient {
        let client = try OSCQueryClient(httpPort: Int(rig.httpPort))
        #expect(client.call("connect_with", key ?? NSNull(), "http://127.0.0.1:\(rig.httpPort)")?["connected"] as? Bool == true)
        return client
    }

    /// Whether `client` may change synth (a reply: true) or is refused -5 (false); nil for
    /// anything else. A `/ping` after it tells when the answer has come.
    static func maySetSynth(_ client: OSCQueryClient, _ value: Double) -> Bool? {
        client.osc("/app/synth/volume", ("f", value))
        client.osc("/ping")
        let frames = client.until(["osc": "/reply", "args": ["/ping"]]).frames.compactMap(\.oscFrame)
        let answer = frames.first { ($0.path == "/reply" || $0.path == "/error") && $0.args.first as? String == "/app/synth/volume" }
        switch answer?.path {
        case "/reply": return true
        case "/error": return answer?.args.dropFirst().first as? Int == -5 ? false : nil
        default: return nil
        }
    }

    @Test("the key is made at the first start (256 bits as 43 base64url characters, mode 0600, beside the state file) and is the same after a restart; a WebSocket that presents it may change another client's app, one with a wrong key may not; /rights says which")
    func keyGrantsAPersonsRights() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let key = try #require(rig.pageKey(), "a key beside the state file: \(rig.pageKeyFile.path)")
        #expect(key.utf8.count == 43 && PageKeyFile.isWellFormed(key), "\(key.utf8.count) characters")
        var status = stat()
        #expect(stat(rig.pageKeyFile.path, &status) == 0 && status.st_mode & 0o777 == 0o600, "mode \(String(status.st_mode & 0o777, radix: 8))")
        let owner = try Self.synthOwnedByAnother(rig)

        let person = try Self.webSocket(rig, key: key)
        person.osc("/rights")
        #expect(person.until(["osc": "/reply", "args": ["/rights", "admin", "key"]]).matched)
        #expect(Self.maySetSynth(person, 0.5) == true, "the key's holder may change any app")

        var wrong = Array(key)
        wrong[20] = wrong[20] == "A" ? "B" : "A"
        for presented in [String(wrong), String(key.dropLast()), "", key + "x"] {
            let guesser = try Self.webSocket(rig, key: presented)
            #expect(Self.maySetSynth(guesser, 0.25) == false, "a wrong key (\(presented.count) characters) gives the address's rights only")
            guesser.osc("/rights")
            #expect(guesser.until(["osc": "/reply", "args": ["/rights", "owner", "osc.allow"]]).matched)
        }
        #expect(try ask(owner, OSCMessage("/rights"))?.arguments == [.string("/rights"), .string("owner"), .string("osc.allow")])
        #expect(try rig.query("/app/synth/volume")?.arguments == [.string("/app/synth/volume"), .float(0.5)], "only the key's holder changed it")

        // Kept: a restart (kill -9, nothing saved on the way out) finds the same key.
        rig.kill9()
        try rig.restart()
        #expect(rig.pageKey() == key)
        let afterRestart = try Self.webSocket(rig, key: key)
        afterRestart.osc("/rights")
        #expect(afterRestart.until(["osc": "/reply", "args": ["/rights", "admin", "key"]]).matched, "the kept key still grants")
    }

    @Test("/page/key/rotate: refused (-5) without the key or an osc.admin address, and the key stays; with the key, a new one is kept and the old grants nothing: WebSockets opened with it lose their rights at once, new ones get their address's rights; the new key grants")
    func rotation() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let key = try #require(rig.pageKey())
        let owner = try Self.synthOwnedByAnother(rig)
        let person = try Self.webSocket(rig, key: key)
        #expect(Self.maySetSynth(person, 0.5) == true)

        for arguments: [OSCArgument] in [[], [.string(String(key.reversed()))], [.string("")]] {
            let refused = try ask(owner, OSCMessage("/page/key/rotate", arguments))
            #expect(refused?.path == "/error" && refused?.arguments.dropFirst().first == .int32(-5), "\(String(describing: refused))")
        }
        let script = try Self.webSocket(rig, key: nil)
        script.osc("/page/key/rotate")
        #expect(script.until(["osc": "/error", "args": ["/page/key/rotate", -5]]).matched, "a WebSocket without the key may not")
        #expect(rig.pageKey() == key, "refused: the key is unchanged")

        // Changed by one who gives the key (as duckctl page --new-key does).
        let rotated = try ask(owner, OSCMessage("/page/key/rotate", [.string(key)]))
        #expect(rotated?.arguments == [.string("/page/key/rotate"), .string(rig.pageKeyFile.path)], "\(String(describing: rotated))")
        let newKey = try #require(rig.pageKey())
        #expect(newKey != key && PageKeyFile.isWellFormed(newKey))
        #expect(Self.maySetSynth(person, 0.25) == false, "the WebSocket opened with the old key has its address's rights only, at once")
        person.osc("/rights")
        #expect(person.until(["osc": "/reply", "args": ["/rights", "owner", "osc.allow"]]).matched)
        #expect(Self.maySetSynth(try Self.webSocket(rig, key: key), 0.25) == false, "the old key opens nothing")
        let newPerson = try Self.webSocket(rig, key: newKey)
        #expect(Self.maySetSynth(newPerson, 0.75) == true, "the new key grants a person's rights")
        // A holder of the key on a WebSocket may change it too; then it holds nothing.
        newPerson.osc("/page/key/rotate")
        #expect(newPerson.until(["osc": "/reply", "args": ["/page/key/rotate"]]).matched)
        #expect(rig.pageKey() != newKey && rig.pageKey() != nil)
        #expect(Self.maySetSynth(newPerson, 0.5) == false)
        #expect(rig.log.contains("the control page's key changed; control page: http://127.0.0.1:\(rig.httpPort)/ui/#key=\(rig.pageKey() ?? "?")"),
                "the daemon logs the new link")
    }

    @Test("an osc.admin address has every app without the key (/rights says osc.admin), and may change the key without giving it")
    func adminAddress() throws {
        let rig = try OSCRig(osc: #", "admin": ["127.0.0.1/32"]"#, http: true)
        defer { rig.close() }
        let key = try #require(rig.pageKey())
        let owner = try Self.synthOwnedByAnother(rig)
        let surface = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(surface, OSCMessage("/rights"))?.arguments == [.string("/rights"), .string("admin"), .string("osc.admin")])
        #expect(try ask(surface, OSCMessage("/app/synth/volume", [.float(0.5)]))?.path == "/reply", "an admin address may change another's app")
        let rotated = try ask(surface, OSCMessage("/page/key/rotate"))
        #expect(rotated?.path == "/reply", "\(String(describing: rotated))")
        #expect(rig.pageKey() != key && rig.pageKey() != nil)
        _ = owner
    }

    @Test("the key is in no answer to a peer that did not send it: /state, /page, /rights and errors over UDP, TCP and the WebSocket; the namespace, HOST_INFO, the page's files and HTTP errors")
    func keyNeverServed() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let key = try #require(rig.pageKey())
        var answers: [String] = []

        let page = try rig.query("/page")
        #expect(page?.arguments == [.string("/page"), .string("http://127.0.0.1:\(rig.httpPort)/ui/"), .string(rig.pageKeyFile.path)],
                "/page says where the page and its key are, not what the key is: \(String(describing: page))")
        let queries: [(String, [OSCArgument])] = [
            ("/state", []), ("/page", []), ("/rights", []), ("/page/key/rotate", []), ("/page/key/rotate", [.string("wrong")]),
            ("/page/key/rotate", [.string(String(key.dropLast()))]), ("/page/key/rotate", [.int32(1)]),
            ("/page/key/rotate", [.string(key.lowercased()), .string("more")]), ("/page/key", []), ("/page", [.string("x")]),
        ]
        for transport in [OSCURL.Transport.udp, .tcp] {
            for (path, arguments) in queries {
                let answer = try #require(try rig.query(path, arguments, transport: transport), "\(path) answered")
                answers.append("\(answer)")
            }
        }
        for target in ["/", "/?HOST_INFO", "/ui/", "/ui/index.html", "/ui/app.js", "/ui/show.js", "/ui/style.css", "/app", "/page", "/page/key",
                       "/?key", "/nosuch", "/ui/nosuch", "/state?VALUE"] {
            let response = try HTTPClient.get(port: rig.httpPort, target)
            answers.append("\(response.status) \(response.headers) \(response.text)")
        }
        // A WebSocket without the key, and one with a wrong key: their replies and errors.
        for presented in [nil, "not-the-key-but-long-enough-to-look-like-one"] {
            let client = try Self.webSocket(rig, key: presented)
            for (path, arguments) in queries {
                write(client, path, arguments)
            }
            _ = client.call("text", #"{"COMMAND": "LISTEN", "DATA": "/page"}"#)
            answers.append("\(client.drain(1))")
        }
        #expect(answers.count > 30)
        for answer in answers {
            #expect(!answer.contains(key), "the key was served: \(answer.prefix(300))")
        }
        // The search would find it: the daemon's own log (its owner's terminal, the journal) has the link.
        #expect(rig.log.contains("control page: http://127.0.0.1:\(rig.httpPort)/ui/#key=\(key)"))
    }

    /// Sends an OSC message with any arguments on the WebSocket.
    private func write(_ client: OSCQueryClient, _ path: String, _ arguments: [OSCArgument]) {
        switch arguments.count {
        case 0: client.osc(path)
        default:
            let typed: [(String, Any)] = arguments.map { argument in
                switch argument {
                case let .string(text): ("s", text)
                case let .int32(value): ("i", Int(value))
                default: ("s", "\(argument)")
                }
            }
            client.osc(path, arguments: typed)
        }
    }

    @Test("duckctl page prints the link with the current key (read from the router's key file); --new-key changes it and the old one grants nothing; --qr prints it as a QR code")
    func duckctlPage() throws {
        let rig = try OSCRig(http: true)
        defer { rig.close() }
        let key = try #require(rig.pageKey())
        let port = "\(rig.port)"
        let printed = try DuckctlTests.duckctl(["page", "--port", port])
        #expect(printed.status == 0 && printed.stdout == "http://127.0.0.1:\(rig.httpPort)/ui/#key=\(key)\n", "\(printed)")

        let rotated = try DuckctlTests.duckctl(["page", "--new-key", "--port", port])
        let newKey = try #require(rig.pageKey())
        #expect(newKey != key)
        #expect(rotated.status == 0 && rotated.stdout == "http://127.0.0.1:\(rig.httpPort)/ui/#key=\(newKey)\n", "\(rotated)")
        #expect(try DuckctlTests.duckctl(["--port", port, "page"]).stdout == rotated.stdout, "the new link from then on")
        _ = try Self.synthOwnedByAnother(rig)
        #expect(Self.maySetSynth(try Self.webSocket(rig, key: key), 0.5) == false, "the old link's key grants nothing")

        let qr = try DuckctlTests.duckctl(["page", "--qr", "--port", port])
        #expect(qr.status == 0, "\(qr)")
        let lines = qr.stdout.split(separator: "\n")
        #expect(lines.first.map(String.init) == "http://127.0.0.1:\(rig.httpPort)/ui/#key=\(newKey)")
        #expect(lines.count > 15 && lines.dropFirst().allSatisfy { $0.allSatisfy { " █▀▄".contains($0) } }, "a QR code in block characters:\n\(qr.stdout)")

        // The key is read from the file: a user who cannot read it is told so, not given the key some other way.
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: rig.pageKeyFile.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: rig.pageKeyFile.path) }
        if getuid() != 0 {
            let unreadable = try DuckctlTests.duckctl(["page", "--port", port])
            #expect(unreadable.status == 1 && !unreadable.stdout.contains(newKey) && unreadable.stderr.contains("run it as the router's user"), "\(unreadable)")
        }
    }
}
