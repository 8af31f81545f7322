import Foundation
import JackHost
import Synchronization

/// A JACK client for tests that plays looped signals on its outputs and records its inputs.
///
/// Its process callback only copies between preallocated memory and port buffers. Signals are
/// swapped through atomics; replaced tables are kept alive until the client is gone, so the
/// process thread never reads freed memory.
public final class TestClient: @unchecked Sendable {
    // @unchecked: mutable Swift state is used from the test's thread only; the process thread
    // reaches only `state`, through atomics and memory that lives as long as this object.

    public let client: JackClient
    public let outputs: [JackPort]
    public let inputs: [JackPort]
    private let state: UnsafeMutablePointer<State>
    private var tables: [UnsafeMutablePointer<Table>] = []
    private let recordCapacity: Int
    private var closed = false

    /// - Parameters:
    ///   - activateAfter: seconds between registering the ports and activating (a device's ports
    ///     exist before its client runs).
    ///   - recordingFromFirstCycle: records from the first cycle the client runs.
    public init(name: String, server: String, outputs: [String] = [], inputs: [String] = [],
                recordSeconds: Double = 12, activateAfter: Double = 0, recordingFromFirstCycle: Bool = false) throws {
        let client = try JackClient(name: name, server: server)
        let outputPorts = try outputs.map { try client.registerAudioPort($0, direction: .output) }
        let inputPorts = try inputs.map { try client.registerAudioPort($0, direction: .input) }
        let recordCapacity = Int(recordSeconds * Double(client.sampleRate))
        self.client = client
        self.outputs = outputPorts
        self.inputs = inputPorts
        self.recordCapacity = recordCapacity
        state = .allocate(capacity: 1)
        state.initialize(to: State(client: client.rawHandle,
                                   outputs: outputPorts.map { $0.handle.pointer },
                                   inputs: inputPorts.map { $0.handle.pointer },
                                   recordCapacity: recordCapacity,
                                   maxCycles: recordCapacity / 16 + 1))
        for index in self.outputs.indices { setSignal([0], output: index) }
        try client.setProcessCallback(testClientProcess, argument: UnsafeMutableRawPointer(state))
        if recordingFromFirstCycle { startRecording() }
        if activateAfter > 0 { Thread.sleep(forTimeInterval: activateAfter) }
        try client.activate()
    }

    deinit {
        close()
        state.pointee.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
        for table in tables { table.pointee.samples.deallocate(); table.deallocate() }
    }

    /// Deactivates and closes the client (as if the program were killed); its ports vanish.
    public func close() {
        guard !closed else { return }
        closed = true
        client.close()
    }

    /// Plays `samples` on output `output`, looping, from the next cycle. It continues where the
    /// previous signal was (its position modulo the new length), so a sine swapped for another
    /// keeps its phase; `fromStart` plays it from its first sample instead (a click at sample 0
    /// sounds once, at the start of the next cycle).
    public func setSignal(_ samples: [Float], output: Int, fromStart: Bool = false) {
        let table = UnsafeMutablePointer<Table>.allocate(capacity: 1)
        let storage = UnsafeMutablePointer<Float>.allocate(capacity: max(samples.count, 1))
        storage.initialize(repeating: 0, count: max(samples.count, 1))
        samples.withUnsafeBufferPointer { storage.update(from: $0.baseAddress!, count: $0.count) }
        table.initialize(to: Table(samples: storage, count: max(samples.count, 1), fromStart: fromStart,
                                   serial: UInt32(tables.count + 1)))
        tables.append(table)
        state.pointee.tables[output].store(UInt(bitPattern: table), ordering: .releasing)
    }

    /// The JACK frame time of the cycle in which output `output` began playing the signal last
    /// set on it (nil until it has): where a change took effect, on the clock recordings carry.
    public func signalStartFrame(output: Int) -> UInt32? {
        let started = state.pointee.started[output].load(ordering: .acquiring)
        let current = UnsafeMutablePointer<Table>(bitPattern: state.pointee.tables[output].load(ordering: .acquiring))
        guard let current, started >> 32 == UInt64(current.pointee.serial) else { return nil }
        return UInt32(truncatingIfNeeded: started)
    }

