import Engine

extension DuckBench {
    /// The volume stages' cost: the engine's whole cycle (steady cell gains) with no stage at
    /// work (every volume 1: the floor), with every app's input channels and every route's output
    /// channels at a steady 0.5 (one multiply pass each), and with every one of them fading along
    /// each curve. Interleaved runs, the median per scene, and its ratio to the floor.
    func runVolumes() {
        let scenes: [(String, EngineScene.Volumes)] = [
            ("no volume stage at work (the floor)", .none),
            ("every app and route at volume 0.5", .steady),
            ("every app and route fading, fader", .fading(.fader)),
            ("every app and route fading, linear", .fading(.linear)),
            ("every app and route fading, equalPower", .fading(.equalPower)),
        ]
        var samples = Array(repeating: [Double](), count: scenes.count)
        for _ in 0..<runs {
            for (index, (_, volumes)) in scenes.enumerated() {
                samples[index].append(time(EngineScene(apps: apps, routes: routes, frames: frames, ramping: false, signal: .normal, volumes: volumes)))
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
    }
}
