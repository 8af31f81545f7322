import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import Engine

/// The engine driven without JACK: a port handle is the address of a test buffer.
@Suite("Engine")
struct EngineTests {
    static let directBuffers: PortBufferFunction = { port, _ in port }

    final class Buffers {
        var storage: [UnsafeMutablePointer<Float>] = []
        func make(_ frames: Int, _ value: Float = 0) -> UnsafeMutablePointer<Float> {
            let p = UnsafeMutablePointer<Float>.allocate(capacity: frames)
            p.initialize(repeating: value, count: frames)
            storage.append(p)
            return p
        }
        deinit { storage.forEach { $0.deallocate() } }
    }

    func plan(inputs: [UnsafeMutablePointer<Float>], output: UnsafeMutablePointer<Float>,
              gains: [Float], ramp: Int32 = 1, resets: [Int32] = []) -> MixPlanDescription {
        MixPlanDescription(
            inputs: inputs.enumerated().map { .init(port: PortHandle($1), meterSlot: Int32($0)) },
            outputs: [.init(port: PortHandle(output), meterSlot: 0,
                            contributions: gains.enumerated().map {
                                MixContribution(input: Int32($0), gainSlot: Int32($0), target: $1, rampFrames: ramp)
                            })],
            resetSlots: resets)
    }

    @Test("cycles the frame clock went past are counted one by one: a gap of 18 periods is 18 missed cycles, part of one is one")
    func missedCyclesCounted() {
        let engine = Engine(configuration: Engine.Configuration(), portBuffer: Self.directBuffers)
        let clock = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        defer { clock.deallocate() }
        engine.setFrameClock({ $0!.load(as: UInt32.self) }, argument: UnsafeMutableRawPointer(clock))
        let period: UInt32 = 256
        var frame: UInt32 = 0xFFFF_FF00   // across the clock's wrap too
        func cycle(startingAt start: UInt32) {
            frame = start
            clock.pointee = start
            engine.runCycle(frames: Int(period))
        }
        cycle(startingAt: frame)
        cycle(startingAt: frame &+ period)
        #expect(engine.statistics.missedCycles == 0, "back to back")
        cycle(startingAt: frame &+ period &+ 18 &* period)
        #expect(engine.statistics.missedCycles == 18)
        cycle(startingAt: frame &+ period &+ 100)
        #expect(engine.statistics.missedCycles == 19, "a gap shorter than a period is a cycle missed")
        cycle(startingAt: frame &- 2 &* period)
        #expect(engine.statistics.missedCycles == 19, "a clock that goes back misses nothing")
    }

