import ArgumentParser
import CFloatEnvironment
import CMixReference
import Engine
import Foundation

/// Benchmarks for docs/PERFORMANCE.md. Figures are thread CPU time, median of several runs.
struct DuckBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duckbench",
        abstract: "Times the mix kernels: Swift vectorised and scalar reference against the C reference (-O3).",
        discussion: "With --denormals: the Swift kernel on normal and on subnormal (denormal) signals with flush-to-zero off and on, and the engine's whole cycle, which turns it on itself.")

    @Option(help: "Stereo apps (input channel pairs).") var apps = 128
    @Option(help: "Stereo routes (output channel pairs); every app feeds every route.") var routes = 4
    @Option(help: "Frames per JACK cycle.") var frames = 128
    @Option(help: "Cycles per run.") var cycles = 20_000
    @Option(help: "Runs; the median is reported.") var runs = 7
    @Flag(help: "Print Markdown table rows.") var markdown = false
    @Option(help: ArgumentHelp("Run one kernel (c, vectorised or reference) for --cycles cycles and print nothing; for instruction counts under valgrind.",
                               valueName: "kernel"))
    var only: Kernel?
    @Option(help: "The scene for --only: steady or ramping.") var scene = Scene.steady
    @Flag(help: "Time each cycle of the C and Swift kernels (steady gains) on the wall clock and print one line: apps, then mean, p99 and max µs for C, then for Swift.")
    var perCycle = false
    @Flag(help: "Time the Swift kernel with normal and subnormal signals, flush-to-zero/denormals-are-zero off and on, and the engine's whole cycle (which sets them itself).")
    var denormals = false
    @Flag(help: "Time the engine's whole cycle with no volume stages, every app and route at a steady volume, and every one fading along each curve.")
    var volumes = false
    @Flag(help: "Time the engine's whole cycle with RMS meters off (the floor) and on, and the sum of squares beside the peak scan per buffer.")
    var meters = false

    enum Scene: String, ExpressibleByArgument { case steady, ramping }

    func run() throws {
        if denormals {
            runDenormals()
            return
        }
        if volumes {
            runVolumes()
            return
        }
        if meters {
            runMeters()
            return
        }
        if perCycle {
            var line = "\(apps)"
            for kernel in [Kernel.c, .vectorised] {
                let mix = MixScene(apps: apps, routes: routes, frames: frames, ramping: false)
                for _ in 0..<200 { mix.cycle(kernel) }
                var times: [Double] = []
                times.reserveCapacity(cycles)
                for _ in 0..<cycles {
                    let start = wallTime()
                    mix.cycle(kernel)
                    times.append((wallTime() - start) * 1e6)
                }
                if mix.outputs[0][0].isNaN { print("NaN") }
                mix.release()
                times.sort()
                let mean = times.reduce(0, +) / Double(times.count)
                let p99 = times[min(times.count - 1, Int((Double(times.count) * 0.99).rounded(.up)) - 1)]
                line += String(format: " %.2f %.2f %.2f", mean, p99, times.last!)
            }
            print(line)
            return
        }
        if let only {
            let mix = MixScene(apps: apps, routes: routes, frames: frames, ramping: scene == .ramping)
            for _ in 0..<cycles { mix.cycle(only) }
            if mix.outputs[0][0].isNaN { print("NaN") }
            mix.release()
            return
        }
        let scenes: [(String, Bool)] = [("steady gains", false), ("every cell ramping", true)]
        if !markdown {
            print("\(apps) stereo apps -> \(routes) stereo routes, \(frames) frames, median of \(runs) runs x \(cycles) cycles")
            print("scene".padding(toLength: 22, withPad: " ", startingAt: 0) + "  C -O3 µs  Swift SIMD µs  ratio  Swift scalar µs")
        }
        for (name, ramping) in scenes {
            let c = median(runs) { time(MixScene(apps: apps, routes: routes, frames: frames, ramping: ramping), kernel: .c) }
            let fast = median(runs) { time(MixScene(apps: apps, routes: routes, frames: frames, ramping: ramping), kernel: .vectorised) }
            let scalar = median(max(runs / 2, 1)) { time(MixScene(apps: apps, routes: routes, frames: frames, ramping: ramping), kernel: .reference) }
            let ratio = fast / c
            if markdown {
                print("| \(apps)×\(routes) stereo, \(frames) frames, \(name) | \(f(c)) | \(f(fast)) | \(String(format: "%.2f", ratio))x | \(f(scalar)) |")
            } else {
                print(name.padding(toLength: 22, withPad: " ", startingAt: 0) + "  " + f(c).leftPad(8) + "  " + f(fast).leftPad(12) + "  " + String(format: "%.2f", ratio).leftPad(5) + "  " + f(scalar).leftPad(15))
            }
        }
    }

    enum Kernel: String, ExpressibleByArgument { case c, vectorised, reference }

    /// Subnormal floats (below 1.18e-38) are where decaying audio ends up; on many CPUs every
    /// multiply or add that reads or writes one takes a microcode slow path. Each scene is timed
    /// with the Swift kernel alone, flushing off and on (set on this thread), and through
    /// `Engine.runCycle`, which turns flushing on at the start of every cycle as JACK's process
    /// thread does. The runs are interleaved (every measurement once per round), so a noisy
    /// moment on a shared machine falls on all of them alike; the median per measurement is shown.
    func runDenormals() {
        let scenes: [(String, Signal, Bool)] = [
            ("normal signal, steady gains", .normal, false),
            ("subnormal input (1e-39), steady gains", .subnormalInput, false),
            ("normal signal, every cell ramping", .normal, true),
            ("gains ramping at 2e-38 (subnormal products)", .subnormalGains, true),
        ]
        let before = CFloatEnvironment_denormals_flushed()
        defer { CFloatEnvironment_set_denormals_flushed(before) }
        // samples[scene][0: kernel off, 1: kernel on, 2: engine]
        var samples = Array(repeating: Array(repeating: [Double](), count: 3), count: scenes.count)
        for _ in 0..<runs {
            for (index, (_, signal, ramping)) in scenes.enumerated() {
                for flushed: Int32 in [0, 1] {
                    // The scene is made with flushing off, or its subnormal values would be zeros.
                    CFloatEnvironment_set_denormals_flushed(0)
                    let scene = MixScene(apps: apps, routes: routes, frames: frames, ramping: ramping, signal: signal)
                    CFloatEnvironment_set_denormals_flushed(flushed)
                    samples[index][Int(flushed)].append(time(scene, kernel: .vectorised))
                }
                CFloatEnvironment_set_denormals_flushed(0)
                samples[index][2].append(time(EngineScene(apps: apps, routes: routes, frames: frames, ramping: ramping, signal: signal)))
            }
        }
        if !markdown {
            print("\(apps) stereo apps -> \(routes) stereo routes, \(frames) frames, median of \(runs) interleaved runs x \(cycles) cycles, thread CPU µs per cycle")
            print("scene".padding(toLength: 44, withPad: " ", startingAt: 0) + "  kernel, FTZ/DAZ off  kernel, FTZ/DAZ on  engine cycle")
        }
        for (index, (name, _, _)) in scenes.enumerated() {
            let figures = samples[index].map { $0.sorted()[$0.count / 2] }
            if markdown {
                print("| \(name) | " + figures.map(f).joined(separator: " | ") + " |")
            } else {
                print(name.padding(toLength: 44, withPad: " ", startingAt: 0) + "  " + f(figures[0]).leftPad(19) + "  "
                      + f(figures[1]).leftPad(18) + "  " + f(figures[2]).leftPad(12))
            }
        }
    }

    /// Microseconds of thread CPU time per engine cycle. The control thread's side (meters,
    /// process times, retired plans) is collected between batches of cycles, outside the timing.
    func time(_ scene: EngineScene) -> Double {
        defer { scene.release() }
        for _ in 0..<200 { scene.engine.runCycle(frames: frames) }
        var elapsed = 0.0
        var done = 0
        while done < cycles {
            let batch = min(8, cycles - done)
            let start = threadCPUTime()
            for _ in 0..<batch { scene.engine.runCycle(frames: frames) }
            elapsed += threadCPUTime() - start
            done += batch
            scene.collect()
        }
        if scene.outputs[0][0].isNaN { print("NaN") }
        return elapsed / Double(cycles) * 1e6
    }

    func f(_ microseconds: Double) -> String { String(format: "%.2f", microseconds) }

    func median(_ runs: Int, _ body: () -> Double) -> Double {
        let values = (0..<runs).map { _ in body() }.sorted()
        return values[values.count / 2]
    }

    /// Microseconds of thread CPU time per cycle (every output bus of the scene mixed once).
    func time(_ scene: MixScene, kernel: Kernel) -> Double {
        defer { scene.release() }
        for _ in 0..<200 { scene.cycle(kernel) } // warm caches and branch predictors
        let start = threadCPUTime()
        for _ in 0..<cycles { scene.cycle(kernel) }
        let elapsed = threadCPUTime() - start
        // Keep the result observable so the work cannot be optimised away.
        if scene.outputs[0][0].isNaN { print("NaN") }
        return elapsed / Double(cycles) * 1e6
    }

    func wallTime() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }

    func threadCPUTime() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}

