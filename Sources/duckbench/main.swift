import ArgumentParser
import CMixReference
import Engine
import Foundation

/// Benchmarks for docs/PERFORMANCE.md. Figures are thread CPU time, median of several runs.
struct DuckBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duckbench",
        abstract: "Times the mix kernels: Swift vectorised and scalar reference against the C reference (-O3).")

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

    enum Scene: String, ExpressibleByArgument { case steady, ramping }

    func run() throws {
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

    init(apps: Int, routes: Int, frames: Int, ramping: Bool) {
        self.frames = frames
        let inputCount = apps * 2
        inputs = (0..<inputCount).map { i in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: frames)
            for f in 0..<frames { p[f] = Float(sin(Double(f + i) * 0.05)) * 0.1 }
            return p
        }
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
                var state = GainState.steady(0.5 + Float(a % 7) * 0.05)
                // A ramp so long it never ends during the run: every cycle is a ramping cycle.
                if ramping { state = GainState(current: 0.5, target: 1, step: 1e-9, remaining: Int32.max / 2) }
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

extension String {
    func leftPad(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}

DuckBench.main()
