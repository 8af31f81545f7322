import JackRig
import Testing

/// The test harness's reading of a recording: which whole cycles are silence amid sound (what a
/// late PipeWire graph hands a client, which the audio checks leave out there).
@Suite("Test harness: recordings")
struct RecordingTests {
    /// A take of 4-frame cycles at frame times 0, 4, 8…, `channel` as given.
    static func take(_ channel: [Float]) -> Recording {
        Recording(channels: [channel], cycleStarts: stride(from: 0, to: channel.count, by: 4).map { ($0, UInt32($0)) },
                  sampleRate: 48000)
    }

    @Test("a whole cycle of exact silence amid sound is found; silence at either end, a part of a cycle, or near-silence is not")
    func silentCycles() {
        let a: Float = 0.5
        #expect(Self.take([a, a, a, a, 0, 0, 0, 0, a, a, a, a]).silentCycles(channel: 0) == [4..<8])
        #expect(Self.take([a, a, a, a, 0, 0, 0, 0, 0, 0, 0, 0, a, a, a, a]).silentCycles(channel: 0) == [],
                "two cycles in a row: the sample after the first is silent too")
        #expect(Self.take([0, 0, 0, 0, a, a, a, a]).silentCycles(channel: 0) == [], "silence before the sound began")
        #expect(Self.take([a, a, a, a, 0, 0, 0, 0]).silentCycles(channel: 0) == [], "silence after it stopped")
        #expect(Self.take([a, a, a, a, a, 0, 0, 0, a, a, a, a]).silentCycles(channel: 0) == [], "a part of a cycle")
        #expect(Self.take([a, a, a, a, 0, 1e-9, 0, 0, a, a, a, a]).silentCycles(channel: 0) == [], "not exact silence")
        #expect(Self.take([a, a, a, a, 0, 0, 0, 0, a, a, a, a, 0, 0, 0, 0, a]).silentCycles(channel: 0) == [4..<8, 12..<16])
    }
}
