/// How a volume moves to a new value over a fade (a scene's recall, docs/OSC.md `/scene/recall`).
public enum FadeCurve: String, CaseIterable, Sendable, Codable {
    /// The volume (the slider position, cubic taper) moves in a straight line in time, as a hand
    /// on a fader: from 1.0 to 0.5 over 2 s it is at 0.75 (-7.5 dB) after 1 s.
    case fader
    /// The amplitude moves in a straight line in time.
    case linear
    /// The power moves along a smooth S in time: two opposite fades always sum to the same power.
    case equalPower
}
