import Foundation
import InMemoryLogging
import Logging
@testable import RemoteRoutes
import SessionStore
import Testing

/// The sender supervisor with real child processes (`sh`), not zita-j2n: what it restarts, logs
/// and stops. The sender itself, across network namespaces: IntegrationTests.RemoteRouteTests.
@Suite("A supervised sender", .serialized)
struct BridgeSenderTests {
    let log = InMemoryLogHandler()
    var logger: Logger {
        var logger = Logger(label: "test") { _ in log }
        logger.logLevel = .trace
        return logger
    }

    func messages() -> [String] { log.entries.map { "\($0.message)" } }

    /// Waits until `condition` holds (events, not a fixed sleep, decide); fails after `timeout`.
    func waitFor(_ what: String, timeout: Double = 10, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { throw Failure("\(what): not within \(timeout) s; log: \(messages())") }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func pid(in message: String, of entries: [InMemoryLogHandler.Entry]) -> pid_t? {
        entries.last { "\($0.message)" == message }?.metadata["pid"].flatMap { pid_t("\($0)") }
    }

    @Test("a sender that exits is started again, later each time (backoff), its output logged line by line with its exit status")
    func restartedWithBackoff() throws {
        let sender = BridgeSender(route: "stage", executable: "/bin/sh", arguments: ["-c", "echo sending to 10.77.0.2; echo >&2 no receiver; exit 3"],
                                  logger: logger)
        sender.start()
        defer { sender.stop() }
        try waitFor("three runs") { messages().filter { $0 == "sh started" }.count >= 3 }
        let lines = messages()
        #expect(lines.contains("sh: sending to 10.77.0.2") && lines.contains("sh: no receiver"), "\(lines)")
        let exits = lines.filter { $0.hasPrefix("sh exited (exit status 3); starting it again in") }
        #expect(exits.count >= 2, "\(lines)")
        #expect(exits.count >= 2 && exits[0].hasSuffix("in 0.5 s") && exits[1].hasSuffix("in 1.0 s"), "the wait doubles: \(exits)")
        #expect(log.entries.allSatisfy { $0.metadata["route"] == "stage" })
    }

    @Test("stop ends a running sender with SIGTERM, even when the thread that made the supervisor blocks SIGTERM (as the daemon's threads do), and nothing is started after")
    func stopsTheChild() throws {
        // The daemon blocks SIGTERM in every thread; the supervisor's thread inherits that mask
        // from the thread that starts it, and a child would inherit it from there.
        var block = sigset_t(), old = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &block, &old)
        let sender = BridgeSender(route: "stage", executable: "/bin/sleep", arguments: ["60"], logger: logger)
        sender.start()
        pthread_sigmask(SIG_SETMASK, &old, nil)
        try waitFor("the child") { Self.pid(in: "sleep started", of: log.entries) != nil }
        let pid = try #require(Self.pid(in: "sleep started", of: log.entries))
        #expect(kill(pid, 0) == 0, "running")
        let asked = Date()
        sender.stop()
        #expect(Date().timeIntervalSince(asked) < 2, "stopped by SIGTERM, not after the 2 s before SIGKILL")
        #expect(messages().contains("sleep stopped (killed by signal \(SIGTERM))"), "\(messages())")
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "the child is gone and reaped")
        let count = messages().filter { $0 == "sleep started" }.count
        Thread.sleep(forTimeInterval: BridgeSender.firstDelay * 2)   // paced: nothing may happen in it
        #expect(messages().filter { $0 == "sleep started" }.count == count, "not started again after stop")
    }

    @Test("the child runs with JACK_NO_START_SERVER set and no signal blocked, as the test process's child (setpriv execs it); stop ends what it started too")
    func childSetup() throws {
        let sender = BridgeSender(route: "stage", executable: "/bin/sh",
                                  arguments: ["-c", "grep -E '^(SigBlk|PPid)' /proc/self/status; echo fds=$(ls /proc/$$/fd | sort -n | tr '\\n' ' '); echo server=$JACK_NO_START_SERVER; sleep 60 & echo sleeper=$!; wait"],
                                  logger: logger)
        let leak = open("/dev/null", O_RDONLY)   // no O_CLOEXEC
        defer { close(leak) }
        // Started from a thread that blocks SIGTERM and SIGHUP, as the daemon's threads do: the
        // child must block nothing all the same.
        var block = sigset_t(), old = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGTERM)
        sigaddset(&block, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &block, &old)
        sender.start()
        pthread_sigmask(SIG_SETMASK, &old, nil)
        defer { sender.stop() }
        try waitFor("its report") { messages().contains { $0.hasPrefix("sh: sleeper=") } }
        let lines = messages()
        #expect(lines.contains("sh: server=1"), "\(lines)")
        // None of the starting process's descriptors (a descriptor without close-on-exec, as
        // libjack's socket to its server is in the daemon).
        let fds = lines.first { $0.hasPrefix("sh: fds=") }.map { $0.dropFirst("sh: fds=".count).split(separator: " ").compactMap { Int32($0) } } ?? []
        #expect(fds.starts(with: [0, 1, 2]) && !fds.contains(leak), "the child's descriptors \(fds); the test's open one \(leak)")
        #expect(lines.contains { $0.hasPrefix("sh: SigBlk:") && $0.hasSuffix("0000000000000000") }, "\(lines)")
        // setpriv execs the sender: its pid is the one started, and it is the test process's child.
        let pid = try #require(Self.pid(in: "sh started", of: log.entries))
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        #expect(status.contains("PPid:\t\(getpid())"), "\(status)")
        // The parent-death signal is not shown in /proc: BridgedRouteTests kills a router and sees
        // its sender go.
        // A child's own child (which holds the output pipe) ends with it, and stop does not wait
        // for it to end by itself.
        let sleeper = try #require(messages().first { $0.hasPrefix("sh: sleeper=") }.flatMap { pid_t($0.dropFirst("sh: sleeper=".count)) })
        let asked = Date()
        sender.stop()
        #expect(Date().timeIntervalSince(asked) < 2, "stopped by SIGTERM to its process group")
        try waitFor("the grandchild gone") { kill(sleeper, 0) != 0 }
    }

    @Test("the same failure again and again (no JACK server) is reported once, then once per repeatReport with its count; the runs between only at debug level")
    func repeatedFailureQuiet() throws {
        let sender = BridgeSender(route: "stage", executable: "/bin/sh", arguments: ["-c", "echo >&2 cannot connect to JACK; exit 1"],
                                  logger: logger, repeatReport: 2)
        sender.start()
        defer { sender.stop() }
        // Runs at 0, 0.5, 1.5 and 3.5 s: the first reported, two quiet, the fourth reported with the count.
        try waitFor("the repeated failure reported again") { messages().contains { $0.hasPrefix("sh still exiting (exit status 1): 3 times in") } }
        let entries = log.entries
        let loud = entries.filter { $0.level > .debug }.map { "\($0.message)" }
        let quiet = entries.filter { $0.level == .debug }.map { "\($0.message)" }
        #expect(loud.filter { $0.hasPrefix("sh exited") }.count == 1 && loud.filter { $0.hasPrefix("sh still exiting") }.count == 1, "\(loud)")
        #expect(loud.filter { $0 == "sh: cannot connect to JACK" }.count == 2, "its output with each report: \(loud)")
        #expect(quiet.filter { $0.hasPrefix("sh exited (exit status 1)") }.count == 2 && quiet.filter { $0 == "sh: cannot connect to JACK" }.count == 2,
                "the runs between at debug: \(quiet)")
    }

    @Test("senders that ignore SIGTERM, stopped together, are all killed after one shared 2 s wait, not 2 s each one after another")
    func stoppedTogether() throws {
        let senders = (1...3).map { n in
            BridgeSender(route: "stage\(n)", executable: "/bin/sh", arguments: ["-c", "trap '' TERM; echo deaf; sleep 30"], logger: logger)
        }
        for sender in senders { sender.start() }
        try waitFor("all three running") { messages().filter { $0 == "sh: deaf" }.count == 3 }
        let asked = Date()
        let first = senders.map { $0.requestStop() }
        #expect(first == [true, true, true])
        let deadline = DispatchTime.now() + 2
        for sender in senders { sender.awaitStop(killAfter: deadline) }
        let took = Date().timeIntervalSince(asked)
        // One after another they would take 2 s each (6 s and more).
        #expect(took >= 1.9 && took < 4.5, "stopped in \(took) s")
        #expect(messages().filter { $0.hasPrefix("sh stopped") }.count == 3, "\(messages())")
        #expect(senders.allSatisfy { !$0.requestStop() }, "a second request does nothing")
    }

    @Test("restartSoon cuts the wait before the next start short (the JACK server is back)")
    func restartSoon() throws {
        let sender = BridgeSender(route: "stage", executable: "/bin/sh", arguments: ["-c", "exit 1"], logger: logger)
        sender.start()
        defer { sender.stop() }
        // Let the wait grow to 4 s and more (0.5, 1, 2, 4).
        try waitFor("four runs", timeout: 15) { messages().filter { $0 == "sh started" }.count >= 4 }
        let before = messages().filter { $0 == "sh started" }.count
        try waitFor("the long wait") { messages().last?.hasPrefix("sh exited") == true && messages().last?.hasSuffix("in 4.0 s") == true }
        let asked = Date()
        sender.restartSoon()
        try waitFor("a start") { messages().filter { $0 == "sh started" }.count > before }
        #expect(Date().timeIntervalSince(asked) < 3, "started again before the 4 s wait was over")
    }
}

@Suite("A sender's command line")
struct SenderArgumentsTests {
    @Test("zita-j2n's command line: client name, channels, sample format, the JACK server when one is named, the far end")
    func commandLine() {
        var stage = Session.Remote.Bridge(host: "10.77.0.2", port: 30123, client: "j2n-stage")
        #expect(RemoteRoutes.senderArguments(stage, channels: 2, server: nil) == ["--jname", "j2n-stage", "--chan", "2", "--24bit", "10.77.0.2", "30123"])
        stage.format = .float
        #expect(RemoteRoutes.senderArguments(stage, channels: 1, server: "show")
                == ["--jname", "j2n-stage", "--chan", "1", "--float", "--jserv", "show", "10.77.0.2", "30123"])
    }
}
