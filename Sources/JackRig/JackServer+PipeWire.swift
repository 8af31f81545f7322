import Foundation
import JackHost

extension JackServer {
    /// Which JACK server the tests start (issue 16): `jackd -d dummy`, or with `JACK_IMPL=pipewire`
    /// a private headless PipeWire (its stock Dummy-Driver, no session manager).
    ///
    /// Under PipeWire the test process and every process it starts must load PipeWire's libjack
    /// (`LD_LIBRARY_PATH=PipeWireServer.jackLibraryDirectory`), and every server of the run lives in
    /// one private `XDG_RUNTIME_DIR` as the socket named after the server (`PIPEWIRE_CORE`, which
    /// PipeWire's libjack maps JACK's server name to). `scripts/test-pipewire.sh` sets both up.
    public enum Implementation: String, Sendable {
        case jackd
        case pipewire

        /// From `JACK_IMPL` (`jackd` when unset).
        public static let current: Implementation =
            ProcessInfo.processInfo.environment["JACK_IMPL"] == "pipewire" ? .pipewire : .jackd

        /// The server's program, for messages.
        public var program: String { self == .jackd ? "jackd" : "pipewire" }

        /// Fails when the libjack this process loaded cannot reach that server: PipeWire's
        /// libjack talks only to PipeWire, JACK2's only to jackd.
        func checkLibrary() throws {
            switch (self, JackLibrary.loaded) {
            case (.jackd, .jack2), (.pipewire, .pipewire): return
            case (.pipewire, .jack2):
                throw Failure.wrongLibrary("JACK_IMPL=pipewire, but this process loaded JACK2's libjack: run it through "
                    + "scripts/test-pipewire.sh (or with LD_LIBRARY_PATH=\(PipeWireServer.jackLibraryDirectory))")
            case (.jackd, .pipewire):
                throw Failure.wrongLibrary("this process loaded PipeWire's libjack, which cannot reach jackd: set JACK_IMPL=pipewire")
            }
        }
    }

    /// Starts a headless PipeWire whose socket is `name` and waits until a JACK client can join
    /// it, then sets its clock to `sampleRate` and `period` the way a user would at run time
    /// (`pw-metadata … clock.force-rate / clock.force-quantum`). nil when it did not start.
    static func startPipeWire(name: String, sampleRate: Int, period: Int, log: URL) throws -> Process? {
        guard ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].map({ $0.contains("duckrouter-") }) == true else {
            throw Failure.wrongLibrary("JACK_IMPL=pipewire needs a private XDG_RUNTIME_DIR (scripts/test-pipewire.sh makes one): "
                + "the test servers must not meet a desktop's PipeWire")
        }
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"]!
        try? FileManager.default.removeItem(atPath: runtime + "/" + name)
        try? FileManager.default.removeItem(atPath: runtime + "/" + name + ".lock")
        // What a desktop's session manager (WirePlumber) adds and the stock configuration lacks:
        // the `default` metadata, where JACK clients keep port properties (pretty names).
        let configuration = URL(fileURLWithPath: runtime).appendingPathComponent("config/pipewire/pipewire.conf.d")
        try FileManager.default.createDirectory(at: configuration, withIntermediateDirectories: true)
        try Data("context.objects = [ { factory = metadata args = { metadata.name = default } } ]\n".utf8)
            .write(to: configuration.appendingPathComponent("duckrouter-tests.conf"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Launcher.setpriv)
        process.arguments = ["--pdeathsig", "KILL", "--", PipeWireServer.binary]
        var environment = ProcessInfo.processInfo.environment
        environment["PIPEWIRE_CORE"] = name
        environment["XDG_CONFIG_HOME"] = configuration.deletingLastPathComponent().deletingLastPathComponent().path
        // No desktop bus here: PipeWire logs that it cannot reach one and carries on.
        environment["DBUS_SESSION_BUS_ADDRESS"] = "disabled:"
        environment.removeValue(forKey: "LD_LIBRARY_PATH")
        environment.removeValue(forKey: "PIPEWIRE_QUANTUM")
        process.environment = environment
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try Launcher.shared.run(process)
        let deadline = Date().addingTimeInterval(15)
        var clockSet = false
        while Date() < deadline && process.isRunning {
            if let probe = try? JackClient(name: "probe", server: name) {
                defer { probe.close() }
                if !clockSet {
                    clockSet = try setClock(server: name, rate: sampleRate, quantum: period, log: handle)
                }
                if clockSet && probe.sampleRate == sampleRate && probe.bufferSize == period { return process }
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return nil
    }

    /// Sets PipeWire's clock through its `settings` metadata; false when `pw-metadata` failed.
    static func setClock(server: String, rate: Int, quantum: Int, log: FileHandle) throws -> Bool {
        try pwMetadata(server: server, key: "clock.force-rate", value: rate, log: log)
            && pwMetadata(server: server, key: "clock.force-quantum", value: quantum, log: log)
    }

    private static func pwMetadata(server: String, key: String, value: Int, log: FileHandle) throws -> Bool {
        let tool = Process()
        tool.executableURL = URL(fileURLWithPath: "/usr/bin/pw-metadata")
        tool.arguments = ["-r", server, "-n", "settings", "0", key, "\(value)"]
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "LD_LIBRARY_PATH")
        tool.environment = environment
        tool.standardOutput = FileHandle.nullDevice
        tool.standardError = log
        try tool.run()
        tool.waitUntilExit()
        return tool.terminationStatus == 0
    }

    /// The ports jackd's dummy driver gives every server (`system:capture_1…2`,
    /// `system:playback_1…2`), which a headless PipeWire has no device for: on PipeWire a test
    /// client named `system` with those ports stands in for them (a desktop would show its sound
    /// card's ports, under that name only with `jack.default-as-system`; README, On PipeWire).
    /// nil on jackd, whose driver has them. Keep it open while they are needed; it plays and
    /// records like any `TestClient`.
    public func standInForDriverPorts() throws -> TestClient? {
        guard Implementation.current == .pipewire else { return nil }
        return try TestClient(name: "system", server: name, outputs: ["capture_1", "capture_2"],
                              inputs: ["playback_1", "playback_2"])
    }

    /// Changes the server's period while it runs, as a user would: `jack_bufsize` on jackd,
    /// `pw-metadata … clock.force-quantum` on PipeWire (whose libjack does not pass a client's
    /// `jack_set_buffer_size` on to the graph).
    public func changePeriod(to frames: Int) throws {
        switch Implementation.current {
        case .jackd:
            let change = Process()
            change.executableURL = URL(fileURLWithPath: "/usr/bin/jack_bufsize")
            change.arguments = ["\(frames)"]
            change.environment = ["JACK_DEFAULT_SERVER": name]
            change.standardOutput = FileHandle.nullDevice
            change.standardError = FileHandle.nullDevice
            try change.run()
            change.waitUntilExit()
            guard change.terminationStatus == 0 else { throw Failure.periodNotChanged(frames) }
        case .pipewire:
            let handle = try FileHandle(forWritingTo: logFile)
            defer { try? handle.close() }
            handle.seekToEndOfFile()
            guard try Self.pwMetadata(server: name, key: "clock.force-quantum", value: frames, log: handle) else {
                throw Failure.periodNotChanged(frames)
            }
        }
    }
}
