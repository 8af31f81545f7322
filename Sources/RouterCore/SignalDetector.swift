import Policy

/// Judges an app's sound from its per-cycle input peaks (docs/POLICY.md, "Signal activation"):
/// on once the peak has stayed at or above the threshold for the attack time, off once it has
/// stayed below the threshold minus the hysteresis for the hold time. A peak between the two
/// keeps the state and restarts both timers. It runs on the control thread, from the levels the
/// process thread reports each cycle.
struct SignalDetector: Equatable {
    var settings: SignalDetection
    private(set) var on = false
    /// Frames in a row at or above the threshold, and below the silence level.
    private(set) var loudFrames = 0
    private(set) var silentFrames = 0

    init(settings: SignalDetection) { self.settings = settings }

    /// Takes one cycle's peak over `frames` frames; returns true when this cycle turned it on.
    mutating func feed(peak: Float, frames: Int, sampleRate: Int) -> Bool {
        if peak >= settings.activateLevel {
            loudFrames += frames
            silentFrames = 0
        } else if peak < settings.silenceLevel {
            silentFrames += frames
            loudFrames = 0
        } else {
            loudFrames = 0
            silentFrames = 0
        }
        if !on && loudFrames > 0 && Double(loudFrames) >= settings.attack * Double(sampleRate) / 1000 {
            on = true
            return true
        }
        if on && silentFrames > 0 && Double(silentFrames) >= settings.hold * Double(sampleRate) / 1000 {
            on = false
        }
        return false
    }

    /// Milliseconds of silence so far.
    func silentMilliseconds(sampleRate: Int) -> Double { Double(silentFrames) * 1000 / Double(max(sampleRate, 1)) }

    /// Whether it has been silent for at least the hold time.
    func heldSilent(sampleRate: Int) -> Bool { silentMilliseconds(sampleRate: sampleRate) >= settings.hold && silentFrames > 0 }
}
