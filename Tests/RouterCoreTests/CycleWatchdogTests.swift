import Testing
@testable import RouterCore

@Suite("Cycle watchdog")
struct CycleWatchdogTests {
    static let second: UInt64 = 1_000_000_000
    static let period = 256.0 / 48000
    static let longPeriod = 8192.0 / 44100

    @Test("trips only after the timeout without a cycle; any cycle starts the count again")
    func tripsAfterTimeout() {
        var watchdog = CycleWatchdog(timeout: 2)
        watchdog.arm(cycles: 10, now: 0)
        #expect(watchdog.check(cycles: 10, now: Self.second, period: Self.period) == nil)
        #expect(watchdog.check(cycles: 11, now: 2 * Self.second, period: Self.period) == nil, "a cycle ran")
        #expect(watchdog.check(cycles: 11, now: 3 * Self.second, period: Self.period) == nil, "1 s since the last cycle")
        let quiet = watchdog.check(cycles: 11, now: 4 * Self.second + 1, period: Self.period)
        #expect(quiet.map { $0 > 2 && $0 < 2.01 } == true, "\(String(describing: quiet))")
    }

    @Test("before the first cycle after activation it waits longer: a server may start a device first")
    func firstCycleGrace() {
        var watchdog = CycleWatchdog(timeout: 2)
        watchdog.arm(cycles: 0, now: 0)
        #expect(watchdog.check(cycles: 0, now: 4 * Self.second, period: Self.period) == nil)
        #expect(watchdog.check(cycles: 0, now: 5 * Self.second + 1, period: Self.period) != nil)
        watchdog.arm(cycles: 0, now: 0)
        #expect(watchdog.check(cycles: 1, now: Self.second, period: Self.period) == nil)
        #expect(watchdog.sawCycle)
        #expect(watchdog.check(cycles: 1, now: 3 * Self.second + 1, period: Self.period) != nil, "2 s once cycles ran")
    }

    @Test("a control queue held up sees the cycles that ran meanwhile before it judges")
    func lateCheckSeesCycles() {
        var watchdog = CycleWatchdog(timeout: 2)
        watchdog.arm(cycles: 0, now: 0)
        #expect(watchdog.check(cycles: 900, now: 5 * Self.second, period: Self.period) == nil)
        #expect(watchdog.check(cycles: 900, now: 6 * Self.second, period: Self.period) == nil)
    }

    @Test("never less than four periods: a long period does not trip it between two cycles")
    func fourPeriodsAtLeast() {
        var watchdog = CycleWatchdog(timeout: 0.5)
        watchdog.arm(cycles: 0, now: 0)
        #expect(watchdog.check(cycles: 1, now: Self.second / 10, period: Self.longPeriod) == nil, "the first cycle")
        // 8192 frames at 44.1 kHz (JACK's longest): 0.19 s a cycle, four of them 0.74 s.
        #expect(watchdog.check(cycles: 1, now: Self.second / 10 + Self.second * 7 / 10, period: Self.longPeriod) == nil)
        #expect(watchdog.check(cycles: 1, now: Self.second / 10 + Self.second * 8 / 10, period: Self.longPeriod) != nil)
    }

    @Test("disarmed (no client, or one being closed) or turned off (0), it never trips")
    func disarmedAndOff() {
        var watchdog = CycleWatchdog(timeout: 2)
        #expect(watchdog.check(cycles: 0, now: 100 * Self.second, period: Self.period) == nil, "never armed")
        watchdog.arm(cycles: 0, now: 0)
        watchdog.disarm()
        #expect(!watchdog.isArmed)
        #expect(watchdog.check(cycles: 0, now: 100 * Self.second, period: Self.period) == nil)
        var off = CycleWatchdog(timeout: 0)
        off.arm(cycles: 0, now: 0)
        #expect(off.check(cycles: 0, now: 100 * Self.second, period: Self.period) == nil)
    }

    /// An idle router checks once a second: a server that stops just after a check must still
    /// be given up 2 s after its last cycle, not 2 s after the check that saw the counter move.
    @Test("given when the latest cycle began, time counts from that cycle, however far apart the checks")
    func countsFromLastCycle() {
        var watchdog = CycleWatchdog(timeout: 2)
        watchdog.arm(cycles: 0, now: 0)
        // Cycles ran until 0.1 s; the check at 1 s sees the counter moved.
        #expect(watchdog.check(cycles: 100, lastCycleAt: Self.second / 10, now: Self.second, period: Self.period) == nil)
        #expect(watchdog.silence(cycles: 100, lastCycleAt: Self.second / 10, now: Self.second, threshold: 0.5) == 0.9)
        #expect(watchdog.check(cycles: 100, lastCycleAt: Self.second / 10, now: 2 * Self.second, period: Self.period) == nil)
        let quiet = watchdog.check(cycles: 100, lastCycleAt: Self.second / 10, now: 2 * Self.second + Self.second / 10 + 1, period: Self.period)
        #expect(quiet.map { $0 > 2 && $0 < 2.01 } == true, "2 s after the last cycle: \(String(describing: quiet))")
        // The counter moved since the last check, but long ago: silence says so before any check.
        var second = CycleWatchdog(timeout: 2)
        second.arm(cycles: 0, now: 0)
        #expect(second.silence(cycles: 5, lastCycleAt: Self.second / 5, now: Self.second, threshold: 0.5) == 0.8)
        #expect(second.silence(cycles: 5, lastCycleAt: Self.second - Self.second / 10, now: Self.second, threshold: 0.5) == nil)
    }

    @Test("a cycle time from before arm (a client before this one) counts from arm; one after now counts as now")
    func cycleTimeClamped() {
        var watchdog = CycleWatchdog(timeout: 2)
        watchdog.arm(cycles: 10, now: 5 * Self.second)
        #expect(watchdog.check(cycles: 11, lastCycleAt: Self.second, now: 6 * Self.second, period: Self.period) == nil, "1 s since arm, not 5 since that cycle")
        #expect(watchdog.check(cycles: 11, lastCycleAt: Self.second, now: 7 * Self.second + 1, period: Self.period) != nil)
        var ahead = CycleWatchdog(timeout: 2)
        ahead.arm(cycles: 0, now: 0)
        #expect(ahead.check(cycles: 1, lastCycleAt: 10 * Self.second, now: Self.second, period: Self.period) == nil)
        #expect(ahead.check(cycles: 1, lastCycleAt: 10 * Self.second, now: 3 * Self.second + 1, period: Self.period) != nil, "2 s after the check that saw it")
    }

    @Test("silence is reported past its threshold, and not once the counter moved")
    func silence() {
        var watchdog = CycleWatchdog(timeout: 2)
        #expect(watchdog.silence(cycles: 0, now: 10 * Self.second, threshold: 0.5) == nil, "disarmed")
        watchdog.arm(cycles: 5, now: 0)
        #expect(watchdog.silence(cycles: 5, now: Self.second / 4, threshold: 0.5) == nil)
        #expect(watchdog.silence(cycles: 5, now: Self.second, threshold: 0.5) == 1)
        #expect(watchdog.silence(cycles: 6, now: Self.second, threshold: 0.5) == nil, "a cycle ran since the last check")
    }
}
