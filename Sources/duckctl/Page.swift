import ArgumentParser
import Foundation
import OSCTransport
import SessionStore

extension DuckCtl {
    /// `duckctl page`: the control page's link with its key (docs/HTTP.md, "Who may do what").
    struct Page: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the control page's link, with the key that gives a person's rights over every app.",
            discussion: """
                Asks the router where its page is and where it keeps the page's key (/page), then \
                reads the key from that file (beside the router's state file, mode 0600): run it as \
                the router's user, on the router's machine. It asks only a router on this machine \
                (loopback, or one of its own addresses) that runs as this user, and reads only a file that is the user's \
                own, mode 0600, named *.page-key by an absolute path. The key is never sent over \
                the network to be read. --qr also prints the link as a QR code for a phone's camera (with \
                qrencode: apt install qrencode). --new-key first changes the key \
                (/page/key/rotate), proving the right with the current key, which goes only to a \
                router on loopback (at another address of this machine, only an osc.admin address \
                may change it): pages opened with the old link keep only their address's rights, \
                and the old link grants nothing any more.
                """)
        @OptionGroup var connection: Connection
        @Flag(help: "Also print the link as a QR code in the terminal (needs qrencode).")
        var qr = false
        @Flag(name: .customLong("new-key"), help: "Change the page's key first; the old link stops granting anything.")
        var newKey = false

        func run() throws {
            try duckctl.run {
                // The key is read from a local file: only a router on this machine is asked where it is.
                guard let router = ThisMachine.address(of: connection.host) else {
                    throw Failure(message: "\(connection.host) is not this machine: duckctl page reads the router's key from this machine's disk, so it asks only a router here (run it on the router's machine)", code: 1)
                }
                // The router is this user's: another user's program on its port gets nothing asked.
                let owners = ThisMachine.owners(of: connection.port, tcp: connection.tcp)
                guard owners == [getuid()] else {
                    let who = owners.isEmpty ? "nothing of this user's listens there" : "it is user \(owners.sorted().map(String.init).joined(separator: ", "))'s, not this user's (\(getuid()))"
                    throw Failure(message: "port \(connection.port) (\(connection.tcp ? "TCP" : "UDP")): \(who); duckctl page asks only a router that runs as you, since it reads your key for it", code: 1)
                }
                // The address checked is the one asked: the name is not looked up a second time
                // (an answer that changed between two look-ups could send the key elsewhere).
                var pinned = connection
                pinned.host = router.host
                // Answers only from the router's address and port: the reply names a file to read.
                let client = try pinned.client()
                client.onlyFromServer = true
                let values = try Connection.call(OSCMessage("/page"), on: client, timeout: pinned.timeout)
                if values.count == 1 {
                    throw Failure(message: "the router names its key file only to a peer on loopback or an osc.admin address: ask it at 127.0.0.1 (--host 127.0.0.1, or ::1)", code: 1)
                }
                guard values.count == 2, case let .string(address) = values[0], case let .string(path) = values[1] else {
                    throw Failure(message: "/page: unexpected reply \(values)", code: 1)
                }
                let file = PageKeyFile(path: path)
                if newKey {
                    // The current key proves the right to change it, and goes only to a router on
                    // loopback: to another of this machine's addresses the request goes without it,
                    // and only an osc.admin address is granted it.
                    let current = router.isLoopback ? try Self.key(in: file) : nil
                    _ = try Connection.call(OSCMessage("/page/key/rotate", current.map { [.string($0)] } ?? []), on: client, timeout: pinned.timeout)
                }
                let link = PageKeyFile.link(address: address, key: try Self.key(in: file))
                print(link)
                // qrencode writes to the same standard output: the link goes out first.
                fflush(nil)
                if qr { try Self.printQRCode(link) }
            }
        }

        static func key(in file: PageKeyFile) throws -> String {
            let key: String?
            do throws(PageKeyFile.Failure) {
                key = try file.loadKeyFile()
            } catch {
                throw Failure(message: "\(error) (duckctl page reads the key where the router keeps it: run it as the router's user, on its machine)", code: 1)
            }
            guard let key else {
                throw Failure(message: "\(file.path) holds no key (the router makes one when it starts with HTTP on)", code: 1)
            }
            return key
        }

        /// The link as a QR code in UTF-8 block characters, by qrencode (Debian's package of the
        /// same name), so a phone's camera can open it from the terminal.
        static func printQRCode(_ link: String) throws {
            guard let qrencode = findInPath("qrencode") else {
                throw Failure(message: "--qr needs qrencode, which is not installed: apt install qrencode (the link above works without it)", code: 1)
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: qrencode)
            // The link goes on standard input, not the command line, where ps would show it.
            process.arguments = ["-t", "UTF8", "-m", "2"]
            let input = Pipe()
            process.standardInput = input
            do {
                try process.run()
            } catch {
                throw Failure(message: "cannot run \(qrencode): \(error)", code: 1)
            }
            try? input.fileHandleForWriting.write(contentsOf: Data(link.utf8))
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw Failure(message: "\(qrencode) failed (exit status \(process.terminationStatus))", code: 1)
            }
        }

        private static func findInPath(_ name: String) -> String? {
            let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
            return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        }
    }
}
