import ControlVocabulary
import Foundation
import JackRig
import OSCTransport
import Policy
import Testing

/// `/meters/levels`: every app's and route's peak and RMS per channel, measured by the audio
/// thread only while someone subscribes, played through real JACK ports.
@Suite("Level meters: peak and RMS", .serialized)
struct LevelMeterTests {
    /// The levels of one meter in one bundle: (peak, RMS) dBFS per channel.
    typealias Levels = [(peak: Float, rms: Float)]

    /// Each bundle's `/duckrouter/levels` messages by "kind/name".
    static func levels(in packet: OSCPacket) -> [String: Levels]? {
        guard case let .bundle(_, elements) = packet else { return nil }
        var meters: [String: Levels] = [:]
        for case let .message(m) in elements where m.path == "/duckrouter/levels" {
            guard case let .string(kind) = m.arguments.first, case let .string(name) = m.arguments.dropFirst().first else { continue }
            let values = m.arguments.dropFirst(2).compactMap { argument -> Float? in
                if case let .float(value) = argument { return value } else { return nil }
            }
            meters["\(kind)/\(name)"] = stride(from: 0, to: values.count - 1, by: 2).map { (values[$0], values[$0 + 1]) }
        }
        return meters
    }

    /// Whether the process thread measures RMS now (`/state` engine `measuresRMS`).
    static func measuresRMS(_ rig: OSCRig) throws -> Bool? {
        (try rig.state()["engine"] as? [String: Any])?["measuresRMS"] as? Bool
    }

    @Test("/meters/levels: a sine of amplitude 0.5 reads its peak (-6.02 dBFS) and RMS (-9.03 dBFS) per channel, a silent app -144, at most 20 Hz; RMS measured only while subscribed; 0 stops them")
    func sineLevels() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        rig.play()
        // A 1 kHz sine of amplitude 0.5 on both music channels; game silent.
        let sine = Signals.sine(frequency: 1000, amplitude: 0.5, sampleRate: rig.server.sampleRate)
        rig.source.setSignal(sine, output: 0)
        rig.source.setSignal(sine, output: 1)
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        let receiver = try TimestampedReceiver()
        let url = OSCArgument.string("osc.udp://127.0.0.1:\(receiver.port)/")

