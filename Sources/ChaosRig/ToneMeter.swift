import Foundation

/// How loud each app's tone is in a mix: every app plays a sine of its own frequency, a whole
/// number of cycles in the window, so one DFT bin per app reads its amplitude exactly however
/// many others play (the tones are orthogonal over the window; nothing leaks between them).
public enum ToneMeter {
    /// The window the tones are read over: 0.1 s, so every frequency that is a multiple of 10 Hz
    /// has whole cycles in it at 48 kHz (and at 44.1 kHz). Short, so that a PipeWire graph
    /// missing a cycle now and then on a loaded machine still leaves whole windows between.
    public static let windowSeconds = 0.1

    /// The amplitude of `frequency` in `samples` (a sine of amplitude A reads A).
    public static func amplitude(of frequency: Int, in samples: [Float], sampleRate: Int) -> Double {
        let n = samples.count
        guard n > 0 else { return 0 }
        // Goertzel, in Double: the bin of `frequency` over the window.
        let omega = 2 * Double.pi * Double(frequency) / Double(sampleRate)
        let coefficient = 2 * cos(omega)
        var s1 = 0.0, s2 = 0.0
        for x in samples {
            let s0 = Double(x) + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let real = s1 - s2 * cos(omega), imaginary = s2 * sin(omega)
        return 2 * (real * real + imaginary * imaginary).squareRoot() / Double(n)
    }

    /// dBFS of an amplitude (-144 for silence).
    public static func decibels(_ amplitude: Double) -> Double {
        amplitude > 0 ? max(-144, 20 * log10(amplitude)) : -144
    }
}
