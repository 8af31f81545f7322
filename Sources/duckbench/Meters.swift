import Engine

extension DuckBench {
    /// The RMS meters' cost: the engine's whole cycle (steady cell gains, every channel metered)
    /// with RMS not measured (the floor: what an idle router pays) and measured (while someone
    /// shows levels), interleaved runs, the median per scene and its ratio to the floor; then the
    /// per-buffer kernels alone: the peak scan every buffer already gets, and each build of the
    /// sum of squares (the one chosen, C's baseline and AVX2 builds, the same loop in Swift).
    func runMeters() {
        let scenes: [(String, Bool)] = [
            ("RMS not measured (the floor)", false),
            ("RMS measured on every channel", true),
        ]
        var samples = Array(repeating: [Double](), count: scenes.count)
        for _ in 0..<runs {
            for (index, (_, rms)) in scenes.enumerated() {
                samples[index].append(time(EngineScene(apps: apps, routes: routes, frames: frames, ramping: false, signal: .normal, measuresRMS: rms)))
            }
        }
        let medians = samples.map { $0.sorted()[$0.count / 2] }
        if !markdown {
            print("\(apps) stereo apps -> \(routes) stereo routes, \(frames) frames, median of \(runs) interleaved runs x \(cycles) cycles, thread CPU µs per engine cycle")
        }
        for (index, (name, _)) in scenes.enumerated() {
            let ratio = String(format: "%.2f", medians[index] / medians[0])
            if markdown {
                print("| \(name) | \(f(medians[index])) | \(ratio)x |")
            } else {
                print(name.padding(toLength: 42, withPad: " ", startingAt: 0) + "  " + f(medians[index]).leftPad(8) + "  " + ratio.leftPad(5) + "x")
            }
        }
        if !markdown {
            print("ns per \(frames)-frame buffer".padding(toLength: 42, withPad: " ", startingAt: 0) + "  8 buffers (in L1)  \(apps * 2) buffers")
        }
        func row(_ name: String, _ times: (hot: Double, all: Double)) {
            if markdown {
                print("| \(name) | " + String(format: "%.1f | %.1f |", times.hot, times.all))
                return
            }
            print(name.padding(toLength: 42, withPad: " ", startingAt: 0) + "  " + String(format: "%.1f", times.hot).leftPad(17) + "  "
                  + String(format: "%.1f", times.all).leftPad("\(apps * 2) buffers".count))
        }
        // Each kernel in a loop of its own (the closure inlined), so no call through a pointer is timed.
        row("peak scan (\(SignalGuard.ScanVariant.chosen))", kernelTimes { SignalGuard.peakIfFinite($0, frames: $1) ?? 0 })
        row("sum of squares, the one used", kernelTimes { SignalGuard.sumOfSquares($0, frames: $1) })
        row("sum of squares, C baseline", kernelTimes { SignalGuard.sumOfSquares($0, frames: $1, variant: .baseline) })
        row("sum of squares, C AVX2+FMA", kernelTimes { SignalGuard.sumOfSquares($0, frames: $1, variant: .avx2) })
        row("sum of squares, Swift SIMD8", kernelTimes { SignalGuard.sumOfSquaresSwift($0, frames: $1) })
    }

    /// `kernelTime` over 8 buffers (they stay in L1) and over the scene's input buffers.
    @inline(__always)
    func kernelTimes(_ kernel: (UnsafePointer<Float>, Int) -> Float) -> (hot: Double, all: Double) {
        (kernelTime(kernel, buffers: 8), kernelTime(kernel, buffers: apps * 2))
    }

    /// Nanoseconds of thread CPU time per buffer of `frames` for `kernel`, over `count` buffers in
    /// turn (the same number of samples whatever the count); the median of the runs.
    @inline(__always)
    func kernelTime(_ kernel: (UnsafePointer<Float>, Int) -> Float, buffers count: Int) -> Double {
        let frames = self.frames
        let buffers = (0..<max(count, 1)).map { Signal.normal.input($0, frames: frames) }
        defer { buffers.forEach { $0.deallocate() } }
        let passes = max(cycles * 64 / buffers.count, 1)
        let pointers = buffers.map { UnsafePointer($0) }
        var sink: Float = 0
        let time = median(runs) {
            let start = threadCPUTime()
            for _ in 0..<passes {
                for buffer in pointers { sink += kernel(buffer, frames) }
            }
            return (threadCPUTime() - start) / Double(passes * pointers.count) * 1e9
        }
        if sink.isNaN { print("NaN") }
        return time
    }
}