    @Test("where the engine missed cycles is kept, the newest 16 gaps: their first frame and length")
    func missedCyclesLocated() {
        let engine = Engine(configuration: Engine.Configuration(), portBuffer: Self.directBuffers)
        let clock = UnsafeMutablePointer<UInt32>.allocate(capacity: 1)
        defer { clock.deallocate() }
        engine.setFrameClock({ $0!.load(as: UInt32.self) }, argument: UnsafeMutableRawPointer(clock))
        func cycle(startingAt start: UInt32) {
            clock.pointee = start
            engine.runCycle(frames: 256)
        }
        cycle(startingAt: 0xFFFF_FF00)
        cycle(startingAt: 0x0000_0000)
        #expect(engine.recentGaps().isEmpty)
        cycle(startingAt: 0x0000_0100 + 18 * 256)   // after the wrap: 18 periods missed from frame 256
        cycle(startingAt: 0x0000_0100 + 19 * 256 + 100)
        #expect(engine.recentGaps() == [Engine.FrameGap(firstFrame: 256, frames: 18 * 256),
                                        Engine.FrameGap(firstFrame: 256 + 19 * 256, frames: 100)])
        // Forty more gaps: the newest sixteen are kept, oldest first (read now and then, as the
        // control thread's housekeeping does, so the audio thread's ring never fills).
        var start: UInt32 = 0x0010_0000
        for n in 0..<40 {
            cycle(startingAt: start)
            start += 256 + UInt32(n + 1)
            if n % 10 == 9 { _ = engine.collectProcessTimes() }
        }
        cycle(startingAt: start)
        let gaps = engine.recentGaps()
        #expect(gaps.count == Engine.recentGapCount)
        #expect(gaps.map(\.frames) == (25...40).map { UInt32($0) }, "\(gaps.map(\.frames))")
    }

    @Test("a look-ahead output hears a delayed input exactly that many frames late, across ring wraps and any cycle length; a plain output hears it at once")
    func lookaheadDelay() throws {
        var configuration = Engine.Configuration()
        configuration.maxFrames = 512
        let engine = Engine(configuration: configuration, portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let input = buffers.make(512), delayedOut = buffers.make(512), plainOut = buffers.make(512)
        var description = MixPlanDescription(
            inputs: [.init(port: PortHandle(input), meterSlot: 0, delayed: true)],
            outputs: [.init(port: PortHandle(delayedOut), meterSlot: 0, contributions: [MixContribution(input: 0, gainSlot: 0, target: 1, rampFrames: 1)]),
                      .init(port: PortHandle(plainOut), meterSlot: 1, contributions: [MixContribution(input: 0, gainSlot: 1, target: 1, rampFrames: 1)])])
        description.outputs[0].delayed = true
        description.lookaheadFrames = 300
        try engine.publish(description)
        // A ramp 1, 2, 3… through cycles of uneven length: the ring (300 + 512 frames) wraps many times.
        var sent: [Float] = [], heardDelayed: [Float] = [], heardPlain: [Float] = []
        var next: Float = 1
        for cycle in 0..<200 {
            let frames = [512, 1, 37, 256, 300, 511][cycle % 6]
            for f in 0..<frames { input[f] = next; next += 1 }
            sent += (0..<frames).map { input[$0] }
            engine.runCycle(frames: frames)
            heardDelayed += (0..<frames).map { delayedOut[$0] }
            heardPlain += (0..<frames).map { plainOut[$0] }
        }
        #expect(heardPlain == sent)
        #expect(heardDelayed.prefix(300).allSatisfy { $0 == 0 }, "silence before the first input arrives")
        #expect(Array(heardDelayed.dropFirst(300)) == Array(sent.dropLast(300)), "exactly 300 frames late")
    }

    @Test("level watches: each cycle's peak of a watch's channels is reported with the cycle's length")
    func levelWatches() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(64, 0.25), b = buffers.make(64, -0.5), c = buffers.make(64, 0.9), out = buffers.make(64)
        try engine.publish(MixPlanDescription(
            inputs: [.init(port: PortHandle(a), meterSlot: 0, watch: 3), .init(port: PortHandle(b), meterSlot: 1, watch: 3),
                     .init(port: PortHandle(c), meterSlot: 2)],
            outputs: [.init(port: PortHandle(out), meterSlot: 0, contributions: [])]))
        engine.runCycle(frames: 64)
        engine.runCycle(frames: 32)
        var readings: [Engine.LevelReading] = []
        engine.collectLevels(into: &readings)
        #expect(readings == [.init(watch: 3, peak: 0.5, frames: 64), .init(watch: 3, peak: 0.5, frames: 32)])
        engine.collectLevels(into: &readings)
        #expect(readings.isEmpty)
    }

    @Test("asleep, level watches report nothing until a watch's peak reaches its wake level; then the eventfd is signalled once and that cycle is reported")
    func levelWatchSleep() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        #expect(engine.levelWakeDescriptor >= 0)
        let buffers = Buffers()
        let a = buffers.make(64, 0.01), out = buffers.make(64)
        try engine.publish(MixPlanDescription(
            inputs: [.init(port: PortHandle(a), meterSlot: 0, watch: 2)],
            outputs: [.init(port: PortHandle(out), meterSlot: 0, contributions: [])]))
        engine.setWatchWakeLevel(2, 0.1)
        engine.runCycle(frames: 64)
        engine.sleepLevels()
        #expect(engine.levelsAreAsleep)
        var readings: [Engine.LevelReading] = []
        engine.collectLevels(into: &readings)
        #expect(readings == [.init(watch: 2, peak: 0.01, frames: 64)], "reported before the sleep")
        for _ in 0..<10 { engine.runCycle(frames: 64) }
        engine.collectLevels(into: &readings)
        #expect(readings.isEmpty, "quiet cycles are not reported while asleep")
        #expect(Self.wakeCount(engine) == 0)
        a.update(repeating: 0.2, count: 64)
        engine.runCycle(frames: 64)
        #expect(!engine.levelsAreAsleep)
        #expect(Self.wakeCount(engine) == 1, "one wake-up")
        engine.runCycle(frames: 64)
        engine.collectLevels(into: &readings)
        #expect(readings == [.init(watch: 2, peak: 0.2, frames: 64), .init(watch: 2, peak: 0.2, frames: 64)], "the waking cycle and the next")
        #expect(Self.wakeCount(engine) == 0, "no more wake-ups while awake")
        // Woken by the control side: nothing is signalled.
        engine.sleepLevels()
        #expect(engine.wakeLevels())
        engine.runCycle(frames: 64)
        #expect(Self.wakeCount(engine) == 0)
    }

    /// Reads the wake-up eventfd's counter (0 when nothing was signalled).
    static func wakeCount(_ engine: Engine) -> UInt64 {
        var count: UInt64 = 0
        let got = read(engine.levelWakeDescriptor, &count, 8)
        return got == 8 ? count : 0
    }

    @Test("a published plan mixes inputs into the output from the next cycle")
    func mixesAfterPublish() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(64, 0.25), b = buffers.make(64, 0.5), out = buffers.make(64, 9)
        try engine.publish(plan(inputs: [a, b], output: out, gains: [1, 1]))
        engine.runCycle(frames: 64)
        // Ramp of one frame: the first sample is already at the target.
        #expect((0..<64).allSatisfy { out[$0] == 0.75 })
        #expect(engine.adoptedPlanGeneration == 1)
    }

    @Test("a plan scheduled for a frame takes over on exactly that sample, in this cycle or a later one; plans behind it wait")
    func scheduledPlan() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(64, 1), out = buffers.make(64)
        try engine.publish(plan(inputs: [a], output: out, gains: [0.5]))
        engine.runCycle(frames: 64)                      // frames 0..<64 at 0.5
        var scheduled = plan(inputs: [a], output: out, gains: [0.25])
        scheduled.startFrame = 64 + 64 + 10             // sample 10 of the cycle after next
        try engine.publish(scheduled)
        try engine.publish(plan(inputs: [a], output: out, gains: [0.125]))
        engine.runCycle(frames: 64)
        #expect((0..<64).allSatisfy { out[$0] == 0.5 }, "not yet")
        #expect(engine.adoptedPlanGeneration == 1)
        engine.runCycle(frames: 64)
        #expect((0..<10).allSatisfy { out[$0] == 0.5 })
        // The scheduled plan starts at sample 10; the plan behind it was due at once, so it
        // follows in the same sample.
        #expect((10..<64).allSatisfy { out[$0] == 0.125 })
        #expect(engine.adoptedPlanGeneration == 3)
    }

    @Test("replaced plans come back to the control thread and are freed there")
    func plansAreRetired() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(16, 1), out = buffers.make(16)
        for g in 1...5 { try engine.publish(plan(inputs: [a], output: out, gains: [Float(g) / 10])) }
        engine.runCycle(frames: 16)
        #expect(engine.adoptedPlanGeneration == 5)
        #expect(engine.collectRetiredPlans() == 4)
        #expect(engine.retiredPlanGeneration == 4)
    }

    @Test("a full queue refuses a plan without losing the ones queued")
    func fullQueue() throws {
        var configuration = Engine.Configuration()
        configuration.planQueueCapacity = 4
        let engine = Engine(configuration: configuration, portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(16, 1), out = buffers.make(16)
        var accepted = 0
        for g in 1...10 where try engine.publish(plan(inputs: [a], output: out, gains: [Float(g) / 10])) != nil {
            accepted += 1
        }
        #expect(accepted == 4)
        engine.runCycle(frames: 16)
        #expect(engine.adoptedPlanGeneration == 4)
        #expect(out[0] == 0.4)
    }

    @Test("a gain change ramps over the plan's ramp length and carries across plans")
    func rampsAcrossPlans() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let dc = buffers.make(256, 1), out = buffers.make(256)
        try engine.publish(plan(inputs: [dc], output: out, gains: [1]))
        engine.runCycle(frames: 256)
        try engine.publish(plan(inputs: [dc], output: out, gains: [0], ramp: 512))
        engine.runCycle(frames: 256)
        #expect(abs(out[255] - 0.5) < 1e-4)
        // A new plan with the same target must not restart the ramp.
        try engine.publish(plan(inputs: [dc], output: out, gains: [0], ramp: 512))
        engine.runCycle(frames: 256)
        #expect(out[255] == 0)
        #expect(engine.gainState(slot: 0) == .steady(0))
    }

    @Test("reset slots start from silence and ramp up")
    func resetSlots() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let dc = buffers.make(64, 1), out = buffers.make(64)
        try engine.publish(plan(inputs: [dc], output: out, gains: [1]))
        engine.runCycle(frames: 64)
        #expect(out[0] == 1)
        try engine.publish(plan(inputs: [dc], output: out, gains: [1], ramp: 64, resets: [0]))
        engine.runCycle(frames: 64)
        #expect(out[0] < 0.05 && out[63] == 1)
    }

    @Test("NaN and infinity on an input never reach the output; the other inputs still play")
    func nonFiniteInputs() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let bad = buffers.make(32, 0.5), good = buffers.make(32, 0.25), out = buffers.make(32)
        bad[3] = .nan; bad[7] = .infinity; bad[9] = -.infinity
        try engine.publish(plan(inputs: [bad, good], output: out, gains: [1, 1]))
        engine.runCycle(frames: 32)
        #expect((0..<32).allSatisfy { out[$0].isFinite })
        #expect(out[3] == 0.25 && out[7] == 0.25 && out[0] == 0.75)
        #expect(engine.statistics.nonFiniteInputBuffers == 1)
    }

    @Test("more bad inputs than scratch buffers are muted for the cycle, not passed through")
    func manyNonFiniteInputs() throws {
        var configuration = Engine.Configuration()
        configuration.sanitiseScratchBuffers = 1
        let engine = Engine(configuration: configuration, portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(16, .nan), b = buffers.make(16, .infinity), out = buffers.make(16)
        try engine.publish(plan(inputs: [a, b], output: out, gains: [1, 1]))
        engine.runCycle(frames: 16)
        #expect((0..<16).allSatisfy { out[$0] == 0 })
    }

    @Test("sums that overflow to infinity are caught at the output")
    func overflowingSum() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(16, 3e38), b = buffers.make(16, 3e38), out = buffers.make(16)
        try engine.publish(plan(inputs: [a, b], output: out, gains: [1, 1]))
        engine.runCycle(frames: 16)
        #expect((0..<16).allSatisfy { out[$0].isFinite })
        #expect(engine.statistics.nonFiniteOutputBuffers == 1)
    }

    @Test("invalid plans are refused with a reason and change nothing")
    func invalidPlans() throws {
        let engine = Engine(portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(16, 1), out = buffers.make(16)
        #expect(throws: MixPlanError.targetNotFinite(gainSlot: 0)) {
            try engine.publish(plan(inputs: [a], output: out, gains: [.nan]))
        }
        var twice = plan(inputs: [a, a], output: out, gains: [1, 1])
        twice.outputs[0].contributions[1].gainSlot = 0
        #expect(throws: MixPlanError.gainSlotUsedTwice(0)) { try engine.publish(twice) }
        var stray = plan(inputs: [a], output: out, gains: [1])
        stray.outputs[0].contributions[0].input = 5
        #expect(throws: MixPlanError.inputIndexOutOfRange(5, output: 0)) { try engine.publish(stray) }
        #expect(engine.adoptedPlanGeneration == 0)
        engine.runCycle(frames: 16)
        #expect(engine.adoptedPlanGeneration == 0)
    }

    @Test("meters report input and output peaks once a meter interval has passed")
    func meters() throws {
        var configuration = Engine.Configuration()
        configuration.meterIntervalFrames = 64
        let engine = Engine(configuration: configuration, portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(32, -0.5), out = buffers.make(32)
        try engine.publish(plan(inputs: [a], output: out, gains: [0.5]))
        engine.runCycle(frames: 32)
        #expect(engine.collectMeters() == nil)
        engine.runCycle(frames: 32)
        let reading = try #require(engine.collectMeters())
        #expect(reading.inputPeaks[0] == 0.5)
        #expect(reading.outputPeaks[0] == 0.25)
        #expect(reading.frames == 64)
    }

    @Test("a control side slow to collect loses no peak: the last block goes on gathering until a free one can take its place")
    func metersWhileNotCollected() throws {
        var configuration = Engine.Configuration()
        configuration.meterIntervalFrames = 64
        configuration.meterBlocks = 4
        let engine = Engine(configuration: configuration, portBuffer: Self.directBuffers)
        let buffers = Buffers()
        let a = buffers.make(32, 0.1), out = buffers.make(32)
        try engine.publish(plan(inputs: [a], output: out, gains: [1]))
        // 40 cycles, 20 meter intervals, with nothing collected: three blocks are full after
        // 6 cycles, and the fourth goes on gathering.
        for _ in 0..<40 { engine.runCycle(frames: 32) }
        a.update(repeating: 0.9, count: 32)   // a click, long after the free blocks ran out
        engine.runCycle(frames: 32)
        a.update(repeating: 0.1, count: 32)
        for _ in 0..<5 { engine.runCycle(frames: 32) }
        let first = try #require(engine.collectMeters())
        #expect(first.frames == 3 * 64 && first.inputPeaks[0] == 0.1)
        // Blocks are free again: the gathering one is handed over at the next cycle, click and all.
        engine.runCycle(frames: 32)
        let second = try #require(engine.collectMeters())
        #expect(second.inputPeaks[0] == 0.9, "the click is in the meters")
        #expect(first.frames + second.frames == 47 * 32, "every cycle was metered")
        // Metering goes on in whole intervals again.
        engine.runCycle(frames: 32)
        engine.runCycle(frames: 32)
        #expect(engine.collectMeters()?.frames == 64)
    }
}

