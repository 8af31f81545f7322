import CFloatEnvironment
import CWake
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Everything the process thread touches, in one block of unmanaged memory.
///
/// Ownership: allocated and initialised by `Engine.init` on the control thread, reached from the
/// process callback through the raw pointer registered with JACK, and destroyed by `Engine.deinit`
/// only after the JACK client has been deactivated (so no process cycle can be running). Fields
/// marked "audio thread" are read and written by the process thread only; the rings and atomics are
/// the only things both threads touch.
struct EngineCore: ~Copyable {
    /// Fetches the sample buffer of a port for this cycle (JACK's `jack_port_get_buffer`).
    let portBuffer: PortBufferFunction

    let inbox: SPSCRing          // control → audio: new plans
    let outbox: SPSCRing         // audio → control: retired plans
    let meterFree: SPSCRing      // control → audio: zeroed meter blocks
    let meterFull: SPSCRing      // audio → control: filled meter blocks
    let timings: SPSCRing        // audio → control: each cycle's own time, ns
    let levels: SPSCRing         // audio → control: per-cycle watch peaks (frames:16 watch:16 peak:32)
    let gaps: SPSCRing           // audio → control: stretches of the frame clock missed (frames:32 first frame:32)
    let watchPeaks: UnsafeMutablePointer<Float>   // audio thread: this cycle's peak per watch
    /// control → audio: per watch, the peak (a Float's bits) that wakes the control side while
    /// `levelsAsleep`; 0 until set (any sound wakes: a level forgotten costs CPU, never a wake).
    /// Published to the audio thread by the release store of `levelsAsleep`.
    let watchWakeLevels: UnsafeMutablePointer<Atomic<UInt32>>
    /// The control side sleeps: no level is reported until a watch's peak reaches its wake level,
    /// and then the audio thread clears this and signals `levelWake` (once per sleep).
    let levelsAsleep = Atomic<Bool>(false)
    /// The eventfd the control side watches (CWake); -1 when none could be made (then the control
    /// side never sleeps).
    let levelWake: Int32
    let tapBlocked: UnsafeMutablePointer<Bool>    // audio thread: per tap group, this span goes to none of its taps

    let gains: UnsafeMutablePointer<GainState>
    /// Volume stages by meter slot (audio thread): apps' volumes on inputs, routes' on outputs.
    let inputVolumes: UnsafeMutablePointer<VolumeState>
    let outputVolumes: UnsafeMutablePointer<VolumeState>
    let inputBuffers: UnsafeMutablePointer<UnsafePointer<Float>>
    /// What look-ahead outputs mix: each input as it was `lookaheadFrames` ago (or the input
    /// itself, when it has no delay line).
    let delayedInputBuffers: UnsafeMutablePointer<UnsafePointer<Float>>
    let scratch: UnsafeMutablePointer<Float>      // sanitiseScratchBuffers × maxFrames
    let silence: UnsafeMutablePointer<Float>      // maxFrames zeros, never written after setup
    let configuration: Engine.Configuration

    /// The frame clock (JACK's `jack_last_frame_time`) and its argument; nil: count processed frames.
    var frameClock: FrameClockFunction?
    var frameClockArgument: UnsafeMutableRawPointer?
    /// Where the last cycle on the frame clock ended (audio thread), if one ran since the clock was set.
    var lastCycleEnd: UInt32?

    var plan: UnsafeMutablePointer<MixPlan>?      // audio thread
    var meter: UnsafeMutablePointer<MeterBlock>?  // audio thread
    /// control → audio: sum the squares of every metered channel (RMS meters), read once at each
    /// cycle's start. Off unless someone shows RMS: an idle router pays nothing for it.
    let measuresRMS = Atomic<Bool>(false)
    /// Whether this cycle sums squares (audio thread: `measuresRMS` as the cycle began).
    var measuringRMS = false

