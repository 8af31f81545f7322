import Foundation
import JackRig
import OSCTransport
import SessionStore
import Synchronization
import Testing

/// `duckctl page` reads the router's key from this machine's disk: it asks only a router on this
/// machine, and reads only a file that can be the router's key file.
extension PageKeyTests {
    @Test("duckctl page refuses a router that is not on this machine (--host, $DUCKROUTER_HOST) before it asks anything")
    func duckctlPageRefusesARemoteRouter() throws {
        // 198.51.100.7 (TEST-NET-2) is no machine's: before it is asked, duckctl says why it will not.
        for (arguments, environment) in [(["page", "--host", "198.51.100.7", "--port", "9"], [:]),
                                         (["page", "--new-key", "--port", "9"], ["DUCKROUTER_HOST": "198.51.100.7"])] {
            let refused = try DuckctlTests.duckctl(arguments, environment: environment)
            #expect(refused.status == 1 && refused.stderr.contains("198.51.100.7 is not this machine"), "\(arguments) \(environment): \(refused)")
        }
    }

    @Test("duckctl page asks only a router that runs as this user: a port another user's program holds gets nothing asked",
          .enabled(if: getuid() == 0, "needs root to run a program as another user"))
    func duckctlPageRefusesAnotherUsersPort() throws {
        // A program of user nobody's on a UDP port of loopback: it prints its port, then waits for stdin to close.
        let squatter = Process()
        squatter.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        squatter.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", """
            import socket, sys
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            print(s.getsockname()[1], flush=True)
            sys.stdin.read()
            """]
        let (output, input) = (Pipe(), Pipe())
        squatter.standardOutput = output
        squatter.standardInput = input
        try squatter.run()
        defer {
            try? input.fileHandleForWriting.close()
            squatter.waitUntilExit()
        }
        var line = Data()
        while line.last != 10, let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty { line.append(byte) }
        let port = try #require(UInt16(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)), "the squatter's port")
        let refused = try DuckctlTests.duckctl(["page", "--port", "\(port)"])
        #expect(refused.status == 1 && refused.stderr.contains("it is user 65534's, not this user's"), "\(refused)")
        // Nothing there at all: the same refusal, before a timeout.
        let nobody = try DuckctlTests.duckctl(["page", "--port", "9"])
        #expect(nobody.status == 1 && nobody.stderr.contains("nothing of this user's listens there"), "\(nobody)")
    }

    @Test("duckctl page reads only a file that can be the router's key file: an absolute path to *.page-key, the user's own, mode 0600, not a link; a peer answering /page in the router's place gets no other file read")
    func duckctlPageReadsOnlyAKeyFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckctl-page-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let secret = "a-secret-that-is-not-the-pages-key-0123456789"
        func file(_ name: String, mode: Int) throws -> String {
            let path = folder.appendingPathComponent(name).path
            try (secret + "\n").write(toFile: path, atomically: false, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            return path
        }
        let notAKeyFile = try file("id_ed25519", mode: 0o600)
        let loose = try file("loose.page-key", mode: 0o644)
        let link = folder.appendingPathComponent("link.page-key").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: notAKeyFile)
        let good = try file("good.page-key", mode: 0o600)

        // A squatter on the port: answers /page with the file it names.
        let named = Mutex("")
        let responder = try FakeRouter { message in
            message.path == "/page" ? [.string("http://127.0.0.1:1/ui/"), .string(named.withLock { $0 })] : nil
        }
        defer { responder.stop() }
        for (path, why) in [(notAKeyFile, "a key file's name ends in .page-key"), (loose, "mode 644, not 0600"),
                            (link, "not a regular file"), ("good.page-key", "not an absolute path")] {
            named.withLock { $0 = path }
            let output = try DuckctlTests.duckctl(["page", "--port", "\(responder.port)"])
            #expect(output.status == 1 && !output.stdout.contains(secret) && !output.stderr.contains(secret) && output.stderr.contains(why),
                    "\(path): \(output)")
        }
        named.withLock { $0 = good }
        let read = try DuckctlTests.duckctl(["page", "--port", "\(responder.port)"])
        #expect(read.status == 0 && read.stdout == "http://127.0.0.1:1/ui/#key=\(secret)\n", "a file that can be the key file is read: \(read)")
    }

    @Test("duckctl page takes /page's answer only from the address and port it asked: a forged reply from another port, naming a key file, is ignored")
    func duckctlPageIgnoresForgedReplies() throws {
        try FakeRouter.withPageKey(fromElsewhere: true) { forger, key in
            let output = try DuckctlTests.duckctl(["page", "--port", "\(forger.port)", "--timeout", "1"])
            #expect(output.status != 0 && !output.stdout.contains(key) && !output.stderr.contains(key) && output.stderr.contains("no answer"), "\(output)")
        }
    }

    @Test("duckctl page asked at 127.0.1.1 (Debian's address for the hostname) takes the answer of a router bound to every interface, which comes from 127.0.0.1")
    func duckctlPageAtTheHostnamesAddress() throws {
        try FakeRouter.withPageKey(bind: "0.0.0.0") { router, key in
            let output = try DuckctlTests.duckctl(["page", "--host", "127.0.1.1", "--port", "\(router.port)", "--timeout", "2"])
            #expect(output.status == 0 && output.stdout == "http://127.0.0.1:1/ui/#key=\(key)\n", "\(output)")
        }
    }

    @Test("a daemon started with a relative session (as make run starts it) names its key file by an absolute path in /page")
    func relativeSessionAnswersAnAbsolutePath() throws {
        let rig = try OSCRig(http: true, relativeSession: true)
        defer { rig.close() }
        let page = try rig.query("/page")
        #expect(page?.arguments.last == .string(rig.pageKeyFile.standardizedFileURL.path), "\(String(describing: page))")
        #expect(rig.pageKey() != nil)
    }
}

/// A program on the router's port (UDP, 127.0.0.1) that answers as a router would, with what
/// `replies` says (nil: no answer).
final class FakeRouter: Sendable {
    private let server: OSCServer
    var port: UInt16 { server.port }

    /// `fromElsewhere`: the answers go out from another socket of this machine (another source
    /// port), as a program spraying forged replies at the asker's port sends them.
    init(bind: String = "127.0.0.1", fromElsewhere: Bool = false, replies: @escaping @Sendable (OSCMessage) -> [OSCArgument]?) throws {
        var configuration = OSCServer.Configuration()
        configuration.port = 0
        configuration.bind = bind
        let server = try OSCServer(configuration: configuration)
        self.server = server
        server.start { bytes, peer in
            guard case let .message(message)? = try? OSCCodec.decode(bytes), let values = replies(message) else { return }
            let answer = OSCMessage("/reply", [.string(message.path)] + values)
            if fromElsewhere {
                try? OSCClient(OSCURL(transport: .udp, host: peer.address.host, port: peer.address.port)).send(answer)
            } else {
                _ = server.send(OSCCodec.encode(answer), to: peer)
            }
        }
    }

    func stop() { server.stop() }

    /// Runs `body` with a key file of its own (a new key, kept as the router keeps one) and a
    /// FakeRouter that answers /page with its path and the page at http://127.0.0.1:1/ui/.
    static func withPageKey(bind: String = "127.0.0.1", fromElsewhere: Bool = false,
                            _ body: (FakeRouter, _ key: String) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("duckctl-page-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = PageKeyFile(path: folder.appendingPathComponent("s.page-key").path)
        let (key, _) = try file.loadOrMake()
        let router = try FakeRouter(bind: bind, fromElsewhere: fromElsewhere) { message in
            message.path == "/page" ? [.string("http://127.0.0.1:1/ui/"), .string(file.path)] : nil
        }
        defer { router.stop() }
        try body(router, key)
    }
}
