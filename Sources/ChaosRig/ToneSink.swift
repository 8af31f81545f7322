import Foundation
import JackHost
import Synchronization

/// A route's device in the chaos run: a JACK client with inputs that keeps the last few seconds
/// of what it hears in a ring, and looks at every sample as it comes for what must never reach a
/// listener: a non-finite sample, or a step from one sample to the next larger than the tones and
/// the ramps can make (a click).
///
/// Its process callback only copies into memory made in advance and writes fixed-size records;
/// the harness reads windows of the ring and the records from its own thread. A window is taken
/// only over cycles the sink heard one after the other (JACK's frame clock says so), so a cycle it
/// missed never passes for sound.
public final class ToneSink: @unchecked Sendable {
    // @unchecked: the Swift state is the harness thread's; the process thread reaches only
    // `state`, through atomics and memory that lives as long as this object.

    /// Something the watch saw, on the sink's clock and the machine's monotonic clock.
    public struct Event: Sendable, CustomStringConvertible {
        /// `isolatedSilence`: one whole cycle of exact silence between cycles of sound, at
        /// `frameTime`, of `size` frames (PipeWire's late graph gives a client such a cycle and
        /// tells no one; on jackd it means something cut the sound). `repeatedCycle`: a cycle of
        /// sound exactly the same as the one before it (a buffer played twice: PipeWire's late
        /// graph again, or a client that did not run).
        public enum Kind: Int32, Sendable { case step = 0, nonFinite = 1, gap = 2, isolatedSilence = 3, repeatedCycle = 4 }
        public var kind: Kind
        /// `CLOCK_MONOTONIC` nanoseconds at the start of the cycle it was seen in.
        public var monotonicNanoseconds: UInt64
        public var frameTime: UInt32
        public var channel: Int
        /// The step's size (`step`), the frames the clock skipped (`gap`), or the silent or
        /// repeated cycle's frames (`isolatedSilence`, `repeatedCycle`).
        public var size: Float
        /// For a gap: the frames of the cycle it was seen in, and how far the clock moved from
        /// the cycle before (to tell a missed cycle from a clock that steps by another amount
        /// than the period).
        public var cycleFrames: UInt32 = 0
        public var clockStep: UInt32 = 0
        /// For a step: the sample of its cycle it came at (0: across the cycles' seam).
        public var offset: UInt32 = 0

        public init(kind: Kind, monotonicNanoseconds: UInt64, frameTime: UInt32, channel: Int, size: Float,
                    cycleFrames: UInt32 = 0, clockStep: UInt32 = 0, offset: UInt32 = 0) {
            self.kind = kind
            self.monotonicNanoseconds = monotonicNanoseconds
            self.frameTime = frameTime
            self.channel = channel
            self.size = size
            self.cycleFrames = cycleFrames
            self.clockStep = clockStep
            self.offset = offset
        }

        public var description: String {
            switch kind {
            case .step: "a step of \(size) on channel \(channel + 1) at frame \(frameTime) + \(offset)"
            case .nonFinite: "a non-finite sample on channel \(channel + 1) at frame \(frameTime)"
            case .gap: "\(Int(size)) frames the sink did not hear before frame \(frameTime) (a cycle of \(cycleFrames), the clock moved \(clockStep))"
            case .isolatedSilence: "a whole cycle of silence on channel \(channel + 1) at frame \(frameTime)"
            case .repeatedCycle: "a cycle played twice on channel \(channel + 1) at frame \(frameTime)"
            }
        }
    }

    /// The last `frames` of every channel, heard without a gap.
    public struct Window: Sendable {
        public var channels: [[Float]]
        public var sampleRate: Int
        /// `CLOCK_MONOTONIC` nanoseconds at the start of the sink's last cycle, and no later
        /// than the window's first sample (the sink's last cycle less the window, less a period).
        public var endNanoseconds: UInt64
        public var startNanoseconds: UInt64
    }

    public let name: String
    public let client: JackClient
    public let ports: [JackPort]
    private let state: UnsafeMutablePointer<State>
    private var eventsRead = 0
    private var closed = false