    /// For the next `cycles` cycles, output 0 carries a NaN, a +Inf and a -Inf among its samples.
    public func injectNonFinite(cycles: Int) {
        state.pointee.nonFiniteCycles.store(cycles, ordering: .releasing)
    }

    /// For the next `cycles` cycles, the process callback busy-waits `seconds` before it returns:
    /// a client that overruns its period makes the server count xruns.
    public func overrun(cycles: Int, seconds: Double) {
        state.pointee.overrunNanoseconds.store(Int(seconds * 1e9), ordering: .relaxed)
        state.pointee.overrunCycles.store(cycles, ordering: .releasing)
    }

    /// Starts recording every input from the next cycle (discarding any earlier recording).
    public func startRecording() {
        state.pointee.recording.store(false, ordering: .releasing)
        state.pointee.written.store(0, ordering: .releasing)
        state.pointee.cycleCount.store(0, ordering: .releasing)
        state.pointee.recording.store(true, ordering: .releasing)
    }

    /// The frames recorded so far since `startRecording` (read while it records, to wait on).
    public var recordedFrames: Int { state.pointee.written.load(ordering: .acquiring) }

    /// Stops recording and returns what was recorded.
    public func stopRecording() -> Recording {
        state.pointee.recording.store(false, ordering: .releasing)
        // Let a cycle in progress finish writing.
        Thread.sleep(forTimeInterval: Double(client.bufferSize * 3) / Double(client.sampleRate))
        let frames = min(state.pointee.written.load(ordering: .acquiring), recordCapacity)
        var channels: [[Float]] = []
        for i in inputs.indices {
            channels.append(Array(UnsafeBufferPointer(start: state.pointee.record + i * recordCapacity, count: frames)))
        }
        let cycles = min(state.pointee.cycleCount.load(ordering: .acquiring), state.pointee.maxCycles)
        var starts: [(index: Int, frameTime: UInt32)] = []
        for c in 0..<cycles {
            let index = state.pointee.cycleIndex[c]
            if index < frames { starts.append((index, state.pointee.cycleFrameTime[c])) }
        }
        return Recording(channels: channels, cycleStarts: starts, sampleRate: client.sampleRate)
    }

