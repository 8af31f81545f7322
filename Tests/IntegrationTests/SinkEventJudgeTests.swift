import ChaosRig
import Testing

/// The chaos run's judge of what the sinks saw: what it excuses, and what it does not.
@Suite("The chaos run's judge of the sinks' events")
struct SinkEventJudgeTests {
    let period: UInt32 = 256
    let second: UInt64 = 1_000_000_000
    /// A moment well into the monotonic clock, so windows before it do not wrap.
    let t0: UInt64 = 1_000 * 1_000_000_000

    func event(_ kind: ToneSink.Event.Kind, frame: UInt32, at: UInt64, size: Float = 0.1, offset: UInt32 = 0, channel: Int = 0) -> (route: String, event: ToneSink.Event) {
        ("speaker", ToneSink.Event(kind: kind, monotonicNanoseconds: at, frameTime: frame, channel: channel, size: size, offset: offset))
    }

    func judge(_ judge: inout SinkEventJudge, _ events: [(route: String, event: ToneSink.Event)], now: UInt64, pipewire: Bool = true,
               routerGaps: [(first: UInt32, frames: UInt32)] = [], faults: [ClosedRange<UInt64>] = [], xruns: [ClosedRange<UInt64>] = []) -> String? {
        judge.judge(events, now: now, period: period, pipewire: pipewire, routerGaps: routerGaps, faults: faults, xruns: xruns)
    }

    @Test("a step nothing explains is a violation; a NaN always is")
    func unexplained() {
        var j = SinkEventJudge()
        #expect(judge(&j, [event(.step, frame: 25_600, at: t0)], now: t0 + second)?.contains("with no fault, missed cycle or xrun") == true)
        var k = SinkEventJudge()
        #expect(judge(&k, [event(.nonFinite, frame: 25_600, at: t0)], now: t0 + second, faults: [t0 - second...t0 + second]) != nil)
    }

    @Test("on PipeWire a late graph's cycle excuses a step at its two seams, not one within a cycle or farther off")
    func lateGraphSeams() {
        let f: UInt32 = 25_600
        for (kind, offset, frame, excused) in [
            (ToneSink.Event.Kind.repeatedCycle, UInt32(0), f, true), (.repeatedCycle, 0, f + 256, true),
            (.repeatedCycle, 100, f, false), (.repeatedCycle, 0, f + 512, false), (.repeatedCycle, 0, f - 256, false),
            (.isolatedSilence, 0, f, true), (.isolatedSilence, 0, f + 256, true), (.isolatedSilence, 40, f + 256, false),
        ] {
            var j = SinkEventJudge()
            let verdict = judge(&j, [event(kind, frame: f, at: t0, size: 256), event(kind, frame: f, at: t0, size: 256, channel: 1),
                                     event(.step, frame: frame, at: t0, offset: offset)], now: t0 + second)
            #expect((verdict == nil) == excused, "\(kind) at \(f), a step at \(frame) + \(offset): \(verdict ?? "excused")")
            #expect(j.tally.lateGraphCycles == 1, "both channels' report of one cycle counts once")
        }
    }

    @Test("on jackd a late graph excuses nothing: a whole cycle of silence is a violation, a repeated one is counted")
    func jackd() {
        var j = SinkEventJudge()
        #expect(judge(&j, [event(.repeatedCycle, frame: 25_600, at: t0, size: 256)], now: t0 + second, pipewire: false) == nil)
        #expect(j.tally.repeatedCycles == 1 && j.tally.lateGraphCycles == 0)
        #expect(judge(&j, [event(.step, frame: 25_600, at: t0)], now: t0 + second, pipewire: false) != nil)
        var k = SinkEventJudge()
        #expect(judge(&k, [event(.isolatedSilence, frame: 25_600, at: t0, size: 256)], now: t0 + second, pipewire: false) != nil)
    }

    @Test("an explanation read after the step it explains still explains it: the newest events wait for the next read")
    func explanationInTheNextRead() {
        // The step into a silent cycle comes a cycle before the silence is known (sound back).
        var j = SinkEventJudge()
        #expect(judge(&j, [event(.step, frame: 25_600, at: t0)], now: t0 + 10_000_000) == nil)
        #expect(j.holding)
        #expect(judge(&j, [event(.isolatedSilence, frame: 25_600, at: t0 + 5_000_000, size: 256)], now: t0 + second) == nil)
        #expect(!j.holding && j.tally.stepsAtMissedCycles == 1)
        // Without it, the held step is judged at the next read.
        var k = SinkEventJudge()
        #expect(judge(&k, [event(.step, frame: 25_600, at: t0)], now: t0 + 10_000_000) == nil)
        #expect(judge(&k, [], now: t0 + second) != nil)
    }

    @Test("a missed cycle explains steps within two periods of it for a few seconds, across reads")
    func missedCycles() {
        var j = SinkEventJudge()
        #expect(judge(&j, [event(.gap, frame: 25_600, at: t0, size: 256)], now: t0 + second) == nil)
        #expect(judge(&j, [event(.step, frame: 25_600 + 512, at: t0 + 2 * second, offset: 77)], now: t0 + 3 * second) == nil)
        #expect(judge(&j, [event(.step, frame: 25_600 + 2048, at: t0 + 3 * second)], now: t0 + 4 * second) != nil)
        // The router's own missed cycles (`/state` recentGaps) explain steps on every route.
        var k = SinkEventJudge()
        #expect(judge(&k, [event(.step, frame: 30_000, at: t0, offset: 12)], now: t0 + second, routerGaps: [(29_900, 256)]) == nil)
        #expect(k.tally.stepsAtMissedCycles == 1)
    }

    @Test("a fault that stops the sound and a rise of the xrun count excuse steps within their windows only")
    func faultsAndXruns() {
        var j = SinkEventJudge()
        #expect(judge(&j, [event(.step, frame: 1, at: t0)], now: t0 + second, faults: [t0 - 1...t0 + 1]) == nil)
        #expect(judge(&j, [event(.step, frame: 2, at: t0 + second)], now: t0 + 2 * second, xruns: [t0 + second - 1...t0 + second + 1]) == nil)
        #expect(j.tally.stepsInFaults == 1 && j.tally.stepsAtXruns == 1)
        #expect(judge(&j, [event(.step, frame: 3, at: t0 + 5 * second)], now: t0 + 6 * second, faults: [t0 - 1...t0 + 1],
                      xruns: [t0 + second - 1...t0 + second + 1]) != nil)
    }
}