/// What the inputs carry and how loud the cells are.
enum Signal {
    /// A sine at 0.1, gains 0.5 to 0.8.
    case normal
    /// A sine at 1e-39 (every sample but the zero crossings subnormal), gains 0.5 to 0.8.
    case subnormalInput
    /// A sine at 0.1 through gains of 2e-38 ramping towards 1e-39: every product is subnormal.
    case subnormalGains

    /// 1e-39 written as bits: the literal would warn that it underflows (it is subnormal).
    static let subnormal = Float(bitPattern: 0x000A_E398)

    var inputAmplitude: Float { self == .subnormalInput ? Self.subnormal : 0.1 }

    func gain(app: Int) -> Float { self == .subnormalGains ? 2e-38 : 0.5 + Float(app % 7) * 0.05 }

    /// The target a ramping cell moves towards (over a ramp so long it never ends in a run).
    func rampTarget(app: Int) -> Float { self == .subnormalGains ? Self.subnormal : 1 }

    func input(_ channel: Int, frames: Int) -> UnsafeMutablePointer<Float> {
        let p = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        for f in 0..<frames { p[f] = Float(sin(Double(f + channel) * 0.05)) * inputAmplitude }
        return p
    }
}

/// Buffers, contributions and gains for `apps` stereo inputs into `routes` stereo outputs, each
/// input channel feeding the same channel of every route (the full matrix, the worst case).
final class MixScene {
    let frames: Int
    let inputs: [UnsafeMutablePointer<Float>]
    let inputPointers: UnsafeMutablePointer<UnsafePointer<Float>>
    let outputs: [UnsafeMutablePointer<Float>]
    let contributions: [UnsafeMutablePointer<MixContribution>]
    let counts: [Int]
    let gains: UnsafeMutablePointer<GainState>