    /// Records `seconds` of audio and returns the recording: it waits for that many frames to
    /// arrive, not for that much wall time (a server that slows down, as PipeWire may just after
    /// a quantum change on a loaded machine, still yields the whole take). If the frames do not
    /// come within `seconds` × 4 + 5 s it returns what arrived, for the caller to judge.
    public func record(seconds: Double) -> Recording {
        let frames = min(Int(seconds * Double(client.sampleRate)), recordCapacity)
        startRecording()
        Thread.sleep(forTimeInterval: seconds)
        let deadline = Date().addingTimeInterval(seconds * 4 + 5)
        while Date() < deadline {
            let written = state.pointee.written.load(ordering: .acquiring)
            // Full, or as full as whole cycles can make it.
            if written >= frames || written + client.bufferSize > recordCapacity { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return stopRecording()
    }

    public func connect(_ source: String, to destination: String) throws {
        try client.connect(source, to: destination)
    }

    // MARK: Process-thread state

    struct Table {
        var samples: UnsafeMutablePointer<Float>
        var count: Int
        var fromStart: Bool
        /// 1 for the first table set on this client, 2 for the next, … (any output).
        var serial: UInt32
    }

    struct State: ~Copyable {
        let client: UnsafeMutableRawPointer
        let outputCount: Int
        let outputPorts: UnsafeMutablePointer<UnsafeMutableRawPointer>
        let inputCount: Int
        let inputPorts: UnsafeMutablePointer<UnsafeMutableRawPointer>
        let tables: UnsafeMutablePointer<Atomic<UInt>>
        let positions: UnsafeMutablePointer<Int>
        /// The table each output played last cycle (process thread only).
        let playing: UnsafeMutablePointer<UInt>
        /// Per output, the serial of the table it plays (high 32 bits) and the frame time of the
        /// cycle it began in (low 32 bits): one word, so never one table's serial with another's frame.
        let started: UnsafeMutablePointer<Atomic<UInt64>>
        let record: UnsafeMutablePointer<Float>
        let recordCapacity: Int
        let cycleIndex: UnsafeMutablePointer<Int>
        let cycleFrameTime: UnsafeMutablePointer<UInt32>
        let maxCycles: Int
        let written = Atomic<Int>(0)
        let cycleCount = Atomic<Int>(0)
        let recording = Atomic<Bool>(false)
        let nonFiniteCycles = Atomic<Int>(0)
        /// Cycles still to overrun, and by how long each (nanoseconds).
        let overrunCycles = Atomic<Int>(0)
        let overrunNanoseconds = Atomic<Int>(0)

        init(client: UnsafeMutableRawPointer, outputs: [UnsafeMutableRawPointer],
             inputs: [UnsafeMutableRawPointer], recordCapacity: Int, maxCycles: Int) {
            self.client = client
            outputCount = outputs.count
            outputPorts = .allocate(capacity: max(outputs.count, 1))
            for (i, p) in outputs.enumerated() { (outputPorts + i).initialize(to: p) }
            inputCount = inputs.count
            inputPorts = .allocate(capacity: max(inputs.count, 1))
            for (i, p) in inputs.enumerated() { (inputPorts + i).initialize(to: p) }
            tables = .allocate(capacity: max(outputs.count, 1))
            for i in 0..<max(outputs.count, 1) { (tables + i).initialize(to: Atomic<UInt>(0)) }
            positions = .allocate(capacity: max(outputs.count, 1))
            positions.initialize(repeating: 0, count: max(outputs.count, 1))
            playing = .allocate(capacity: max(outputs.count, 1))
            playing.initialize(repeating: 0, count: max(outputs.count, 1))
            started = .allocate(capacity: max(outputs.count, 1))
            for i in 0..<max(outputs.count, 1) { (started + i).initialize(to: Atomic<UInt64>(0)) }
            self.recordCapacity = recordCapacity
            record = .allocate(capacity: max(inputs.count, 1) * recordCapacity)
            record.initialize(repeating: 0, count: max(inputs.count, 1) * recordCapacity)
            self.maxCycles = maxCycles
            cycleIndex = .allocate(capacity: maxCycles)
            cycleIndex.initialize(repeating: 0, count: maxCycles)
            cycleFrameTime = .allocate(capacity: maxCycles)
            cycleFrameTime.initialize(repeating: 0, count: maxCycles)
        }

        func deallocate() {
            outputPorts.deallocate(); inputPorts.deallocate(); tables.deallocate(); positions.deallocate(); playing.deallocate(); started.deallocate()
            record.deallocate(); cycleIndex.deallocate(); cycleFrameTime.deallocate()
        }
    }
}

/// What a `TestClient` recorded: one array per input, and where each JACK cycle began.
public struct Recording: Sendable {
    public var channels: [[Float]]
    /// (sample index in the recording, JACK frame time of that cycle's start).
    public var cycleStarts: [(index: Int, frameTime: UInt32)]
    public var sampleRate: Int

    public init(channels: [[Float]], cycleStarts: [(index: Int, frameTime: UInt32)], sampleRate: Int) {
        self.channels = channels
        self.cycleStarts = cycleStarts
        self.sampleRate = sampleRate
    }

    /// The JACK frame time of sample `index` (its cycle's start plus its place in the cycle):
    /// durations measured with it stay right across cycles the recorder missed.
    public func frameTime(at index: Int) -> UInt32? {
        guard let cycle = cycleStarts.last(where: { $0.index <= index }) else { return nil }
        return cycle.frameTime &+ UInt32(index - cycle.index)
    }

    /// The samples of `channel` whose JACK frame time lies in `start ..< start + frames` (fewer
    /// than `frames` when the recorder missed cycles there or the take did not reach that far).
    public func samples(_ channel: Int, fromFrame start: UInt32, frames: Int) -> [Float] {
        channels[channel].indices.compactMap { index in
            guard let time = frameTime(at: index) else { return nil }
            let offset = Int32(bitPattern: time &- start)
            return offset >= 0 && Int(offset) < frames ? channels[channel][index] : nil
        }
    }

    /// Where JACK frame time `frame` is (or would be) in the recording: the last cycle that began
    /// at or before it, plus the frames after that; before the first cycle, counted back from
    /// it (negative). nil for an empty take.
    public func index(ofFrame frame: UInt32) -> Int? {
        guard let first = cycleStarts.first else { return nil }
        let cycle = cycleStarts.last { Int32(bitPattern: frame &- $0.frameTime) >= 0 } ?? first
        return cycle.index + Int(Int32(bitPattern: frame &- cycle.frameTime))
    }

    /// How many cycles of `period` frames another client missed within this recording: of its
    /// missed stretches (first frame and length, e.g. the router's `recentGaps`), those that reach
    /// into the take, each as many cycles as periods it spans (a part of one counting as one).
    public func cyclesMissed(within stretches: [(firstFrame: UInt32, frames: UInt32)], period: Int) -> Int {
        stretches.filter { gap in
            index(ofFrame: gap.firstFrame).map { $0 + Int(gap.frames) > 0 && $0 < (channels.first?.count ?? 0) } ?? false
        }.reduce(0) { $0 + (Int($1.frames) + period - 1) / period }
    }

    /// The samples a missed cycle may have touched: around each stretch of the frame clock the
    /// recorder missed, and around each one another client missed (`others`: first frame and
    /// length, e.g. the router's `recentGaps`), `margin` samples either side. A stretch both
    /// missed is one the whole graph skipped (PipeWire's driver woke too late and moved its clock
    /// on): each played and heard every sample on either side of it, so it touches nothing. A
    /// measurement that overlaps none of the rest timed the clients, not the machine's load.
    public func touchedByMissedCycles(others: [(firstFrame: UInt32, frames: UInt32)], margin: Int) -> [Range<Int>] {
        let own = missedStretches
        let shared = { (a: (firstFrame: UInt32, frames: UInt32), b: (firstFrame: UInt32, frames: UInt32)) in
            a.firstFrame == b.firstFrame && a.frames == b.frames
        }
        let touched = own.filter { mine in !others.contains { shared(mine, $0) } }
            + others.filter { theirs in !own.contains { shared(theirs, $0) } }
        return touched.compactMap { gap -> Range<Int>? in
            guard let start = index(ofFrame: gap.firstFrame) else { return nil }
            return (start - margin)..<(start + Int(gap.frames) + margin)
        }.filter { $0.upperBound > 0 && $0.lowerBound < (channels.first?.count ?? 0) }
    }

    /// The stretches of the frame clock the recorder missed (between two cycles it ran, the
    /// frames neither covered): first frame and length.
    public var missedStretches: [(firstFrame: UInt32, frames: UInt32)] {
        zip(cycleStarts, cycleStarts.dropFirst()).compactMap { a, b in
            let end = a.frameTime &+ UInt32(b.index - a.index)
            // Later than the end (within half the clock's range, as the engine judges): a clock
            // that went back misses nothing.
            return b.frameTime != end && b.frameTime &- end < 0x8000_0000 ? (end, b.frameTime &- end) : nil
        }
    }

    /// The whole cycles of `channel` that are exact silence amid sound (the samples either side
    /// are not silent): on PipeWire, what a client reads where the graph ran late, with no cycle
    /// missed by the frame clock (PipeWire tells no one).
    public func silentCycles(channel: Int) -> [Range<Int>] {
        let samples = channels[channel]
        let starts = cycleStarts.map(\.index) + [samples.count]
        return zip(starts, starts.dropFirst()).compactMap { start, end in
            guard start > 0, end < samples.count, end > start,
                  samples[start..<end].allSatisfy({ $0 == 0 }), samples[start - 1] != 0, samples[end] != 0
            else { return nil }
            return start..<end
        }
    }

    /// The whole silent cycles of `channel` a late graph explains: `silentCycles` on PipeWire,
    /// none on jackd (whose graph is never late without a missed cycle on the frame clock, so
    /// such a cycle there is always a verdict).
    public func lateGraphCycles(channel: Int) -> [Range<Int>] {
        JackServer.Implementation.current == .pipewire ? silentCycles(channel: channel) : []
    }

    /// Sample indices where a cycle was missed by the recorder (the frame time jumped by more than
    /// the frames recorded); comparisons of neighbouring samples must not span these.
    public var gaps: [Int] {
        var result: [Int] = []
        for (a, b) in zip(cycleStarts, cycleStarts.dropFirst()) {
            if b.frameTime &- a.frameTime != UInt32(b.index - a.index) { result.append(b.index) }
        }
        return result
    }
}

private let testClientProcess: JackClient.ProcessCallback = { frames, argument in
    let state = argument!.assumingMemoryBound(to: TestClient.State.self)
    let n = Int(frames)
    if state.pointee.overrunCycles.load(ordering: .acquiring) > 0 {
        _ = state.pointee.overrunCycles.subtract(1, ordering: .acquiringAndReleasing)
        busyWait(nanoseconds: state.pointee.overrunNanoseconds.load(ordering: .relaxed))
    }
    for o in 0..<state.pointee.outputCount {
        guard let raw = JackClient.portBuffer(state.pointee.outputPorts[o], frames) else { continue }
        let out = raw.assumingMemoryBound(to: Float.self)
        let bits = state.pointee.tables[o].load(ordering: .acquiring)
        if let table = UnsafeMutablePointer<TestClient.Table>(bitPattern: bits) {
            if state.pointee.playing[o] != bits {
                state.pointee.playing[o] = bits
                let frame = JackClient.cycleStartFrame(state.pointee.client)
                state.pointee.started[o].store(UInt64(table.pointee.serial) << 32 | UInt64(frame), ordering: .releasing)
                if table.pointee.fromStart { state.pointee.positions[o] = 0 }
            }
            var position = state.pointee.positions[o] % table.pointee.count
            for i in 0..<n {
                out[i] = table.pointee.samples[position]
                position += 1
                if position == table.pointee.count { position = 0 }
            }
            state.pointee.positions[o] = position
        } else {
            out.update(repeating: 0, count: n)
        }
        if o == 0, state.pointee.nonFiniteCycles.load(ordering: .acquiring) > 0 {
            out[n / 4] = .nan
            out[n / 2] = .infinity
            out[3 * n / 4] = -.infinity
            _ = state.pointee.nonFiniteCycles.subtract(1, ordering: .acquiringAndReleasing)
        }
    }
    if state.pointee.recording.load(ordering: .acquiring) {
        let start = state.pointee.written.load(ordering: .relaxed)
        let capacity = state.pointee.recordCapacity
        if start + n <= capacity {
            for i in 0..<state.pointee.inputCount {
                if let raw = JackClient.portBuffer(state.pointee.inputPorts[i], frames) {
                    (state.pointee.record + i * capacity + start)
                        .update(from: raw.assumingMemoryBound(to: Float.self), count: n)
                }
            }
            let cycle = state.pointee.cycleCount.load(ordering: .relaxed)
            if cycle < state.pointee.maxCycles {
                state.pointee.cycleIndex[cycle] = start
                state.pointee.cycleFrameTime[cycle] = JackClient.cycleStartFrame(state.pointee.client)
                state.pointee.cycleCount.store(cycle + 1, ordering: .releasing)
            }
            state.pointee.written.store(start + n, ordering: .releasing)
        }
    }
    return 0
}

/// Spins for `nanoseconds` on the monotonic clock (the process thread of a client made to overrun).
private func busyWait(nanoseconds: Int) {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let end = now.tv_sec * 1_000_000_000 + now.tv_nsec + nanoseconds
    repeat {
        clock_gettime(CLOCK_MONOTONIC, &now)
    } while now.tv_sec * 1_000_000_000 + now.tv_nsec < end
}
