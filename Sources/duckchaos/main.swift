import ArgumentParser
import ChaosRig
import JackRig
import Foundation

/// `duckchaos`: the chaos run (`make chaos`). It starts a private server, the router, tone
/// sources and a sink per route, throws a seeded schedule of faults at them, and checks after
/// each that the router is back as the model says (ChaosRig, docs/RELIABILITY.md "Chaos run").
///
/// Exit status 0 when the run passed, 1 on a violation (its seed, steps and the router's log are
/// printed), 2 when the rig itself could not run.
@main
struct DuckChaos: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duckchaos",
        abstract: "Throw a seeded schedule of faults at duckrouter and check what is heard and kept after each.")

    @Option(help: "The duckrouter binary.")
    var duckrouter = ".build/release/duckrouter"
    @Option(help: "How long to run, in minutes.")
    var minutes = 5.0
    @Option(help: "The schedule's seed (default: from the clock; printed).")
    var seed: UInt64?
    @Option(help: "JACK period in frames at the start.")
    var period = 256
    @Option(help: "Write the report, and the resources plot beside it (.svg), to this file.")
    var report: String?
    @Flag(help: "Play again every schedule that found a defect (ChaosCase.all) on this server, each for its length.")
    var cases = false

    func run() throws {
        if cases {
            let server = ProcessInfo.processInfo.environment["JACK_IMPL"] == "pipewire" ? "pipewire" : "jackd"
            var failed = 0
            for known in ChaosCase.all where known.server == server {
                print("duckchaos --cases: seed \(known.seed), \(Int(known.seconds)) s; it found \(known.found)")
                var options = ChaosRun.Options(seconds: known.seconds, seed: known.seed)
                options.router = duckrouter
                options.period = period
                let result = try ChaosRun(options).run()
                print(result.text)
                if !result.passed { failed += 1; print(daemonLogExcerpt(result.log, lastLines: 60)) }
            }
            if failed > 0 { throw ExitCode(1) }
            return
        }
        let seed = seed ?? UInt64(Date().timeIntervalSince1970 * 1000) % 1_000_000_007
        var options = ChaosRun.Options(seconds: minutes * 60, seed: seed)
        options.router = duckrouter
        options.period = period
        let result: ChaosReport
        do {
            result = try ChaosRun(options).run()
        } catch {
            print("duckchaos: the rig could not run (seed \(seed)): \(error)")
            throw ExitCode(2)
        }
        print(result.text)
        if let report {
            try result.text.write(toFile: report, atomically: true, encoding: .utf8)
            try result.svg.write(toFile: (report as NSString).deletingPathExtension + ".svg", atomically: true, encoding: .utf8)
        }
        if !result.passed {
            print(daemonLogExcerpt(result.log, lastLines: 60))
            throw ExitCode(1)
        }
    }
}
