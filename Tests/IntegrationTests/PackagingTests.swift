import Foundation
import JackHost
import JackRig
import OSCTransport
import Testing

/// What `make install` and the Debian package install beside the binaries (issue 20): the man
/// pages, the shell completions, the systemd user unit, and the unit run by a real user systemd.
/// The files are made here from the debug build the way scripts/dist.sh makes them from the
/// release one; `make deb-test` checks the package itself in a clean Debian 12 root.
@Suite("installed files", .serialized)
struct PackagingTests {
    static var buildFolder: URL { DaemonTests.binary.deletingLastPathComponent() }
    static var repository: URL { DaemonTests.repository }

    /// A folder of the test's own, removed after it.
    final class Scratch {
        let url: URL
        init(_ name: String) throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("duckrouter-\(name)-\(getpid())-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(at: url) }
        func path(_ relative: String) -> String { url.appendingPathComponent(relative).path }
    }

    /// The man pages, by swift-argument-parser's generate-manual (built by `make test`), in `folder/man1`.
    static func manPages(in folder: String) throws {
        let tool = buildFolder.appendingPathComponent("generate-manual").path
        try #require(FileManager.default.isExecutableFile(atPath: tool),
                     "\(tool) is missing: make test builds it (swift build --product generate-manual)")
        try FileManager.default.createDirectory(atPath: folder + "/man1", withIntermediateDirectories: true)
        for name in ["duckrouter", "duckctl"] {
            let output = try CommandOutput.of(tool, [buildFolder.appendingPathComponent(name).path, "--date", "2026-11-26",
                                                     "--authors", "the duckrouter authors", "--output-directory", folder + "/man1"])
            try #require(output.status == 0, "generate-manual \(name): \(output)")
        }
    }

    /// The unit as `make install` writes it (scripts/dist.sh unit), with this build's paths.
    static func unit(binaries: String, data: String) throws -> String {
        let output = try CommandOutput.of(repository.appendingPathComponent("scripts/dist.sh").path, ["unit"],
                                          environment: ["BINDIR": binaries, "DATADIR": data, "DOCDIR": repository.path])
        try #require(output.status == 0 && output.stderr.isEmpty, "scripts/dist.sh unit: \(output)")
        return output.stdout
    }