    let processedFrames = Atomic<UInt64>(0)
    let cycles = Atomic<UInt64>(0)
    /// When the latest cycle began, in ns of the monotonic clock (`Engine.monotonicNow`); 0
    /// before the first. Stored before `cycles` counts that cycle.
    let lastCycleStart = Atomic<UInt64>(0)
    let adoptedGeneration = Atomic<UInt64>(0)
    let nonFiniteInputBuffers = Atomic<UInt64>(0)
    let nonFiniteOutputBuffers = Atomic<UInt64>(0)
    let oversizedCycles = Atomic<UInt64>(0)
    /// Cycles the frame clock moved past without running this engine (a cycle began further on
    /// than the last one ended): xruns, whether or not the server reports them (PipeWire 0.3.65
    /// reports none to JACK clients).
    let missedCycles = Atomic<UInt64>(0)
    /// Spans not written to the loudness taps because one of them was full.
    let droppedTapSpans = Atomic<UInt64>(0)
    /// Cycle times lost because the control thread did not empty `timings` in time.
    let timingsDropped = Atomic<UInt64>(0)
    let levelsDropped = Atomic<UInt64>(0)

    init(configuration: Engine.Configuration, portBuffer: @escaping PortBufferFunction) {
        self.configuration = configuration
        self.portBuffer = portBuffer
        inbox = SPSCRing(minimumCapacity: configuration.planQueueCapacity)
        // One more than the inbox can hold plus the plan in use, so retiring never finds it full.
        outbox = SPSCRing(minimumCapacity: configuration.planQueueCapacity * 2 + 2)
        meterFree = SPSCRing(minimumCapacity: configuration.meterBlocks)
        meterFull = SPSCRing(minimumCapacity: configuration.meterBlocks)
        timings = SPSCRing(minimumCapacity: configuration.timingRingCapacity)
        levels = SPSCRing(minimumCapacity: configuration.levelRingCapacity)
        // Drained at every housekeeping tick, a second apart when the router is idle: room for a
        // gap every cycle of that long at 16 frames and 48 kHz (3,000).
        gaps = SPSCRing(minimumCapacity: 4096)
        watchWakeLevels = .allocate(capacity: max(configuration.maxLevelWatches, 1))
        for w in 0..<max(configuration.maxLevelWatches, 1) { (watchWakeLevels + w).initialize(to: Atomic(Float(0).bitPattern)) }
        levelWake = CWake_make()
        watchPeaks = .allocate(capacity: max(configuration.maxLevelWatches, 1))
        watchPeaks.initialize(repeating: -1, count: max(configuration.maxLevelWatches, 1))
        tapBlocked = .allocate(capacity: max(configuration.maxTapGroups, 1))
        tapBlocked.initialize(repeating: false, count: max(configuration.maxTapGroups, 1))
        gains = .allocate(capacity: configuration.gainSlotCapacity)
        gains.initialize(repeating: GainState(), count: configuration.gainSlotCapacity)
        inputVolumes = .allocate(capacity: configuration.maxInputChannels)
        inputVolumes.initialize(repeating: .unity, count: configuration.maxInputChannels)
        outputVolumes = .allocate(capacity: configuration.maxOutputChannels)
        outputVolumes.initialize(repeating: .unity, count: configuration.maxOutputChannels)
        inputBuffers = .allocate(capacity: configuration.maxInputChannels)
        scratch = .allocate(capacity: configuration.sanitiseScratchBuffers * configuration.maxFrames)
        scratch.initialize(repeating: 0, count: configuration.sanitiseScratchBuffers * configuration.maxFrames)
        silence = .allocate(capacity: configuration.maxFrames)
        silence.initialize(repeating: 0, count: configuration.maxFrames)
        inputBuffers.initialize(repeating: UnsafePointer(silence), count: configuration.maxInputChannels)
        delayedInputBuffers = .allocate(capacity: configuration.maxInputChannels)
        delayedInputBuffers.initialize(repeating: UnsafePointer(silence), count: configuration.maxInputChannels)
    }

    func deallocateStorage() {
        inbox.deallocate(); outbox.deallocate(); meterFree.deallocate(); meterFull.deallocate(); timings.deallocate()
        levels.deallocate(); gaps.deallocate(); watchPeaks.deallocate(); tapBlocked.deallocate()
        watchWakeLevels.deinitialize(count: max(configuration.maxLevelWatches, 1)); watchWakeLevels.deallocate()
        if levelWake >= 0 { close(levelWake) }
        gains.deallocate(); inputVolumes.deallocate(); outputVolumes.deallocate(); inputBuffers.deallocate(); delayedInputBuffers.deallocate(); scratch.deallocate(); silence.deallocate()
    }
}

/// `jack_last_frame_time`'s shape: the frame time at the start of the current cycle.
public typealias FrameClockFunction = @convention(c) (UnsafeMutableRawPointer?) -> UInt32