    /// - Parameters:
    ///   - stepLimit: the largest step from one sample to the next that is not reported.
    public init(name: String, server: String, inputs: [String], stepLimit: Float, seconds: Double = 4) throws {
        let client = try JackClient(name: name, server: server)
        let ports = try inputs.map { try client.registerAudioPort($0, direction: .input) }
        self.name = name
        self.client = client
        self.ports = ports
        let capacity = Int(seconds * Double(client.sampleRate))
        state = .allocate(capacity: 1)
        state.initialize(to: State(client: client.rawHandle, inputs: ports.map { $0.handle.pointer }, capacity: capacity,
                                   stepLimit: stepLimit))
        try client.setProcessCallback(toneSinkProcess, argument: UnsafeMutableRawPointer(state))
        try client.activate()
    }

    deinit {
        close()
        state.pointee.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Closes the client: its ports vanish, as a device's do when it is unplugged.
    public func close() {
        guard !closed else { return }
        closed = true
        client.close()
    }

    /// Frames heard since the start.
    public var framesHeard: Int { state.pointee.written.load(ordering: .acquiring) }

    /// The last `seconds` of every channel, or nil when the sink has not heard that much without
    /// a gap since its last missed cycle.
    public func window(seconds: Double) -> Window? {
        let frames = Int(seconds * Double(client.sampleRate))
        let capacity = state.pointee.capacity
        guard frames > 0, frames <= capacity / 2 else { return nil }
        var end = state.pointee.written.load(ordering: .acquiring)
        // A cycle whose clock read early may yet turn out to follow a missed one: not in a window
        // until the next cycle says.
        let suspect = state.pointee.suspectAt.load(ordering: .acquiring)
        if suspect >= 0 { end = min(end, suspect) }
        let start = end - frames
        guard start >= 0, state.pointee.contiguousSince.load(ordering: .acquiring) <= start else { return nil }
        var channels: [[Float]] = []
        for c in 0..<state.pointee.inputCount {
            let base = state.pointee.ring + c * capacity
            channels.append((0..<frames).map { base[(start + $0) % capacity] })
        }
        // Written over meanwhile (the harness thread was held up for seconds): no window.
        guard state.pointee.written.load(ordering: .acquiring) - start <= capacity else { return nil }
        let last = state.pointee.lastCycleNanoseconds.load(ordering: .acquiring)
        let span = UInt64(Double(frames + 2 * client.bufferSize) / Double(client.sampleRate) * 1e9)
        return Window(channels: channels, sampleRate: client.sampleRate, endNanoseconds: last,
                      startNanoseconds: last > span ? last - span : 0)
    }

    /// Every event since the last call (the oldest are lost when more than the ring's 1,024 came
    /// between two calls; `lostEvents` counts them).
    public func takeEvents() -> [Event] {
        let written = state.pointee.eventsWritten.load(ordering: .acquiring)
        var events: [Event] = []
        let first = max(eventsRead, written - State.eventCapacity)
        lostEvents += first - eventsRead
        for index in first..<written {
            let record = state.pointee.events[index % State.eventCapacity]
            events.append(Event(kind: Event.Kind(rawValue: record.kind) ?? .step, monotonicNanoseconds: record.nanoseconds,
                                frameTime: record.frameTime, channel: Int(record.channel), size: record.size,
                                cycleFrames: record.cycleFrames, clockStep: record.clockStep, offset: record.offset))
        }
        eventsRead = written
        return events
    }

    /// Events lost to a full ring (see `takeEvents`).
    public private(set) var lostEvents = 0

    struct Record {
        var kind: Int32 = 0
        var channel: Int32 = 0
        var frameTime: UInt32 = 0
        var size: Float = 0
        var nanoseconds: UInt64 = 0
        var cycleFrames: UInt32 = 0
        var clockStep: UInt32 = 0
        var offset: UInt32 = 0
    }

    struct State: ~Copyable {
        static let eventCapacity = 1024
        let client: UnsafeMutableRawPointer
        let inputCount: Int
        let inputPorts: UnsafeMutablePointer<UnsafeMutableRawPointer>
        let capacity: Int
        let ring: UnsafeMutablePointer<Float>
        let stepLimit: Float
        /// Per channel: the last sample heard, and how many cycles of exact zeros came last.
        let last: UnsafeMutablePointer<Float>
        let silentRun: UnsafeMutablePointer<Int>
        /// The frame time the next cycle starts at if none is missed, and where the last one
        /// started (process thread only).
        var nextFrame: UInt32 = 0
        var lastFrame: UInt32 = 0
        var lastCycleFrames = 0
        var heardAny = false
        /// A cycle whose frame time came one period early: JACK2's `jack_last_frame_time` reads
        /// the next cycle's time when a client runs late, and the cycle after then reads the same
        /// again. Only that next cycle tells such a reading from a cycle missed: a repeat is
        /// the clock, anything else a gap that began at `suspectStart` (process thread only).
        var suspectFrame: UInt32?
        var suspectStart = 0
        var suspectFrames: UInt32 = 0
        let events: UnsafeMutablePointer<Record>
        let eventsWritten = Atomic<Int>(0)
        let written = Atomic<Int>(0)
        /// The first frame (in `written`'s count) after the last gap.
        let contiguousSince = Atomic<Int>(0)
        /// Where the cycle whose frame time read early began (`written`'s count), -1 when none
        /// waits for the next cycle to tell.
        let suspectAt = Atomic<Int>(-1)
        let lastCycleNanoseconds = Atomic<UInt64>(0)

        init(client: UnsafeMutableRawPointer, inputs: [UnsafeMutableRawPointer], capacity: Int, stepLimit: Float) {
            self.client = client
            inputCount = inputs.count
            inputPorts = .allocate(capacity: max(inputs.count, 1))
            for (i, p) in inputs.enumerated() { (inputPorts + i).initialize(to: p) }
            self.capacity = capacity
            ring = .allocate(capacity: max(inputs.count, 1) * capacity)
            ring.initialize(repeating: 0, count: max(inputs.count, 1) * capacity)
            self.stepLimit = stepLimit
            last = .allocate(capacity: max(inputs.count, 1))
            last.initialize(repeating: 0, count: max(inputs.count, 1))
            silentRun = .allocate(capacity: max(inputs.count, 1))
            silentRun.initialize(repeating: 2, count: max(inputs.count, 1))

            events = .allocate(capacity: Self.eventCapacity)
            events.initialize(repeating: Record(), count: Self.eventCapacity)
        }

        func record(_ kind: Int32, channel: Int, size: Float, frame: UInt32, nanoseconds: UInt64,
                    cycleFrames: UInt32 = 0, clockStep: UInt32 = 0, offset: UInt32 = 0) {
            let index = eventsWritten.load(ordering: .relaxed)
            events[index % Self.eventCapacity] = Record(kind: kind, channel: Int32(channel), frameTime: frame,
                                                         size: size, nanoseconds: nanoseconds, cycleFrames: cycleFrames,
                                                         clockStep: clockStep, offset: offset)
            eventsWritten.store(index + 1, ordering: .releasing)
        }

        func deallocate() {
            inputPorts.deallocate(); ring.deallocate(); last.deallocate(); silentRun.deallocate(); events.deallocate()
        }
    }
}

private let toneSinkProcess: JackClient.ProcessCallback = { frames, argument in
    let state = argument!.assumingMemoryBound(to: ToneSink.State.self)
    let n = Int(frames)
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let nanoseconds = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    let frame = JackClient.cycleStartFrame(state.pointee.client)
    let start = state.pointee.written.load(ordering: .relaxed)
    // A cycle the sink did not hear: nothing either side of it is compared, and windows begin
    // after it. A frame time one period early is a suspect until the next cycle (`suspectFrame`).
    var joined = false
    var compareAcross = true
    if state.pointee.heardAny {
        let expected = state.pointee.nextFrame
        if let suspect = state.pointee.suspectFrame {
            state.pointee.suspectFrame = nil
            state.pointee.suspectAt.store(-1, ordering: .releasing)
            if frame == suspect {
                joined = true   // the clock read early last cycle; no cycle was missed
            } else if frame == expected {
                // The suspect cycle was where its clock said: the one before it was missed.
                state.pointee.record(2, channel: 0, size: Float(state.pointee.suspectFrames), frame: suspect, nanoseconds: nanoseconds,
                                     cycleFrames: frames, clockStep: frame &- state.pointee.lastFrame)
                state.pointee.contiguousSince.store(state.pointee.suspectStart, ordering: .releasing)
                joined = true
            }
        } else if frame == expected {
            joined = true
        } else if frame == expected &+ state.pointee.nextFrame &- state.pointee.lastFrame {
            state.pointee.suspectFrame = frame
            state.pointee.suspectStart = start
            state.pointee.suspectAt.store(start, ordering: .releasing)
            state.pointee.suspectFrames = frame &- expected
            joined = true
            compareAcross = false
        }
        if !joined {
            state.pointee.record(2, channel: 0, size: Float(frame &- expected), frame: frame, nanoseconds: nanoseconds,
                                 cycleFrames: frames, clockStep: frame &- state.pointee.lastFrame)
        }
    }
    if !joined { state.pointee.contiguousSince.store(start, ordering: .releasing) }
    let capacity = state.pointee.capacity
    let limit = state.pointee.stepLimit
    for c in 0..<state.pointee.inputCount {
        let ring = state.pointee.ring + c * capacity
        guard let raw = JackClient.portBuffer(state.pointee.inputPorts[c], frames) else {
            // No buffer: heard as silence, in the ring and in what the next cycle is compared with.
            for i in 0..<n { ring[(start + i) % capacity] = 0 }
            state.pointee.last[c] = 0
            state.pointee.silentRun[c] += 1
            continue
        }
        let input = raw.assumingMemoryBound(to: Float.self)
        var silent = true
        // The step across the seam from the last cycle (sample 0) and the largest within this
        // one are reported apart: a seam a late graph explains hides no click within the cycle.
        var seamStep: Float = 0
        var largest: Float = 0
        var largestAt = 0
        var previous = joined && compareAcross ? state.pointee.last[c] : input[0]
        var nonFinite = false
        // The same as the cycle before, sample for sample (only a cycle of the same length that
        // followed it without a gap can be).
        var repeated = joined && compareAcross && state.pointee.lastCycleFrames == n && start >= n
        for i in 0..<n {
            let x = input[i]
            if !x.isFinite { nonFinite = true; ring[(start + i) % capacity] = 0; continue }
            if x != 0 { silent = false }
            let step = abs(x - previous)
            if i == 0 { seamStep = step } else if step > largest { largest = step; largestAt = i }
            previous = x
            if repeated && ring[(start - n + i) % capacity] != x { repeated = false }
            ring[(start + i) % capacity] = x
        }
        if repeated && !silent {
            state.pointee.record(4, channel: c, size: Float(n), frame: frame, nanoseconds: nanoseconds)
        }
        if nonFinite {
            state.pointee.record(1, channel: c, size: 0, frame: frame, nanoseconds: nanoseconds)
        }
        if seamStep > limit {
            state.pointee.record(0, channel: c, size: seamStep, frame: frame, nanoseconds: nanoseconds)
        }
        if largest > limit {
            state.pointee.record(0, channel: c, size: largest, frame: frame, nanoseconds: nanoseconds, offset: UInt32(largestAt))
        }
        if !joined {
            // What came before a gap is not known: a silent cycle after one is not isolated.
            state.pointee.silentRun[c] = silent ? 2 : 0
        } else if silent {
            state.pointee.silentRun[c] += 1
        } else {
            // Sound again after exactly one silent cycle that came after a cycle of sound.
            if state.pointee.silentRun[c] == 1 {
                state.pointee.record(3, channel: c, size: Float(frame &- state.pointee.lastFrame), frame: state.pointee.lastFrame,
                                     nanoseconds: nanoseconds)
            }
            state.pointee.silentRun[c] = 0
        }
        state.pointee.last[c] = previous
    }
    state.pointee.lastFrame = frame
    state.pointee.lastCycleFrames = n
    state.pointee.nextFrame = frame &+ frames
    state.pointee.heardAny = true
    state.pointee.lastCycleNanoseconds.store(nanoseconds, ordering: .relaxed)
    state.pointee.written.store(start + n, ordering: .releasing)
    return 0
}