@Suite("SPSC ring")
struct SPSCRingTests {
    @Test("values come out in order; a full ring refuses; capacity rounds up to a power of two")
    func order() {
        let ring = SPSCRing(minimumCapacity: 3)
        defer { ring.deallocate() }
        let capacity = ring.capacity
        #expect(capacity == 4)
        var pushed: [Bool] = []
        for v in 1...5 { pushed.append(ring.push(UInt(v))) }
        #expect(pushed == [true, true, true, true, false])
        let hasRoom = ring.hasRoom()
        #expect(!hasRoom)
        var popped: [UInt?] = []
        for _ in 1...5 { popped.append(ring.pop()) }
        #expect(popped == [1, 2, 3, 4, nil])
    }

    @Test("a producer and a consumer thread pass a million values without loss or reordering")
    func concurrent() async {
        let ring = UnsafeMutablePointer<SPSCRing>.allocate(capacity: 1)
        ring.initialize(to: SPSCRing(minimumCapacity: 64))
        defer { ring.pointee.deallocate(); ring.deinitialize(count: 1); ring.deallocate() }
        let count = 1_000_000
        let shared = UnsafeSendable(ring)
        async let produced: Void = Task.detached {
            var v = 1
            while v <= count { if shared.value.pointee.push(UInt(v)) { v += 1 } }
        }.value
        var expected: UInt = 1
        var ok = true
        while expected <= UInt(count) {
            if let v = ring.pointee.pop() {
                ok = ok && v == expected
                expected += 1
            }
        }
        await produced
        #expect(ok)
    }
}