/// `jack_port_get_buffer`'s shape, so the engine can fetch buffers without importing JACK.
public typealias PortBufferFunction = @convention(c) (UnsafeMutableRawPointer?, UInt32) -> UnsafeMutableRawPointer?

/// The process callback to register with JACK; its argument is `Engine.processArgument`.
public let engineProcessCallback: @convention(c) (UInt32, UnsafeMutableRawPointer?) -> Int32 = { frames, argument in
    guard let argument else { return 0 }
    engineProcess(argument.assumingMemoryBound(to: EngineCore.self), frames: Int(frames))
    return 0
}

/// The monotonic clock in ns (vDSO: no system call, no lock).
@_noLocks
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    _ = _unsafePerformance { clock_gettime(CLOCK_MONOTONIC, &now) }
    return UInt64(truncatingIfNeeded: now.tv_sec) &* 1_000_000_000 &+ UInt64(truncatingIfNeeded: now.tv_nsec)
}

/// One process cycle, timed: its own duration goes into the `timings` ring for the control thread
/// (a full ring only counts the loss). Real-time: no allocation, no locks, no retain/release, no I/O.
///
/// Subnormal floats are flushed to zero on this thread first (x86 MXCSR FTZ and DAZ, AArch64
/// FPCR.FZ): an input decaying towards silence would otherwise put every multiply of the mix on
/// the floating-point unit's slow path. JACK runs every cycle on its one process thread, so after
/// the first cycle this is a register read and a compare; nothing is restored, the thread is ours.
@_noLocks
func engineProcess(_ core: UnsafeMutablePointer<EngineCore>, frames: Int) {
    _unsafePerformance { CFloatEnvironment_flush_denormals() }
    let start = monotonicNanoseconds()
    core.pointee.lastCycleStart.store(start, ordering: .relaxed)
    engineProcessCycle(core, frames: frames)
    let elapsed = monotonicNanoseconds() &- start
    if !core.pointee.timings.push(UInt(truncatingIfNeeded: elapsed)) {
        _ = core.pointee.timingsDropped.add(1, ordering: .relaxed)
    }
}

/// The work of one cycle.
///
/// A plan scheduled for a frame inside this cycle splits it: the frames before it are mixed with
/// the old plan, the rest with the new one, so a scheduled change lands on its exact sample.
@_noLocks
private func engineProcessCycle(_ core: UnsafeMutablePointer<EngineCore>, frames: Int) {
    let cycleStart: UInt32
    if let clock = core.pointee.frameClock {
        let argument = core.pointee.frameClockArgument
        cycleStart = _unsafePerformance { clock(argument) }
        // A later start than the last cycle's end (within half the clock's range: not an older
        // one) means cycles went by without this engine: as many as periods fit in the gap, a
        // part of one counting as one (a gap of many periods is many cycles missed, not one).
        if let end = core.pointee.lastCycleEnd, cycleStart != end, cycleStart &- end < 0x8000_0000, frames > 0 {
            let gap = Int(cycleStart &- end)
            _ = core.pointee.missedCycles.add(UInt64((gap + frames - 1) / frames), ordering: .relaxed)
            // Where, for those who must know what the gap touched (a full ring drops it: the
            // count above is still right).
            _ = core.pointee.gaps.push(UInt(truncatingIfNeeded: gap) << 32 | UInt(end))
        }
        core.pointee.lastCycleEnd = cycleStart &+ UInt32(truncatingIfNeeded: frames)
    } else {
        cycleStart = UInt32(truncatingIfNeeded: core.pointee.processedFrames.load(ordering: .relaxed))
    }
    if frames > core.pointee.configuration.maxFrames {
        // JACK never exceeds 8192 frames; if it ever did, silence beats reading past the scratch.
        _ = adoptNewPlans(core, at: cycleStart &+ UInt32(truncatingIfNeeded: frames), remaining: 0)
        if let plan = core.pointee.plan { silenceOutputs(core, plan: plan, frames: frames) }
        _ = core.pointee.oversizedCycles.add(1, ordering: .relaxed)
        // Still a cycle: the control side's watchdog counts them to tell a running server.
        _ = core.pointee.cycles.add(1, ordering: .releasing)
        return
    }
    takeMeterBlockIfNeeded(core)
    core.pointee.measuringRMS = core.pointee.meter != nil && core.pointee.measuresRMS.load(ordering: .relaxed)
    var done = 0
    while done < frames {
        let span = adoptNewPlans(core, at: cycleStart &+ UInt32(truncatingIfNeeded: done), remaining: frames - done)
        if let plan = core.pointee.plan {
            let tapping = plan.pointee.tapCount > 0
            if tapping { findFullTapGroups(core, plan: plan, frames: span) }
            readInputs(core, plan: plan, offset: done, frames: span, tapping: tapping)
            mixOutputs(core, plan: plan, offset: done, frames: span, tapping: tapping)
            advanceVolumes(core, plan: plan, frames: span)
        }
        done &+= span
    }
    finishCycle(core, frames: frames)
}

