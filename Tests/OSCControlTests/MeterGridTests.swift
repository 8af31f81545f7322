@testable import OSCControl
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
}
