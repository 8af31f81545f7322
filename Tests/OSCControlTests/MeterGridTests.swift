@testable import OSCControl
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
}