/// Takes every plan the control thread has queued that is due at frame `now`, applying each one's
/// resets and targets in order, and hands each replaced plan back. Returns how many of the
/// `remaining` frames to mix before the next scheduled plan is due (all of them when none is).
/// A plan is taken only while the outbox has room for the one it replaces, so nothing is ever
/// dropped or freed here.
@_noLocks
private func adoptNewPlans(_ core: UnsafeMutablePointer<EngineCore>, at now: UInt32, remaining: Int) -> Int {
    while core.pointee.outbox.hasRoom(), let bits = core.pointee.inbox.peek() {
        let next = UnsafeMutablePointer<MixPlan>(bitPattern: bits)!
        if next.pointee.isScheduled {
            // Frame times wrap at 2^32; the signed distance says which side of `now` it is on.
            let wait = Int(Int32(bitPattern: next.pointee.startFrame &- now))
            if wait > 0 { return min(wait, remaining) }
        }
        _ = core.pointee.inbox.pop()
        if let old = core.pointee.plan {
            _ = core.pointee.outbox.push(UInt(bitPattern: old))
        }
        core.pointee.plan = next
        let gains = core.pointee.gains
        var r = 0
        while r < next.pointee.resetCount {
            gains[Int(next.pointee.resets[r])] = GainState(current: 0, target: 0, step: 0, remaining: 0)
            r &+= 1
        }
        var c = 0
        while c < next.pointee.contributionCount {
            let contribution = next.pointee.contributions[c]
            gains[Int(contribution.gainSlot)].retarget(contribution.target, frames: contribution.rampFrames)
            c &+= 1
        }
        // Nothing from before this plan: delay lines that start (or restart) here begin silent,
        // and peaks of watches that left (or moved to other inputs) are dropped, not reported
        // by a later plan.
        var d = 0
        while d < next.pointee.delayResetCount {
            DelayLine.reset(next.pointee.delayResets[d])
            d &+= 1
        }
        var w = 0
        while w < next.pointee.watchClearCount {
            core.pointee.watchPeaks[Int(next.pointee.watchClears[w])] = -1
            w &+= 1
        }
        var v = 0
        while v < next.pointee.volumeCount {
            let volume = next.pointee.volumes[v]
            v &+= 1
            guard let target = volume.target else { continue }
            let stage = volume.isOutput ? core.pointee.outputVolumes + Int(volume.slot) : core.pointee.inputVolumes + Int(volume.slot)
            if volume.reset {
                stage.pointee = VolumeState(steady: VolumeState.clamped(target.gain), serial: target.serial)
            } else {
                stage.pointee.follow(target)
            }
        }
        core.pointee.adoptedGeneration.store(next.pointee.generation, ordering: .releasing)
    }
    return remaining
}

/// Marks the tap groups of `plan` whose taps cannot all take `frames` more samples: such a group
/// gets this span in none of its taps (counted), the others in all of theirs, so the channels of
/// one app or route stay aligned and a late reader of one holds up no other.
@_noLocks
private func findFullTapGroups(_ core: UnsafeMutablePointer<EngineCore>, plan: UnsafeMutablePointer<MixPlan>, frames: Int) {
    let blocked = core.pointee.tapBlocked
    var i = 0
    while i < plan.pointee.inputCount {
        let input = plan.pointee.inputs[i]
        if input.tap != nil { blocked[Int(input.tapGroup)] = false }
        i &+= 1
    }
    var o = 0
    while o < plan.pointee.outputCount {
        let output = plan.pointee.outputs[o]
        if output.tap != nil { blocked[Int(output.tapGroup)] = false }
        o &+= 1
    }
    i = 0
    while i < plan.pointee.inputCount {
        markIfFull(core, plan.pointee.inputs[i].tap, group: plan.pointee.inputs[i].tapGroup, frames: frames)
        i &+= 1
    }
    o = 0
    while o < plan.pointee.outputCount {
        markIfFull(core, plan.pointee.outputs[o].tap, group: plan.pointee.outputs[o].tapGroup, frames: frames)
        o &+= 1
    }
}

