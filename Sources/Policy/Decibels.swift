import Foundation

/// Gain conversions in the words people use on a mixing desk.
public enum Decibels {
    /// The level below which a gain is treated as silence (-∞ dB).
    public static let floor: Float = -144

    /// Linear amplitude for a level in dB; levels at or below `floor` are silence.
    public static func linear(_ decibels: Float) -> Float {
        decibels <= floor ? 0 : powf(10, decibels / 20)
    }

    /// Level in dB for a linear amplitude; silence is `-infinity`.
    public static func level(_ linear: Float) -> Float {
        linear <= 0 ? -.infinity : 20 * log10f(linear)
    }

    /// Linear amplitude for a volume slider position 0...1 with a cubic taper, so that the middle
    /// of the slider sounds like the middle (-18 dB) rather than -6 dB.
    public static func linear(sliderPosition position: Float) -> Float {
        position * position * position
    }

    /// Slider position 0...1 for a linear amplitude (inverse of the cubic taper).
    public static func sliderPosition(linear: Float) -> Float {
        linear <= 0 ? 0 : cbrtf(linear)
    }
}