    @Test("man -l renders both pages with no warning; each shows its options and subcommands")
    func manPagesRender() throws {
        let scratch = try Scratch("man")
        try Self.manPages(in: scratch.url.path)
        let expected = [
            "duckrouter": ["DUCKROUTER(1)", "SYNOPSIS", "check", "--wait-for-server", "--create-from", "--osc-port", "--version"],
            "duckctl": ["DUCKCTL(1)", "SYNOPSIS", "status", "--json", "--color", "--port", "gain", "watch", "NO_COLOR", "page", "--qr", "--new-key"],
        ]
        for (name, words) in expected {
            let page = scratch.path("man1/\(name).1")
            let output = try CommandOutput.of("/usr/bin/man", ["--warnings", "-l", page], environment: ["MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat"])
            #expect(output.status == 0, "man -l \(page): \(output)")
            #expect(output.stderr.isEmpty, "man -l \(page) warned: \(output.stderr)")
            for word in words { #expect(output.stdout.contains(word), "\(name)(1) lacks \(word)") }
        }
    }

    @Test("the completion scripts load in bash, zsh and fish, and complete duckctl's subcommands")
    func completionsLoad() throws {
        let scratch = try Scratch("completions")
        let duckctl = Self.buildFolder.appendingPathComponent("duckctl").path
        let duckrouter = Self.buildFolder.appendingPathComponent("duckrouter").path
        for shell in ["bash", "zsh", "fish"] {
            for (name, binary) in [("duckctl", duckctl), ("duckrouter", duckrouter)] {
                let output = try CommandOutput.of(binary, ["--generate-completion-script", shell])
                try #require(output.status == 0 && !output.stdout.isEmpty, "\(name) --generate-completion-script \(shell): \(output)")
                try output.stdout.write(toFile: scratch.path("\(name).\(shell)"), atomically: true, encoding: .utf8)
            }
        }

        // bash: source both, then ask the function as bash's completion would for `duckctl sta`.
        let bash = try CommandOutput.of("/bin/bash", ["--norc", "--noprofile", "-c", """
            set -e
            source '\(scratch.path("duckctl.bash"))'
            source '\(scratch.path("duckrouter.bash"))'
            complete -p duckctl duckrouter
            COMP_WORDS=(duckctl sta); COMP_CWORD=1; COMP_LINE='duckctl sta'; COMP_POINT=${#COMP_LINE}
            _duckctl duckctl sta duckctl
            printf 'reply %s\\n' "${COMPREPLY[@]}"
            """])
        #expect(bash.status == 0 && bash.stderr.isEmpty, "bash: \(bash)")
        #expect(bash.stdout.contains("reply status") && bash.stdout.contains("reply state"), "bash: \(bash)")
        #expect(bash.stdout.contains("complete -o filenames -F _duckctl duckctl"), "bash: \(bash)")

        // zsh: compinit, then the scripts as files of $fpath would be read.
        let zsh = try CommandOutput.of("/usr/bin/zsh", ["-f", "-c", """
            autoload -Uz compinit && compinit -u -d '\(scratch.path("zcompdump"))' || exit 1
            source '\(scratch.path("duckctl.zsh"))' || exit 1
            source '\(scratch.path("duckrouter.zsh"))' || exit 1
            whence -w _duckctl _duckrouter
            """], environment: ["HOME": scratch.url.path])
        #expect(zsh.status == 0 && zsh.stderr.isEmpty, "zsh: \(zsh)")
        #expect(zsh.stdout.contains("_duckctl: function") && zsh.stdout.contains("_duckrouter: function"), "zsh: \(zsh)")

        // fish: its own completer answers for `duckctl sta`.
        let fish = try CommandOutput.of("/usr/bin/fish", ["--no-config", "-c", """
            source '\(scratch.path("duckctl.fish"))'; or exit 1
            source '\(scratch.path("duckrouter.fish"))'; or exit 1
            complete -C 'duckctl sta'
            complete -C 'duckrouter run --wait'
            """], environment: ["HOME": scratch.url.path, "XDG_CONFIG_HOME": scratch.path("config"), "XDG_DATA_HOME": scratch.path("data")])
        #expect(fish.status == 0 && fish.stderr.isEmpty, "fish: \(fish)")
        #expect(fish.stdout.contains("status\t") && fish.stdout.contains("state\t"), "fish: \(fish)")
        #expect(fish.stdout.contains("--wait-for-server"), "fish: \(fish)")
    }

    @Test("systemd-analyze verify accepts the unit as installed, its ExecStart and its man pages found")
    func unitVerifies() throws {
        let scratch = try Scratch("unit")
        try Self.manPages(in: scratch.path("man"))
        let unit = scratch.path("duckrouter.service")
        try Self.unit(binaries: Self.buildFolder.path, data: scratch.path("share")).write(toFile: unit, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: scratch.path("runtime"), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let output = try CommandOutput.of("/usr/bin/systemd-analyze", ["verify", "--user", unit],
                                          environment: ["XDG_RUNTIME_DIR": scratch.path("runtime"), "MANPATH": scratch.path("man"),
                                                        "SYSTEMD_LOG_LEVEL": "notice"], directory: scratch.url)
        #expect(output.status == 0, "systemd-analyze verify: \(output)")
        #expect(output.stdout.isEmpty && output.stderr.isEmpty, "systemd-analyze verify said something: \(output)")

        // A unit that names a man page nobody installed fails the same check: the check can fail.
        let broken = scratch.path("broken.service")
        try Self.unit(binaries: Self.buildFolder.path, data: scratch.path("share"))
            .replacingOccurrences(of: "man:duckctl(1)", with: "man:duckctl-nonexistent(1)")
            .write(toFile: broken, atomically: true, encoding: .utf8)
        let refused = try CommandOutput.of("/usr/bin/systemd-analyze", ["verify", "--user", broken],
                                           environment: ["XDG_RUNTIME_DIR": scratch.path("runtime"), "MANPATH": scratch.path("man")],
                                           directory: scratch.url)
        #expect(refused.status != 0, "a missing man page must fail verify: \(refused)")
    }

    static var userSystemdCanRun: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/lib/systemd/systemd")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
    }

    @Test("under a user systemd: with no JACK server start returns at once and waits (stop while waiting is clean), the router comes up with the server, its status and duckctl page give the control page's link with the key kept beside the state file (a new key at once), reload re-reads the session (same process), a crash restarts it, stop saves and ends cleanly",
          .enabled(if: userSystemdCanRun, "a user systemd needs root here (mount and cgroup namespaces)"))
    func unitRunsUnderUserSystemd() throws {
        let scratch = try Scratch("user-systemd")
        // The test's server name, held; the steps start jackd under it themselves, after the unit.
        let server = try JackServer()
        defer { server.stop() }
        server.kill9()
        let port = try OSCPorts.free()
        let httpPort = try OSCPorts.free()

        // The installed default session (where the unit's --create-from reads it), with the
        // test's OSC and HTTP ports.
        let data = scratch.path("share")
        let sessions = data + "/duckrouter/sessions"
        try FileManager.default.createDirectory(atPath: sessions, withIntermediateDirectories: true)
        let original = try Data(contentsOf: Self.repository.appendingPathComponent("Sessions/default.json"))
        var session = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        session["osc"] = ["port": Int(port)]
        session["http"] = ["port": Int(httpPort)]
        try JSONSerialization.data(withJSONObject: session, options: [.prettyPrinted, .sortedKeys])
            .write(to: URL(fileURLWithPath: sessions + "/default.json"))
        let unit = scratch.path("duckrouter.service")
        try Self.unit(binaries: Self.buildFolder.path, data: data).write(toFile: unit, atomically: true, encoding: .utf8)

        let log = scratch.path("duckrouter.log")
        let script = scratch.path("steps.sh")
        try Self.unitSteps.write(toFile: script, atomically: true, encoding: .utf8)
        let output = try CommandOutput.of(Self.repository.appendingPathComponent("scripts/with-user-systemd.sh").path,
                                          ["/bin/bash", script, unit, server.name, "\(port)", log,
                                           Self.buildFolder.appendingPathComponent("duckctl").path, "\(httpPort)"])
        let routerLog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? "(none)"
        #expect(output.status == 0, "\(output)\n--- duckrouter's log\n\(routerLog)")
        #expect(output.stdout.contains("steps: all passed"), "\(output)")
    }

    /// What a person does with the unit, run beside the private user manager
    /// (scripts/with-user-systemd.sh). Arguments: UNIT SERVER PORT LOG DUCKCTL HTTP_PORT.
    static let unitSteps = #"""
        set -euo pipefail
        unit=$1 server=$2 port=$3 log=$4 duckctl=$5 http_port=$6
        fail() { echo "steps: FAILED: $*"; systemctl --user status duckrouter --no-pager || true; exit 1; }
        units=$XDG_CONFIG_HOME/systemd/user
        mkdir -p "$units/duckrouter.service.d"
        cp "$unit" "$units/duckrouter.service"
        # The test's JACK server, no system bus (so no zeroconf), and the log where the test reads it.
        cat > "$units/duckrouter.service.d/test.conf" <<EOF
        [Service]
        Environment=JACK_DEFAULT_SERVER=$server DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/duckrouter-tests-have-no-system-bus
        StandardError=append:$log
        RestartSec=1s
        EOF
        systemctl --user daemon-reload

        status_text() { systemctl --user show -p StatusText --value duckrouter; }

        # No JACK server yet: start returns at once, the router waits and says so; stopped
        # while it waits, it ends cleanly.
        timeout 30 systemctl --user start duckrouter || fail "systemctl --user start with no JACK server"
        [ "$(systemctl --user is-active duckrouter)" = active ] || fail "not active while waiting"
        [ "$(status_text)" = "waiting for the JACK server '$server' to start" ] || fail "StatusText while waiting: $(status_text)"
        timeout 30 systemctl --user stop duckrouter || fail "systemctl --user stop while waiting"
        [ "$(systemctl --user show -p Result --value duckrouter)" = success ] || fail "stop while waiting: $(systemctl --user show -p Result --value duckrouter)"

        # Waiting, then the server comes: the router starts on it.
        timeout 30 systemctl --user start duckrouter || fail "systemctl --user start"
        jackd -n "$server" -d dummy -r 48000 -p 256 > "$log.jackd" 2>&1 &
        jackd_pid=$!
        trap 'kill -TERM $jackd_pid 2>/dev/null; wait $jackd_pid 2>/dev/null' EXIT
        for _ in $(seq 200); do status_text | grep -q "^running" && break; sleep 0.05; done
        [ "$(systemctl --user is-active duckrouter)" = active ] || fail "not active after the server came"
        "$duckctl" --port "$port" --timeout 1 state >/dev/null || fail "OSC does not answer once the status says running"
        status_text | grep -q "^running .*session.json as JACK client 'duckrouter', OSC port $port" || fail "StatusText: $(status_text)"
        [ -f "$XDG_CONFIG_HOME/duckrouter/session.json" ] || fail "the session was not made from the installed default"
        # The control page's link, with the key kept beside the state file: in the status, and
        # from duckctl page (which reads the key there); a new key shows in the status at once.
        key_file=$XDG_CONFIG_HOME/duckrouter/session.page-key
        [ "$(stat -c %a "$key_file")" = 600 ] || fail "the key file's mode: $(stat -c %a "$key_file")"
        link="http://127.0.0.1:$http_port/ui/#key=$(cat "$key_file")"
        status_text | grep -qF "; control page: $link" || fail "no page link in StatusText: $(status_text)"
        [ "$("$duckctl" --port "$port" page)" = "$link" ] || fail "duckctl page: $("$duckctl" --port "$port" page)"
        new_link=$("$duckctl" --port "$port" page --new-key) || fail "duckctl page --new-key"
        [ "$new_link" != "$link" ] && [ "$new_link" = "http://127.0.0.1:$http_port/ui/#key=$(cat "$key_file")" ] || fail "--new-key: $new_link"
        for _ in $(seq 50); do status_text | grep -qF "; control page: $new_link" && break; sleep 0.1; done
        status_text | grep -qF "; control page: $new_link" || fail "the status keeps the old link: $(status_text)"
        pid=$(systemctl --user show -p MainPID --value duckrouter)
        # LimitNOFILE: the descriptor limit the router runs with, and says it runs with.
        grep -q -E "^Max open files +8192 +8192 " "/proc/$pid/limits" || fail "descriptor limit: $(grep "Max open files" "/proc/$pid/limits")"
        grep -q "descriptor limit 8192" "$log" || fail "the log does not give the descriptor limit"

        # reload: SIGHUP re-reads the session file; the same process goes on.
        "$duckctl" --port "$port" gain -6 >/dev/null || fail "duckctl gain -6"
        systemctl --user reload duckrouter || fail "systemctl --user reload"
        for _ in $(seq 100); do grep -q "reloaded the session file" "$log" && break; sleep 0.1; done
        grep -q "reloaded the session file" "$log" || fail "no reload in the log"
        [ "$(systemctl --user show -p MainPID --value duckrouter)" = "$pid" ] || fail "reload changed the process"
        [ "$(systemctl --user is-active duckrouter)" = active ] || fail "not active after reload"

        # A crash: systemd starts it again (Restart=on-failure), and the run-time change is back
        # (once saved: the router writes the state file 200 ms after a change).
        state=$XDG_CONFIG_HOME/duckrouter/session.state.json
        for _ in $(seq 100); do grep -q -E '"speaker" *: *0\.79' "$state" 2>/dev/null && break; sleep 0.1; done
        grep -q -E '"speaker" *: *0\.79' "$state" || fail "the gain was not saved: $(cat "$state")"
        kill -KILL "$pid"
        for _ in $(seq 150); do
            now=$(systemctl --user show -p MainPID --value duckrouter)
            [ "$now" != 0 ] && [ "$now" != "$pid" ] && [ "$(systemctl --user is-active duckrouter)" = active ] && break
            sleep 0.1
        done
        [ "$(systemctl --user is-active duckrouter)" = active ] || fail "not restarted after a crash"
        [ "$(systemctl --user show -p NRestarts --value duckrouter)" = 1 ] || fail "NRestarts: $(systemctl --user show -p NRestarts --value duckrouter)"
        # (kept as a slider position: -6 dB comes back as -6.0 give or take the float's last digits)
        gain=$("$duckctl" --port "$port" --timeout 2 gain) || fail "duckctl gain after the restart"
        grep -q -E "^-(6\.0|5\.99)[0-9]* speaker$" <<<"$gain" || fail "the gain set before the crash is not back: $gain"

        # stop: SIGTERM, a clean exit (status 0), the state file written.
        timeout 30 systemctl --user stop duckrouter || fail "systemctl --user stop"
        [ "$(systemctl --user is-active duckrouter || true)" = inactive ] || fail "not inactive after stop"
        [ "$(systemctl --user show -p Result --value duckrouter)" = success ] || fail "Result: $(systemctl --user show -p Result --value duckrouter)"
        [ "$(systemctl --user show -p ExecMainStatus --value duckrouter)" = 0 ] || fail "exit status: $(systemctl --user show -p ExecMainStatus --value duckrouter)"
        grep -q -E '"speaker" *: *0\.79' "$state" || fail "the state file after stop: $(cat "$state")"
        echo "steps: all passed"
        """#
}
