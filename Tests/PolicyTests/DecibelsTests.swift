import Testing
import Policy

@Suite("Decibels")
struct DecibelsTests {
    @Test("conversions round-trip and the slider taper is cubic")
    func conversions() {
        #expect(abs(Decibels.linear(-20) - 0.1) < 1e-6)
        #expect(Decibels.linear(-200) == 0)
        #expect(Decibels.level(0) == -.infinity)
        #expect(abs(Decibels.level(Decibels.linear(sliderPosition: 0.5)) - -18.06) < 0.01)
        #expect(abs(Decibels.sliderPosition(linear: 0.125) - 0.5) < 1e-6)
    }
}