/// Blocks `group` for this span (once, counted) when `tap` cannot take `frames` more samples.
@_noLocks @inline(__always)
private func markIfFull(_ core: UnsafeMutablePointer<EngineCore>, _ tap: UnsafeMutablePointer<TapRing>?, group: Int32, frames: Int) {
    guard let tap, TapRing.room(tap) < frames, !core.pointee.tapBlocked[Int(group)] else { return }
    core.pointee.tapBlocked[Int(group)] = true
    _ = core.pointee.droppedTapSpans.add(1, ordering: .relaxed)
}

@_noLocks
private func buffer(_ core: UnsafeMutablePointer<EngineCore>, _ port: UnsafeMutableRawPointer,
                    frames: Int) -> UnsafeMutablePointer<Float>? {
    let function = core.pointee.portBuffer
    let raw = _unsafePerformance { function(port, UInt32(truncatingIfNeeded: frames)) }
    return raw?.assumingMemoryBound(to: Float.self)
}

/// Fetches every input buffer once, measures its peak (and its sum of squares while RMS is
/// measured), and substitutes a sanitised copy (or
/// silence, when the scratch buffers are used up) for any buffer holding NaN or infinity.
@_noLocks
private func readInputs(_ core: UnsafeMutablePointer<EngineCore>, plan: UnsafeMutablePointer<MixPlan>,
                        offset: Int, frames: Int, tapping: Bool) {
    let maxFrames = core.pointee.configuration.maxFrames
    let scratchCount = core.pointee.configuration.sanitiseScratchBuffers
    var scratchUsed = 0
    var i = 0
    while i < plan.pointee.inputCount {
        let input = plan.pointee.inputs[i]
        var source = UnsafePointer(core.pointee.silence)
        var peak: Float = 0
        if let buffer = buffer(core, input.port, frames: offset &+ frames).map({ $0 + offset }) {
            if let finitePeak = SignalGuard.peakIfFinite(buffer, frames: frames) {
                source = UnsafePointer(buffer)
                peak = finitePeak
            } else {
                _ = core.pointee.nonFiniteInputBuffers.add(1, ordering: .relaxed)
                if scratchUsed < scratchCount {
                    let clean = core.pointee.scratch + scratchUsed * maxFrames
                    peak = SignalGuard.copySanitised(buffer, to: clean, frames: frames)
                    source = UnsafePointer(clean)
                    scratchUsed &+= 1
                }
            }
        }
        core.pointee.inputBuffers[i] = source
        if tapping, let tap = input.tap, !core.pointee.tapBlocked[Int(input.tapGroup)] { TapRing.write(tap, source, frames: frames) }
        var delayed = source
        if let line = input.delayLine, plan.pointee.lookaheadFrames > 0 {
            DelayLine.process(line, source, frames: frames, delay: plan.pointee.lookaheadFrames, fade: plan.pointee.lookaheadFadeFrames)
            delayed = UnsafePointer(line.pointee.out)
        }
        // The app's volume, after its meter, tap and level watch (they measure what it sends).
        if let trimmed = input.volumeBuffer {
            let stage = core.pointee.inputVolumes + Int(input.meterSlot)
            if stage.pointee.isSilent {
                core.pointee.inputBuffers[i] = UnsafePointer(core.pointee.silence)
                delayed = UnsafePointer(core.pointee.silence)
            } else if !stage.pointee.isUnity {
                stage.pointee.apply(source, to: trimmed, frames: frames)
                core.pointee.inputBuffers[i] = UnsafePointer(trimmed)
                if delayed == source {
                    delayed = UnsafePointer(trimmed)
                } else {
                    let trimmedDelayed = trimmed + maxFrames
                    stage.pointee.apply(delayed, to: trimmedDelayed, frames: frames)
                    delayed = UnsafePointer(trimmedDelayed)
                }
            }
        }
        core.pointee.delayedInputBuffers[i] = delayed
        if input.watch >= 0 {
            let w = Int(input.watch)
            core.pointee.watchPeaks[w] = max(core.pointee.watchPeaks[w], peak)
        }
        if let meter = core.pointee.meter {
            let slot = Int(input.meterSlot)
            meter.pointee.inputPeaks[slot] = max(meter.pointee.inputPeaks[slot], peak)
            if core.pointee.measuringRMS, peak > 0 {
                meter.pointee.inputSquares[slot] += Double(SignalGuard.sumOfSquares(source, frames: frames))
            }
        }
        i &+= 1
    }
}