    init(apps: Int, routes: Int, frames: Int, ramping: Bool, signal: Signal = .normal) {
        self.frames = frames
        let inputCount = apps * 2
        inputs = (0..<inputCount).map { signal.input($0, frames: frames) }
        inputPointers = .allocate(capacity: inputCount)
        for (i, p) in inputs.enumerated() { inputPointers[i] = UnsafePointer(p) }
        let outputCount = routes * 2
        outputs = (0..<outputCount).map { _ in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: frames)
            p.initialize(repeating: 0, count: frames)
            return p
        }
        gains = .allocate(capacity: inputCount * routes)
        var slot: Int32 = 0
        var lists: [UnsafeMutablePointer<MixContribution>] = []
        var counts: [Int] = []
        for o in 0..<outputCount {
            let channel = o % 2
            let list = UnsafeMutablePointer<MixContribution>.allocate(capacity: apps)
            for a in 0..<apps {
                let input = Int32(a * 2 + channel)
                var state = GainState.steady(signal.gain(app: a))
                // A ramp so long it never ends during the run: every cycle is a ramping cycle.
                if ramping && signal == .normal {
                    state = GainState(current: 0.5, target: 1, step: 1e-9, remaining: Int32.max / 2)
                } else if ramping {
                    let target = signal.rampTarget(app: a), remaining = Int32.max / 2
                    state = GainState(current: state.current, target: target,
                                      step: (target - state.current) / Float(remaining), remaining: remaining)
                }
                gains[Int(slot)] = state
                list[a] = MixContribution(input: input, gainSlot: slot, target: state.target, rampFrames: 1)
                slot += 1
            }
            lists.append(list)
            counts.append(apps)
        }
        contributions = lists
        self.counts = counts
    }

    func cycle(_ kernel: DuckBench.Kernel) {
        for o in outputs.indices {
            switch kernel {
            case .vectorised:
                MixKernel.vectorised(output: outputs[o], inputs: UnsafePointer(inputPointers),
                                     contributions: contributions[o], count: counts[o], gains: gains, frames: frames)
            case .reference:
                MixKernel.reference(output: outputs[o], inputs: UnsafePointer(inputPointers),
                                    contributions: contributions[o], count: counts[o], gains: gains, frames: frames)
            case .c:
                CMixReference_mix_bus(outputs[o],
                                      UnsafeRawPointer(inputPointers).assumingMemoryBound(to: UnsafePointer<Float>?.self),
                                      UnsafeRawPointer(contributions[o]).assumingMemoryBound(to: CMixReference_Contribution.self),
                                      Int32(counts[o]),
                                      UnsafeMutableRawPointer(gains).assumingMemoryBound(to: CMixReference_GainState.self),
                                      Int32(frames))
            }
        }
    }

    func release() {
        inputs.forEach { $0.deallocate() }
        outputs.forEach { $0.deallocate() }
        contributions.forEach { $0.deallocate() }
        inputPointers.deallocate()
        gains.deallocate()
    }
}