/// Sends a pointer to the producer task of the SPSC test (the ring is built for two threads).
struct UnsafeSendable<T>: @unchecked Sendable { let value: T; init(_ value: T) { self.value = value } }

@Suite("Signal guard")
struct SignalGuardTests {
    @Test("peak is the largest magnitude; any NaN or infinity anywhere gives nil (every build of the scan)",
          arguments: [1, 7, 8, 9, 31, 33, 128, 1023])
    func peaks(frames: Int) {
        typealias Scan = (UnsafePointer<Float>, Int) -> Float?
        var scans: [(String, Scan)] = [("chosen", { SignalGuard.peakIfFinite($0, frames: $1) })]
        for variant in SignalGuard.ScanVariant.allCases where variant.isSupported {
            scans.append(("\(variant)", { SignalGuard.peakIfFinite($0, frames: $1, variant: variant) }))
        }
        var rng = SplitMix(seed: UInt64(frames))
        var samples = (0..<frames).map { _ in rng.nextFloat() * 2 - 1 }
        samples[frames / 2] = -1.5
        let expected = samples.map(abs).max()!
        for (name, scan) in scans {
            #expect(scan(samples, frames) == expected, "\(name)")
            // The peak, a NaN or an infinity at every position: the vector loop, its epilogue and
            // the scalar tail each get them.
            for position in 0..<frames {
                var louder = samples
                louder[position] = 2.5
                #expect(scan(louder, frames) == 2.5, "\(name): peak at \(position)")
                for bad: Float in [.nan, -.nan, .infinity, -.infinity, .signalingNaN] {
                    var dirty = samples
                    dirty[position] = bad
                    #expect(scan(dirty, frames) == nil, "\(name): \(bad) at \(position)")
                }
            }
            #expect(scan([Float](repeating: -0.0, count: frames), frames) == 0, "\(name)")
            #expect(scan([Float](repeating: .greatestFiniteMagnitude, count: frames), frames) == .greatestFiniteMagnitude, "\(name)")
            // Only the frames asked for: a NaN just past the end is not looked at.
            let longer = samples + [.nan]
            #expect(longer.withUnsafeBufferPointer { scan($0.baseAddress!, frames) } == expected, "\(name)")
        }
    }

