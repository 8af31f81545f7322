import Engine
import Foundation
@testable import Loudness
import Testing

/// The loudness worker fed by a real engine's taps (driven without JACK: a port handle is the
/// address of a test buffer), one pass at a time.
@Suite("Loudness worker")
struct LoudnessWorkerTests {
    static let rate = 48000, period = 128
    static let directBuffers: PortBufferFunction = { port, _ in port }

    /// An engine mixing a stereo app (inputs 0 and 1) one to one into a stereo route (outputs 0
    /// and 1), all four tapped; the app plays a 1 kHz sine whose peak is `dBFS` on both channels.
    final class Rig {
        let engine = Engine(configuration: Engine.Configuration(), portBuffer: LoudnessWorkerTests.directBuffers)
        let buffers = (0..<4).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: LoudnessWorkerTests.period) }
        var phase = 0
        let amplitude: Float

        init(dBFS: Double) throws {
            amplitude = Float(pow(10, dBFS / 20))
            for buffer in buffers { buffer.initialize(repeating: 0, count: LoudnessWorkerTests.period) }
            var description = MixPlanDescription(
                inputs: [0, 1].map { MixPlanDescription.Input(port: PortHandle(buffers[$0]), meterSlot: Int32($0)) },
                outputs: [0, 1].map { o in
                    MixPlanDescription.Output(port: PortHandle(buffers[2 + o]), meterSlot: Int32(o),
                                              contributions: [MixContribution(input: Int32(o), gainSlot: Int32(o), target: 1, rampFrames: 1)])
                })
            for i in 0..<2 {
                description.inputs[i].tapGroup = 0    // the app
                description.outputs[i].tapGroup = 1   // the route
            }
            _ = try engine.publish(description)
        }

        deinit { buffers.forEach { $0.deallocate() } }

        func play(seconds: Double) {
            for _ in 0..<Int(seconds * Double(LoudnessWorkerTests.rate)) / LoudnessWorkerTests.period {
                for i in 0..<LoudnessWorkerTests.period {
                    let sample = amplitude * Float(sin(2 * Double.pi * 1000 * Double(phase + i) / Double(LoudnessWorkerTests.rate)))
                    buffers[0][i] = sample
                    buffers[1][i] = sample
                }
                phase += LoudnessWorkerTests.period
                engine.runCycle(frames: LoudnessWorkerTests.period)
            }
        }

        var app: LoudnessWorker.Target {
            .init(kind: .app, name: "music", taps: [engine.loudnessTap(input: 0)!, engine.loudnessTap(input: 1)!])
        }
        var route: LoudnessWorker.Target {
            .init(kind: .route, name: "speaker", taps: [engine.loudnessTap(output: 0)!, engine.loudnessTap(output: 1)!])
        }
    }

    @Test("an app and the route it plays to read the same -23.0 LUFS (±0.1) for a stereo 1 kHz sine at -23 dBFS, momentary and short-term, fed by the taps as the process thread fills them")
    func readsTheTaps() throws {
        let rig = try Rig(dBFS: -23)
        let worker = LoudnessWorker(sampleRate: Self.rate)
        worker.setTargets([rig.app, rig.route])
        for _ in 0..<35 {   // 3.5 s, read every 100 ms (taps hold 341 ms)
            rig.play(seconds: 0.1)
            worker.pass()
        }
        for (kind, name) in [(LoudnessWorker.Target.Kind.app, "music"), (.route, "speaker")] {
            let reading = try #require(worker.reading(kind, name))
            #expect(abs((reading.momentary ?? .nan) - -23) <= 0.1 && abs((reading.shortTerm ?? .nan) - -23) <= 0.1, "\(kind) \(name): \(reading)")
        }
        #expect(rig.engine.statistics.droppedTapSpans == 0)
    }

    @Test("a target on other taps (its slots passed to another app) starts afresh; one no longer named has no reading")
    func targetsChange() throws {
        let rig = try Rig(dBFS: -23)
        let worker = LoudnessWorker(sampleRate: Self.rate)
        // Both groups read from the start: no tap fills up, nothing is dropped.
        worker.setTargets([rig.app, .init(kind: .route, name: "elsewhere", taps: rig.route.taps)])
        worker.pass()
        for _ in 0..<6 {
            rig.play(seconds: 0.1)
            worker.pass()
        }
        #expect(worker.reading(.app, "music")?.momentary != nil, "0.6 s heard: a momentary reading")
        #expect(worker.reading(.app, "music")?.shortTerm == nil, "not yet 3 s")
        // "music" now on the route's taps: what it heard before is not kept (0.2 s is less than a
        // momentary window, so no momentary reading yet).
        worker.setTargets([.init(kind: .app, name: "music", taps: rig.route.taps), .init(kind: .app, name: "other", taps: rig.app.taps)])
        rig.play(seconds: 0.2)
        worker.pass()
        #expect(worker.reading(.app, "music")?.momentary == nil, "\(String(describing: worker.reading(.app, "music")))")
        worker.setTargets([rig.route])
        worker.pass()
        #expect(worker.reading(.app, "music") == nil)
        #expect(rig.engine.statistics.droppedTapSpans == 0)
    }

    @Test("started, the worker reads on its own; stop ends its thread")
    func runsOnItsOwn() throws {
        let rig = try Rig(dBFS: -33)
        let worker = LoudnessWorker(sampleRate: Self.rate, interval: 0.01)
        worker.setTargets([rig.route])
        worker.start()
        // Paced as JACK would: the worker keeps up with the taps while the audio plays.
        for _ in 0..<40 {   // 4 s: the short-term window full of what came after the first look
            rig.play(seconds: 0.1)
            Thread.sleep(forTimeInterval: 0.02)
        }
        let deadline = Date().addingTimeInterval(5)
        while worker.reading(.route, "speaker")?.shortTerm.map({ abs($0 - -33) <= 0.1 }) != true && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        worker.stop()
        let reading = try #require(worker.reading(.route, "speaker"))
        #expect(abs((reading.shortTerm ?? .nan) - -33) <= 0.1, "\(reading)")
    }
}
