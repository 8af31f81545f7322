@testable import OSCControl
import OSCTransport
import Policy
@testable import RouterCore
import Testing

@Suite("The meter grid")
struct MeterGridTests {
    @Test("a subscriber is due on multiples of its interval on the clock: two at one rate are due together, whenever they came")
    func grid() {
        #expect(ControlServer.nextMeterTime(after: 100.01, rate: 20) == 100.05)
        #expect(ControlServer.nextMeterTime(after: 100.05, rate: 20) == 100.1, "strictly after")
        #expect(ControlServer.nextMeterTime(after: 100.049, rate: 20) == ControlServer.nextMeterTime(after: 100.0001, rate: 20))
        #expect(ControlServer.nextMeterTime(after: 1_795_500_000.123, rate: 20) == 1_795_500_000.15)
        #expect(ControlServer.nextMeterTime(after: 7.2, rate: 1) == 8)
        #expect(ControlServer.nextMeterTime(after: 7.2, rate: 2.5) == 7.6)
    }

    @Test("peaks over a subscriber's interval: merged when it spans several readings, nothing to merge when it is the last reading alone")
    func peaks() {
        let first = PeakMeter(kind: .app, name: "music", peaks: [0.5, 0.1])
        let second = PeakMeter(kind: .app, name: "music", peaks: [0.2, 0.4])
        #expect(ControlServer.peaks(in: [(1, [first])], after: 0).isEmpty)
        #expect(ControlServer.peaks(in: [(1, [first]), (2, [second])], after: 1).isEmpty)
        #expect(ControlServer.peaks(in: [(1, [first]), (2, [second])], after: 0.5) == ["app/music": [0.5, 0.4]])
    }

    @Test("levels over a subscriber's interval: peaks the maximum, RMS over the squares and frames of every reading after it; -144 for silence and for RMS not measured")
    func levels() throws {
        // 0.5 RMS over 100 frames, then 0.1 RMS over 300: together sqrt((25 + 3) / 400).
        let first = PeakMeter(kind: .app, name: "music", peaks: [0.5, 0], squares: [25, 0], squaredFrames: 100)
        let second = PeakMeter(kind: .app, name: "music", peaks: [0.2, 0], squares: [3, 0], squaredFrames: 300)
        let unmeasured = PeakMeter(kind: .route, name: "speaker", peaks: [0.25])
        let history: [(time: Double, meters: [PeakMeter])] = [(1, [first, unmeasured]), (2, [second, unmeasured])]
        #expect(ControlServer.levels(in: history, after: 1) == [second, unmeasured], "the last reading alone")
        let merged = ControlServer.levels(in: history, after: 0.5)
        #expect(merged.first?.peaks == [0.5, 0] && merged.first?.squaredFrames == 400)
        let rms = try #require(merged.first?.rms)
        #expect(abs(rms[0] - (28.0 / 400).squareRoot()) < 1e-6 && rms[1] == 0)
        #expect(ControlServer.levels(in: history, after: 2).isEmpty, "nothing since")

        let packet = try OSCCodec.decode(ControlServer.levelBundle(merged))
        guard case let .bundle(_, elements) = packet else { Issue.record("not a bundle: \(packet)"); return }
        let messages = elements.compactMap { element -> OSCMessage? in if case let .message(m) = element { m } else { nil } }
        #expect(messages.map(\.path) == ["/duckrouter/levels", "/duckrouter/levels"])
        let music = messages[0].arguments
        #expect(music.prefix(2) == [.string("app"), .string("music")] && music.count == 6)
        if case let .float(peak) = music[2], case let .float(level) = music[3] {
            #expect(abs(peak - -6.0206) < 0.001 && abs(level - -11.549) < 0.01, "peak \(peak), RMS \(level)")
        }
        #expect(Array(music[4...]) == [.float(-144), .float(-144)], "a silent channel")
        #expect(messages[1].arguments == [.string("route"), .string("speaker"), .float(Decibels.level(0.25)), .float(-144)],
                "RMS not measured: -144")
    }
}
