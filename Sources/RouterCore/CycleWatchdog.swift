/// Tells a JACK server that stopped running the client's cycles from one that runs them, on the
/// control side, whatever the JACK implementation says or does not say (issue 16): a server that
/// hangs, or a PipeWire whose libjack calls no shutdown callback, gives no other sign.
///
/// The control queue feeds it the engine's cycle counter, and when the latest cycle began, at every
/// housekeeping tick. Time counts from that cycle (or, given no time, from the tick that saw the
/// counter move), so a control queue that was itself held up sees the cycles that ran meanwhile
/// before it judges, and ticks a second apart judge as closely as ticks 10 ms apart. A value type;
/// control queue only.
struct CycleWatchdog {
    /// No cycle for this long while the client is active: the server is given up (closed, and
    /// joined again with backoff, as when it shuts the client down).
    let timeout: Double
    /// Where the counter last moved, in nanoseconds of the monotonic clock; nil while disarmed.
    private var lastAdvance: UInt64?
    private var lastCycles: UInt64 = 0
    /// Whether a cycle has run since `arm`: until then the wait is at least `firstCycleGrace`
    /// (a server may start a suspended device first).
    private(set) var sawCycle = false

    /// The least wait for the first cycle after activation.
    static let firstCycleGrace = 5.0

    /// `timeout` in seconds; 0 or less turns the watchdog off.
    init(timeout: Double) { self.timeout = timeout }

    /// Starts watching a client that was just activated.
    mutating func arm(cycles: UInt64, now: UInt64) {
        lastCycles = cycles
        lastAdvance = now
        sawCycle = false
    }

    /// Stops watching (the client is closed or being closed).
    mutating func disarm() { lastAdvance = nil }

    var isArmed: Bool { lastAdvance != nil }

    /// Takes the counter's value now; returns how long no cycle has run when that exceeds the
    /// timeout, or four periods of `period` seconds if that is longer, or before the first cycle
    /// `firstCycleGrace` (the server should be given up), else nil.
    ///
    /// `lastCycleAt`: when the latest cycle began, as the audio thread saw it (same clock as
    /// `now`); nil: as of `now`. With it, a server that stops between two checks counts from its
    /// last cycle, not from the check that saw the counter move, so checks a second apart judge
    /// as checks 10 ms apart would.
    mutating func check(cycles: UInt64, lastCycleAt: UInt64? = nil, now: UInt64, period: Double) -> Double? {
        guard let since = lastAdvance else { return nil }
        if cycles != lastCycles {
            lastCycles = cycles
            lastAdvance = Self.advance(since: since, lastCycleAt: lastCycleAt, now: now)
            sawCycle = true
        }
        let quiet = Double(now &- (lastAdvance ?? now)) / 1e9
        let limit = max(timeout, 4 * period, sawCycle ? 0 : Self.firstCycleGrace)
        return timeout > 0 && quiet > limit ? quiet : nil
    }

    /// How long no cycle has run, when that is longer than `threshold` seconds; nil while cycles
    /// run or while disarmed. Reads only: the counter moving since the last check counts as a cycle.
    func silence(cycles: UInt64, lastCycleAt: UInt64? = nil, now: UInt64, threshold: Double) -> Double? {
        guard let since = lastAdvance else { return nil }
        let last = cycles == lastCycles ? since : Self.advance(since: since, lastCycleAt: lastCycleAt, now: now)
        let quiet = Double(now &- last) / 1e9
        return quiet > threshold ? quiet : nil
    }

    /// Where the counter last moved: the latest cycle's start, never before the last advance
    /// (a cycle of a client before `arm`) nor after `now`.
    private static func advance(since: UInt64, lastCycleAt: UInt64?, now: UInt64) -> UInt64 {
        max(since, min(lastCycleAt ?? now, now))
    }
}