@_noLocks
private func mixOutputs(_ core: UnsafeMutablePointer<EngineCore>, plan: UnsafeMutablePointer<MixPlan>,
                        offset: Int, frames: Int, tapping: Bool) {
    var o = 0
    while o < plan.pointee.outputCount {
        let output = plan.pointee.outputs[o]
        o &+= 1
        guard let out = buffer(core, output.port, frames: offset &+ frames).map({ $0 + offset }) else {
            // Its tap still gets the span (silence), so the route's channels stay aligned.
            if tapping, let tap = output.tap, !core.pointee.tapBlocked[Int(output.tapGroup)] {
                TapRing.write(tap, core.pointee.silence, frames: frames)
            }
            continue
        }
        let inputs = output.delayed ? core.pointee.delayedInputBuffers : core.pointee.inputBuffers
        let audible = MixKernel.vectorised(output: out,
                                           inputs: UnsafePointer(inputs),
                                           contributions: plan.pointee.contributions + Int(output.firstContribution),
                                           count: Int(output.contributionCount),
                                           gains: core.pointee.gains,
                                           frames: frames)
        // The route's volume, on what was mixed.
        var heard = audible
        if audible {
            let stage = core.pointee.outputVolumes + Int(output.meterSlot)
            if stage.pointee.isSilent {
                MixKernel.clear(out, frames: frames)
                heard = false
            } else if !stage.pointee.isUnity {
                stage.pointee.apply(out, to: out, frames: frames)
            }
        }
        // Finite inputs can still overflow to infinity when summed; nothing non-finite leaves.
        // An output nothing was audible on holds zeros (most routes but the current one).
        let peak: Float
        if !heard {
            peak = 0
        } else if let finitePeak = SignalGuard.peakIfFinite(out, frames: frames) {
            peak = finitePeak
        } else {
            _ = core.pointee.nonFiniteOutputBuffers.add(1, ordering: .relaxed)
            peak = SignalGuard.sanitiseInPlace(out, frames: frames)
        }
        if let meter = core.pointee.meter {
            let slot = Int(output.meterSlot)
            meter.pointee.outputPeaks[slot] = max(meter.pointee.outputPeaks[slot], peak)
            if core.pointee.measuringRMS, peak > 0 {
                meter.pointee.outputSquares[slot] += Double(SignalGuard.sumOfSquares(out, frames: frames))
            }
        }
        if tapping, let tap = output.tap, !core.pointee.tapBlocked[Int(output.tapGroup)] { TapRing.write(tap, out, frames: frames) }
    }
}

/// Moves every volume stage the plan has on by the span just mixed (each once, however many of
/// the plan's inputs read it).
@_noLocks
private func advanceVolumes(_ core: UnsafeMutablePointer<EngineCore>, plan: UnsafeMutablePointer<MixPlan>, frames: Int) {
    var v = 0
    while v < plan.pointee.volumeCount {
        let volume = plan.pointee.volumes[v]
        v &+= 1
        let stage = volume.isOutput ? core.pointee.outputVolumes + Int(volume.slot) : core.pointee.inputVolumes + Int(volume.slot)
        stage.pointee.advance(by: frames)
    }
}

@_noLocks
private func silenceOutputs(_ core: UnsafeMutablePointer<EngineCore>, plan: UnsafeMutablePointer<MixPlan>,
                            frames: Int) {
    var o = 0
    while o < plan.pointee.outputCount {
        if let out = buffer(core, plan.pointee.outputs[o].port, frames: frames) {
            out.update(repeating: 0, count: frames)
        }
        o &+= 1
    }
}

@_noLocks
private func takeMeterBlockIfNeeded(_ core: UnsafeMutablePointer<EngineCore>) {
    if core.pointee.meter == nil, let bits = core.pointee.meterFree.pop() {
        core.pointee.meter = UnsafeMutablePointer<MeterBlock>(bitPattern: bits)
    }
}