/// The same matrix as `MixScene`, mixed by a whole `Engine` cycle: port buffers fetched, inputs
/// scanned for NaN and peaks, plans adopted, meters kept. A port handle is its buffer's address.
final class EngineScene {
    let engine: Engine
    let inputs: [UnsafeMutablePointer<Float>]
    let outputs: [UnsafeMutablePointer<Float>]

    /// What the volume stages do: nothing (every volume 1, no stage works), every app and route at
    /// a steady volume, or every one fading along a curve for the whole run.
    enum Volumes { case none, steady, fading(GainCurve) }

    init(apps: Int, routes: Int, frames: Int, ramping: Bool, signal: Signal, volumes: Volumes = .none, measuresRMS: Bool = false) {
        var configuration = Engine.Configuration()
        configuration.maxFrames = max(frames, 1)
        configuration.maxInputChannels = max(apps * 2, 1)
        configuration.maxOutputChannels = max(routes * 2, 1)
        configuration.gainSlotCapacity = max(apps * 2 * routes, 1)
        engine = Engine(configuration: configuration, portBuffer: { port, _ in port })
        engine.setMeasuresRMS(measuresRMS)
        inputs = (0..<apps * 2).map { signal.input($0, frames: frames) }
        outputs = (0..<routes * 2).map { _ in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: frames)
            p.initialize(repeating: 0, count: frames)
            return p
        }
        let inputs = self.inputs, outputs = self.outputs
        func plan(_ target: (Int) -> Float, rampFrames: Int32, volume: VolumeTarget? = nil) -> MixPlanDescription {
            var slot: Int32 = 0
            return MixPlanDescription(
                inputs: inputs.enumerated().map {
                    var input = MixPlanDescription.Input(port: PortHandle($1), meterSlot: Int32($0))
                    input.volume = volume
                    return input
                },
                outputs: outputs.enumerated().map { o, buffer in
                    var output = MixPlanDescription.Output(port: PortHandle(buffer), meterSlot: Int32(o), contributions: (0..<apps).map { a in
                        defer { slot += 1 }
                        return MixContribution(input: Int32(a * 2 + o % 2), gainSlot: slot, target: target(a), rampFrames: rampFrames)
                    })
                    output.volume = volume
                    return output
                })
        }
        let steady: VolumeTarget? = switch volumes {
        case .none: nil
        case .steady, .fading: VolumeTarget(gain: 0.5, rampFrames: 1, serial: 1)
        }
        // Every cell at its gain from the first sample; ramping scenes then start a ramp so long
        // it never ends during the run.
        do {
            try engine.publish(plan(signal.gain(app:), rampFrames: 1, volume: steady))
            engine.runCycle(frames: frames)
            if ramping { try engine.publish(plan(signal.rampTarget(app:), rampFrames: Int32.max / 2, volume: steady)) }
            if case let .fading(curve) = volumes {
                try engine.publish(plan(signal.gain(app:), rampFrames: 1,
                                        volume: VolumeTarget(gain: 0.01, rampFrames: Int32.max / 2, curve: curve, serial: 2)))
            }
        } catch {
            fatalError("the benchmark's plan was refused: \(error)")
        }
    }

    /// What the control thread does between cycles.
    func collect() {
        engine.collectRetiredPlans()
        _ = engine.collectMeters()
        engine.collectProcessTimes()
    }

    func release() {
        inputs.forEach { $0.deallocate() }
        outputs.forEach { $0.deallocate() }
    }
}

extension String {
    func leftPad(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}

DuckBench.main()