        #expect(try Self.measuresRMS(rig) == false, "nobody shows levels: RMS not measured")
        let refused = try ask(client, OSCMessage("/meters/levels", [.float(-1), url]))
        #expect(refused?.path == "/error" && refused?.arguments.dropFirst().first == .int32(-2), "a negative rate: \(String(describing: refused))")
        let reply = try ask(client, OSCMessage("/meters/levels", [.float(50), url]))
        #expect(reply?.path == "/reply" && Array(reply?.arguments.dropFirst() ?? []) == [.float(20), url],
                "the rate is capped at 20 Hz: \(String(describing: reply))")
        #expect(try Self.measuresRMS(rig) == true)
        #expect(try rig.settings()["levelSubscribers"] as? [String] == ["osc.udp://127.0.0.1:\(receiver.port)/"])

        var bundles: [[String: Levels]] = []
        var arrivals: [Double] = []
        let start = Date()
        while Date().timeIntervalSince(start) < 1.5 {
            guard let (packet, arrival) = receiver.receive(timeout: 0.1), let meters = Self.levels(in: packet) else { continue }
            bundles.append(meters)
            arrivals.append(arrival)
        }
        print("levels: \(bundles.count) bundles in 1.5 s; music \(bundles.last?["app/music"].map { "\($0)" } ?? "none"), game \(bundles.last?["app/game"].map { "\($0)" } ?? "none")")
        #expect((20...32).contains(bundles.count), "about 20 a second: \(bundles.count) in 1.5 s")
        let gaps = zip(arrivals.dropFirst(), arrivals).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 > 0.025 }, "never faster than 20 Hz: shortest gap \(gaps.min() ?? 0) s")
        let music = bundles.compactMap { $0["app/music"] }
        let game = bundles.compactMap { $0["app/game"] }
        #expect(music.count == bundles.count && game.count == bundles.count, "every bundle names music and game")
        // A bundle whose whole interval went by without a JACK cycle (under load) may report
        // silence: at most one of those.
        let heard = music.filter { $0.count == 2 && $0.allSatisfy { $0.peak > -100 } }
        #expect(heard.count >= music.count - 1, "music heard in \(heard.count) of \(music.count) bundles")
        // PipeWire's late graph gives the router a whole cycle of exact silence now and then and
        // tells no one (`Recording.lateGraphCycles`): that lowers a bundle's RMS (one cycle in a
        // bundle's eight by 0.58 dB) and never its peak, and never raises it. There, a few bundles
        // may read low by up to two such cycles (1.25 dB); the median must still be right. On
        // jackd every bundle must.
        let lateGraph = JackServer.Implementation.current == .pipewire
        for channel in 0..<2 {
            let levels = heard.map { $0[channel] }
            let rms = levels.map(\.rms).sorted()
            let off = levels.filter { abs($0.rms - -9.03) >= 0.3 }
            let excused = lateGraph && off.count <= 3 && off.allSatisfy { $0.rms < -9.03 && $0.rms > -9.03 - 1.3 }
            for level in levels {
                #expect(abs(level.peak - -6.02) < 0.1, "music channel \(channel + 1): peak \(level.peak) dBFS")
            }
            #expect(off.isEmpty || excused, "music channel \(channel + 1): RMS of \(off.count) bundles off by 0.3 dB or more: \(off.map(\.rms))")
            #expect(rms.isEmpty || abs(rms[rms.count / 2] - -9.03) < 0.1, "music channel \(channel + 1): median RMS \(rms.isEmpty ? .nan : rms[rms.count / 2]) dBFS")
            if !off.isEmpty && excused { print("levels: channel \(channel + 1): \(off.count) bundles low (late graph): \(off.map(\.rms))") }
        }
        #expect(game.allSatisfy { $0.count == 2 && $0.allSatisfy { $0.peak == -144 && $0.rms == -144 } }, "game is silent: \(game)")

        // Rate 0 stops them (a bundle already on its way may still come).
        let stop = try ask(client, OSCMessage("/meters/levels", [.float(0), url]))
        #expect(stop?.path == "/reply" && Array(stop?.arguments.dropFirst() ?? []) == [.float(0), url])
        var after = 0
        let quiet = Date().addingTimeInterval(0.5)
        while Date() < quiet {
            if let (packet, _) = receiver.receive(timeout: max(0, quiet.timeIntervalSinceNow)), case .bundle = packet { after += 1 }
        }
        #expect(after <= 1, "\(after) level bundles in the 0.5 s after /meters/levels 0")
        #expect(try Self.measuresRMS(rig) == false, "the last subscriber gone: RMS no longer measured")
        #expect((try rig.settings()["levelSubscribers"] as? [String])?.isEmpty == true)
    }

    /// A connected UDP socket hears of a closed port from the ICMP answer to one send and tells
    /// the next send only; the subscriber must still be dropped after 8 failures, and with the
    /// last level subscriber gone RMS is no longer measured.
    @Test("a meter or level subscriber at a UDP port nobody listens on is dropped after 8 failed sends; RMS is then no longer measured",
          arguments: [("/meters", "meterSubscribers"), ("/meters/levels", "levelSubscribers")])
    func deadSubscriberDropped(path: String, listed: String) throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let client = try OSCClient(OSCURL(transport: .udp, host: "127.0.0.1", port: rig.port))
        let dead = "osc.udp://127.0.0.1:\(try OSCPorts.free())/"
        let reply = try ask(client, OSCMessage(path, [.float(20), .string(dead)]))
        #expect(reply?.path == "/reply")
        #expect(try rig.settings()[listed] as? [String] == [dead])
        #expect(try Self.measuresRMS(rig) == (path == "/meters/levels"))
        // Eight failed sends at 20 Hz take 0.4 s (16 bundles, 0.8 s, if every other one fails);
        // waited for up to 5 s.
        let deadline = Date().addingTimeInterval(5)
        while try rig.settings()[listed] as? [String] != [], Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect((try rig.settings()[listed] as? [String])?.isEmpty == true, "dropped")
        #expect(try Self.measuresRMS(rig) == false, "no level subscriber left: RMS not measured")
    }

    @Test("at most 64 addresses subscribe to levels: the 65th is refused (-1) until one stops; a subscriber may change its rate")
    func boundedSubscribers() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let client = try OSCClient(OSCURL(transport: .tcp, host: "127.0.0.1", port: rig.port))
        // Sockets that never read: the bundles they get fill their buffers and are dropped there,
        // and the sends still succeed, so no subscriber is dropped for failing.
        let receivers = try (0..<65).map { _ in try TimestampedReceiver() }
        let urls = receivers.map { "osc.udp://127.0.0.1:\($0.port)/" }
        for url in urls.prefix(64) {
            let reply = try ask(client, OSCMessage("/meters/levels", [.float(1), .string(url)]))
            #expect(reply?.path == "/reply", "\(url): \(String(describing: reply))")
        }
        let refused = try ask(client, OSCMessage("/meters/levels", [.float(1), .string(urls[64])]))
        #expect(refused?.path == "/error" && refused?.arguments.dropFirst().first == .int32(-1)
                && refused?.arguments.last == .string("too many level subscribers (64)"), "\(String(describing: refused))")
        let changed = try ask(client, OSCMessage("/meters/levels", [.float(5), .string(urls[0])]))
        #expect(changed?.path == "/reply" && Array(changed?.arguments.dropFirst() ?? []) == [.float(5), .string(urls[0])], "a subscriber changes its rate")
        _ = try ask(client, OSCMessage("/meters/levels", [.float(0), .string(urls[1])]))
        let taken = try ask(client, OSCMessage("/meters/levels", [.float(1), .string(urls[64])]))
        #expect(taken?.path == "/reply", "a place freed: \(String(describing: taken))")
        #expect((try rig.settings()["levelSubscribers"] as? [String])?.count == 64)
    }
}