/// Hands each watch's peak of this cycle to the control thread (a watch no input reported this
/// cycle is left out) and clears them for the next.
///
/// While the control side sleeps (`levelsAsleep`: every watched app silent and settled), nothing
/// is reported, until a watch's peak reaches its wake level: then the flag is cleared and the
/// control side woken, once (one eventfd write, which takes no user-space lock and never blocks
/// on a stock kernel), and this cycle's peaks are reported as usual.
///
/// A cycle reported while awake whose peak reached a wake level looks at the flag again after its
/// readings are in the ring (a full fence between: the control side stores the flag, fences, and
/// only then drains): the control side may have gone to sleep after this cycle's first look and
/// drained before these readings arrived, and must not sleep on them.
@_noLocks
private func reportLevels(_ core: UnsafeMutablePointer<EngineCore>, frames: Int) {
    guard let plan = core.pointee.plan else { return }
    var asleep = core.pointee.levelsAsleep.load(ordering: .acquiring)
    if asleep, anyWatchAtWakeLevel(core, plan: plan) {
        if core.pointee.levelsAsleep.exchange(false, ordering: .acquiringAndReleasing) { signalLevelWake(core) }
        asleep = false
    }
    var loudReported = false
    var i = 0
    while i < plan.pointee.inputCount {
        let w = Int(plan.pointee.inputs[i].watch)
        i &+= 1
        guard w >= 0, core.pointee.watchPeaks[w] >= 0 else { continue }
        let peak = core.pointee.watchPeaks[w]
        core.pointee.watchPeaks[w] = -1
        if asleep { continue }
        let bits = UInt64(min(frames, 0xffff)) << 48 | UInt64(w & 0xffff) << 32 | UInt64(peak.bitPattern)
        if !core.pointee.levels.push(UInt(truncatingIfNeeded: bits)) {
            _ = core.pointee.levelsDropped.add(1, ordering: .relaxed)
        }
        if peak >= Float(bitPattern: core.pointee.watchWakeLevels[w].load(ordering: .relaxed)) { loudReported = true }
    }
    if loudReported {
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        if core.pointee.levelsAsleep.load(ordering: .relaxed),
           core.pointee.levelsAsleep.exchange(false, ordering: .acquiringAndReleasing) {
            signalLevelWake(core)
        }
    }
}

/// Whether some watch's peak this cycle reached its wake level.
@_noLocks @inline(__always)
private func anyWatchAtWakeLevel(_ core: UnsafeMutablePointer<EngineCore>, plan: UnsafeMutablePointer<MixPlan>) -> Bool {
    var j = 0
    while j < plan.pointee.inputCount {
        let w = Int(plan.pointee.inputs[j].watch)
        j &+= 1
        if w >= 0, core.pointee.watchPeaks[w] >= Float(bitPattern: core.pointee.watchWakeLevels[w].load(ordering: .relaxed)) {
            return true
        }
    }
    return false
}

/// Wakes the control side's level watching (it cleared `levelsAsleep` itself).
@_noLocks @inline(__always)
private func signalLevelWake(_ core: UnsafeMutablePointer<EngineCore>) {
    let descriptor = core.pointee.levelWake
    if descriptor >= 0 { _unsafePerformance { CWake_signal(descriptor) } }
}

@_noLocks
private func finishCycle(_ core: UnsafeMutablePointer<EngineCore>, frames: Int) {
    reportLevels(core, frames: frames)
    if let meter = core.pointee.meter {
        meter.pointee.frames &+= frames
        if core.pointee.measuringRMS { meter.pointee.squaredFrames &+= frames }
        meter.pointee.cycles &+= 1
        // Handed over only when a free block is there to take its place at the next cycle's
        // start (only this thread takes free blocks): while the control side has returned none
        // (an idle router collects once a second), this block goes on gathering, so no cycle is
        // left unmetered.
        if meter.pointee.frames >= core.pointee.configuration.meterIntervalFrames,
           core.pointee.meterFree.peek() != nil,
           core.pointee.meterFull.push(UInt(bitPattern: meter)) {
            core.pointee.meter = nil
        }
    }
    _ = core.pointee.processedFrames.add(UInt64(truncatingIfNeeded: frames), ordering: .releasing)
    _ = core.pointee.cycles.add(1, ordering: .releasing)
}
