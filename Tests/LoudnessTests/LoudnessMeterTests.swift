import Foundation
import Loudness
import Testing

/// The loudness meter against EBU Tech 3341's first test cases (a stereo 1 kHz sine at -23 and
/// -33 dBFS reads -23.0 and -33.0 LUFS, momentary and short-term, ±0.1), fed in the blocks a JACK
/// period gives. Through JACK, into an app and a route: IntegrationTests (issue 19).
@Suite("Loudness meter")
struct LoudnessMeterTests {
    static let rate = 48000

    /// A 1 kHz sine whose peak is `dBFS` (AES17: a full-scale sine is 0 dBFS), `seconds` long.
    static func sine(dBFS: Double, seconds: Double) -> [Float] {
        let amplitude = pow(10, dBFS / 20)
        return (0..<Int(seconds * Double(rate))).map { Float(amplitude * sin(2 * .pi * 1000 * Double($0) / Double(rate))) }
    }

    /// Feeds `channels` (each channel's samples) in blocks of `period` frames.
    static func feed(_ meter: LoudnessMeter, _ channels: [[Float]], period: Int) {
        let frames = channels[0].count
        var start = 0
        while start < frames {
            let count = min(period, frames - start)
            channels.withUnsafeBufferPointers { pointers in
                meter.add(frames: count) { pointers[$0].baseAddress! + start }
            }
            start += count
        }
    }

    @Test("EBU Tech 3341 cases 1 and 2: a stereo 1 kHz sine at -23 dBFS reads -23.0 LUFS and at -33 dBFS -33.0, momentary and short-term (±0.1), in 128- and 1024-frame blocks",
          arguments: [(-23.0, 128), (-33.0, 128), (-23.0, 1024), (-33.0, 1024)])
    func ebuCases(level: Double, period: Int) throws {
        let meter = try #require(LoudnessMeter(channels: 2, sampleRate: Self.rate))
        let signal = Self.sine(dBFS: level, seconds: 4)
        Self.feed(meter, [signal, signal], period: period)
        let momentary = try #require(meter.momentary), shortTerm = try #require(meter.shortTerm)
        #expect(abs(momentary - level) <= 0.1, "momentary \(momentary) LUFS")
        #expect(abs(shortTerm - level) <= 0.1, "short-term \(shortTerm) LUFS")
    }

    @Test("every channel weighs 1, and one channel alone is dual mono: a mono -23 dBFS sine reads as the stereo one it is heard as (-23.0 LUFS); four channels read 3 dB over two")
    func channelWeights() throws {
        let signal = Self.sine(dBFS: -23, seconds: 3.5)
        let mono = try #require(LoudnessMeter(channels: 1, sampleRate: Self.rate))
        Self.feed(mono, [signal], period: 256)
        #expect(abs((mono.shortTerm ?? .nan) - -23.0) <= 0.1, "\(String(describing: mono.shortTerm))")
        let four = try #require(LoudnessMeter(channels: 4, sampleRate: Self.rate))
        Self.feed(four, [signal, signal, signal, signal], period: 256)
        #expect(abs((four.shortTerm ?? .nan) - -19.99) <= 0.1, "\(String(describing: four.shortTerm))")
    }

    @Test("momentary follows the last 400 ms, short-term the last 3 s: after a step from -33 to -23 dBFS, 0.5 s on, momentary reads the new level and short-term not yet")
    func windows() throws {
        let meter = try #require(LoudnessMeter(channels: 2, sampleRate: Self.rate))
        let quiet = Self.sine(dBFS: -33, seconds: 3), loud = Self.sine(dBFS: -23, seconds: 0.5)
        Self.feed(meter, [quiet, quiet], period: 128)
        Self.feed(meter, [loud, loud], period: 128)
        let momentary = try #require(meter.momentary), shortTerm = try #require(meter.shortTerm)
        #expect(abs(momentary - -23) <= 0.1, "momentary \(momentary)")
        #expect(shortTerm < -27 && shortTerm > -33, "short-term between the two: \(shortTerm)")
    }

    @Test("silence, and nothing heard yet, read nil; reset forgets what was heard; blocks longer than the meter's own are taken in pieces")
    func silenceAndReset() throws {
        let meter = try #require(LoudnessMeter(channels: 2, sampleRate: Self.rate, blockFrames: 100))
        #expect(meter.momentary == nil && meter.shortTerm == nil)
        let silence = [Float](repeating: 0, count: Self.rate)
        Self.feed(meter, [silence, silence], period: 512)
        #expect(meter.momentary == nil && meter.shortTerm == nil)
        let signal = Self.sine(dBFS: -23, seconds: 3.2)
        Self.feed(meter, [signal, signal], period: 4096)   // 41 pieces of 100 frames each block
        #expect(abs((meter.shortTerm ?? .nan) - -23) <= 0.1, "\(String(describing: meter.shortTerm))")
        #expect(meter.reset())
        #expect(meter.momentary == nil && meter.shortTerm == nil, "forgotten")
    }

    @Test("layouts libebur128 cannot take are refused: no channels, no rate")
    func refused() {
        #expect(LoudnessMeter(channels: 0, sampleRate: Self.rate) == nil)
        #expect(LoudnessMeter(channels: 2, sampleRate: 0) == nil)
    }
}

extension Array where Element == [Float] {
    /// Calls `body` with a base pointer per inner array, all valid for the call.
    func withUnsafeBufferPointers<R>(_ body: ([UnsafeBufferPointer<Float>]) throws -> R) rethrows -> R {
        func nest(_ index: Int, _ collected: [UnsafeBufferPointer<Float>]) throws -> R {
            if index == count { return try body(collected) }
            return try self[index].withUnsafeBufferPointer { try nest(index + 1, collected + [$0]) }
        }
        return try nest(0, [])
    }
}
