import ChaosRig
import Foundation
import JackRig
import Testing

/// The chaos run's sinks on a real server: a cycle played twice and a step within a cycle are
/// reported where they are, and a tone that runs on is not.
@Suite("The chaos run's tone sink", .serialized)
struct ToneSinkTests {
    @Test("a cycle played twice is reported with the steps at its two seams, a jump within a cycle at its sample, and nothing else")
    func repeatedCycleAndStep() throws {
        let n = 256
        let server = try JackServer(period: n)
        defer { server.stop() }
        // 75 cycles holding 44 whole periods of 110 Hz: the table wraps without a step. Its
        // slope (2π·110·0.5/48,000 ≈ 0.0072 a sample) stays far under the sink's limit.
        let length = 75 * n
        var table = (0..<length).map { Float(0.5 * sin(2 * Double.pi * 110 * Double($0) / Double(server.sampleRate))) }
        // A cycle played twice: cycle `k` holds cycle `k - 1` again, with real steps at both seams.
        let limit: Float = 0.05
        let k = try #require((20..<60).first { k in
            abs(table[k * n - 1] - table[(k - 1) * n]) > 4 * limit && abs(table[k * n - 1] - table[(k + 1) * n]) > 0.3 + 4 * limit
        })
        for i in 0..<n { table[k * n + i] = table[(k - 1) * n + i] }
        // And in the cycle after it, beside the step at its seam, a jump of 0.3 a quarter of the
        // way in: reported apart from the (larger) seam's.
        for i in (n / 4)..<n { table[(k + 1) * n + i] += 0.3 }
        // A jump of 0.3 halfway through cycle 66, to the end of that cycle.
        let jump = 66
        for i in (n / 2)..<n { table[jump * n + i] += 0.3 }

        let sink = try ToneSink(name: "sink", server: server.name, inputs: ["in_1"], stepLimit: limit)
        defer { sink.close() }
        let source = try TestClient(name: "source", server: server.name, outputs: ["out_1"])
        defer { source.close() }
        try source.connect("source:out_1", to: "sink:in_1")
        source.setSignal(table, output: 0, fromStart: true)
        try waitFor("the table to start") { source.signalStartFrame(output: 0) != nil }
        let first = try #require(source.signalStartFrame(output: 0))
        // Ten passes of the table (it wraps every 0.4 s); the first the sink heard whole is judged
        // (PipeWire's clock skips cycles at times, most often in a new client's first second).
        let heard = sink.framesHeard
        var events: [ToneSink.Event] = []
        try waitFor("the sink to hear the table ten times", timeout: 30) {
            events += sink.takeEvents()
            return sink.framesHeard >= heard + 10 * length + 6 * n
        }
        events += sink.takeEvents()
        let passes = (0..<10).map { p in
            events.filter { $0.frameTime &- first &- UInt32(p * length) &+ UInt32(2 * n) < UInt32(length) }
        }
        // A pass with a cycle the sink missed (a loaded machine) leaves nothing to judge.
        guard let index = passes.firstIndex(where: { !$0.contains { $0.kind == .gap } }) else {
            Issue.record("the sink missed a cycle in each of ten passes: \(events)")
            return
        }
        let pass = passes[index]
        // Where the table began is read on the source's clock, which may read a cycle or two off
        // the sink's (JACK2's early readings, PipeWire's order): every frame counts from the
        // repeated cycle, found within four cycles of where it was played.
        let repeated = try #require(pass.first { $0.kind == .repeatedCycle }, "no cycle played twice: \(pass)")
        let lag = Int(Int32(bitPattern: repeated.frameTime &- (first &+ UInt32(index * length + k * n))))
        #expect(lag % n == 0 && abs(lag) <= 4 * n, "the repeated cycle heard \(lag) frames from where it was played")
        func at(_ cycle: Int) -> UInt32 { repeated.frameTime &+ UInt32((cycle - k) * n) }
        #expect(Int(repeated.size) == n)
        #expect(pass.contains { $0.kind == .step && $0.frameTime == at(k) && $0.offset == 0 }, "\(pass)")
        #expect(pass.contains { $0.kind == .step && $0.frameTime == at(k + 1) && $0.offset == 0 }, "\(pass)")
        #expect(pass.contains { $0.kind == .step && $0.frameTime == at(k + 1) && $0.offset == UInt32(n / 4) && abs($0.size - 0.3) < 0.02 },
                "\(pass)")
        #expect(pass.contains { $0.kind == .step && $0.frameTime == at(k + 2) && $0.offset == 0 }, "\(pass)")
        #expect(pass.contains { $0.kind == .step && $0.frameTime == at(jump) && $0.offset == UInt32(n / 2) && abs($0.size - 0.3) < 0.02 },
                "\(pass)")
        #expect(pass.contains { $0.kind == .step && $0.frameTime == at(jump + 1) && $0.offset == 0 }, "\(pass)")
        if JackServer.Implementation.current != .pipewire {
            // jackd's graph is never late without a missed cycle: nothing else.
            #expect(pass.count == 7, "\(pass)")
        }
    }
}