    @Test("a scan from a start that is not vector-aligned, and of no frames (every build of the scan)")
    func peaksUnalignedAndEmpty() {
        var scans: [(String, (UnsafePointer<Float>, Int) -> Float?)] = [("chosen", { SignalGuard.peakIfFinite($0, frames: $1) })]
        for variant in SignalGuard.ScanVariant.allCases where variant.isSupported {
            scans.append(("\(variant)", { SignalGuard.peakIfFinite($0, frames: $1, variant: variant) }))
        }
        var rng = SplitMix(seed: 7)
        // A NaN before the start and after the end: neither is looked at.
        let samples: [Float] = [.nan] + (0..<200).map { _ in rng.nextFloat() * 2 - 1 } + [.nan]
        for (name, scan) in scans {
            samples.withUnsafeBufferPointer { all in
                for offset in 1...9 {
                    // Up to the sample just before the trailing NaN (at 201).
                    let frames = 201 - offset
                    let expected = all[offset..<(offset + frames)].map(abs).max()!
                    #expect(scan(all.baseAddress! + offset, frames) == expected, "\(name) from \(offset)")
                }
                #expect(scan(all.baseAddress!, 0) == 0, "\(name): no frames is silence, not a NaN")
                #expect(scan(all.baseAddress!, -4) == 0, "\(name): a negative count reads nothing")
            }
        }
    }

    @Test("the scan built for the widest vector unit this x86 CPU has is the one used")
    func chosenScan() throws {
        #if arch(x86_64)
        let widest = SignalGuard.ScanVariant.allCases.last { $0.isSupported }
        #expect(SignalGuard.ScanVariant.chosen == widest)
        #expect(SignalGuard.ScanVariant.baseline.isSupported)
        // What the kernel says the CPU has (`flags` in /proc/cpuinfo) agrees with the scan's own look.
        let flags = Set(try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("flags") }.map { $0.split(separator: " ").map(String.init) } ?? [])
        #expect(SignalGuard.ScanVariant.sse41.isSupported == flags.contains("sse4_1"))
        #expect(SignalGuard.ScanVariant.avx2.isSupported == flags.contains("avx2"))
        #else
        #expect(SignalGuard.ScanVariant.chosen == .baseline)
        #endif
    }
}
