import Foundation
import Testing
@testable import Engine

/// RMS meters: the mean square of every metered channel, summed while someone shows RMS.
extension EngineTests {
    /// A sine of `amplitude` with a period of 32 frames: one whole period per 32-frame cycle, so
    /// its mean square is exactly amplitude² / 2 and its peak (frame 8) exactly `amplitude`.
    func sine(_ buffers: Buffers, amplitude: Float) -> UnsafeMutablePointer<Float> {
        let p = buffers.make(32)
        for i in 0..<32 { p[i] = amplitude * Float(sin(2 * Double.pi * Double(i) / 32)) }
        return p
    }

    static func decibels(_ linear: Float?) -> Double? {
        linear.map { $0 <= 0 ? -144 : max(20 * log10(Double($0)), -144) }
    }

    @Test("with RMS measured, a sine of amplitude 0.5 reads -9.03 dBFS RMS and 0.5 peak; through a gain of 0.5, 6 dB less; a silent input reads silence")
    func rmsOfSine() throws {
        var configuration = Engine.Configuration()
        configuration.meterIntervalFrames = 64
        let engine = Engine(configuration: configuration, portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = sine(buffers, amplitude: 0.5), quiet = buffers.make(32), out = buffers.make(32)
        try engine.publish(plan(inputs: [a, quiet], output: out, gains: [0.5, 1]))
        engine.setMeasuresRMS(true)
        for _ in 0..<4 { engine.runCycle(frames: 32) }
        let reading = try #require(engine.collectMeters())
        #expect(reading.squaredFrames == 128)
        #expect(reading.inputPeaks[0] == 0.5)
        let input = try #require(Self.decibels(reading.inputRMS(0)))
        #expect(abs(input - -9.0309) < 0.05, "input RMS \(input) dBFS")
        let output = try #require(Self.decibels(reading.outputRMS(0)))
        #expect(abs(output - -15.0515) < 0.05, "output RMS \(output) dBFS")
        #expect(reading.inputRMS(1) == 0, "silence")
        #expect(Self.decibels(reading.inputRMS(1)) == -144)
    }

    @Test("with RMS not measured (the default), a reading carries peaks and no RMS")
    func rmsOffByDefault() throws {
        var configuration = Engine.Configuration()
        configuration.meterIntervalFrames = 64
        let engine = Engine(configuration: configuration, portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = sine(buffers, amplitude: 0.5), out = buffers.make(32)
        try engine.publish(plan(inputs: [a], output: out, gains: [1]))
        #expect(!engine.measuresRMS)
        for _ in 0..<2 { engine.runCycle(frames: 32) }
        let reading = try #require(engine.collectMeters())
        #expect(reading.inputPeaks[0] == 0.5)
        #expect(reading.squaredFrames == 0)
        #expect(reading.inputRMS(0) == nil && reading.outputRMS(0) == nil)
        #expect(reading.inputSquares[0] == 0, "nothing summed")
        // Turned off again after being on: the next block has none either.
        engine.setMeasuresRMS(true)
        for _ in 0..<2 { engine.runCycle(frames: 32) }
        #expect(engine.collectMeters()?.inputRMS(0) != nil)
        engine.setMeasuresRMS(false)
        for _ in 0..<2 { engine.runCycle(frames: 32) }
        #expect(engine.collectMeters()?.inputRMS(0) == nil)
    }

    @Test("RMS turned on in the middle of a meter block is right from the first reading: the squares are divided by the frames they were summed over")
    func rmsTurnedOnMidBlock() throws {
        var configuration = Engine.Configuration()
        configuration.meterIntervalFrames = 128
        let engine = Engine(configuration: configuration, portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = sine(buffers, amplitude: 0.5), out = buffers.make(32)
        try engine.publish(plan(inputs: [a], output: out, gains: [1]))
        engine.runCycle(frames: 32)
        engine.setMeasuresRMS(true)
        for _ in 0..<3 { engine.runCycle(frames: 32) }
        let reading = try #require(engine.collectMeters())
        #expect(reading.frames == 128 && reading.squaredFrames == 96)
        let input = try #require(Self.decibels(reading.inputRMS(0)))
        #expect(abs(input - -9.0309) < 0.05, "input RMS \(input) dBFS")
        let output = try #require(Self.decibels(reading.outputRMS(0)))
        #expect(abs(output - -9.0309) < 0.05, "output RMS \(output) dBFS")
        // Readings merged: squares and frames add up, so the RMS over both is still the sine's.
        for _ in 0..<4 { engine.runCycle(frames: 32) }
        var merged = reading
        merged.merge(try #require(engine.collectMeters()))
        #expect(merged.squaredFrames == 224)
        #expect(abs(try #require(Self.decibels(merged.inputRMS(0))) - -9.0309) < 0.05)
    }

    @Test("an input's RMS is taken over its sanitised samples before the app's volume, an output's after the route's volume")
    func rmsWhereMeasured() throws {
        var configuration = Engine.Configuration()
        configuration.meterIntervalFrames = 32
        let engine = Engine(configuration: configuration, portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(32, 0.5), out = buffers.make(32)
        a[3] = .nan   // replaced by silence in the copy that is mixed and measured
        var description = plan(inputs: [a], output: out, gains: [1])
        description.inputs[0].volume = VolumeTarget(gain: 0.25, rampFrames: 1, serial: 1)
        description.outputs[0].volume = VolumeTarget(gain: 0.5, rampFrames: 1, serial: 1)
        try engine.publish(description)
        engine.setMeasuresRMS(true)
        engine.runCycle(frames: 32)
        let reading = try #require(engine.collectMeters())
        let input = try #require(reading.inputRMS(0)), output = try #require(reading.outputRMS(0))
        let expected = 0.5 * Float((31.0 / 32.0).squareRoot())
        #expect(abs(input - expected) < 1e-6, "the app's channel before its volume: \(input)")
        #expect(abs(output - expected * 0.25 * 0.5) < 1e-6, "what leaves, after both volumes: \(output)")
    }
}

@Suite("Sum of squares")
struct SumOfSquaresTests {
    @Test("every build of the sum of squares (the one used, C's baseline and AVX2, Swift's) agrees with the scalar reference, from any start and of any length",
          arguments: [0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 39, 40, 128, 1023, 8192])
    func agreesWithReference(frames: Int) {
        var builds: [(String, (UnsafePointer<Float>, Int) -> Float)] = [
            ("chosen", { SignalGuard.sumOfSquares($0, frames: $1) }),
            ("Swift", { SignalGuard.sumOfSquaresSwift($0, frames: $1) }),
        ]
        for variant in [SignalGuard.ScanVariant.baseline, .avx2] where variant.isSupported {
            builds.append(("C \(variant)", { SignalGuard.sumOfSquares($0, frames: $1, variant: variant) }))
        }
        var rng = SplitMix(seed: UInt64(frames) + 1)
        // A NaN before the start and after the end: neither is read.
        let samples: [Float] = [.nan] + (0..<(frames + 8)).map { _ in rng.nextFloat() * 2 - 1 } + [.nan]
        samples.withUnsafeBufferPointer { all in
            for offset in 1...9 {
                let start = all.baseAddress! + offset
                let expected = SignalGuard.sumOfSquaresReference(start, frames: frames)
                for (name, build) in builds {
                    let got = Double(build(start, frames))
                    #expect(abs(got - expected) <= 1e-5 * max(expected, 1), "\(name): \(frames) frames from \(offset): \(got) vs \(expected)")
                }
            }
        }
    }
}
