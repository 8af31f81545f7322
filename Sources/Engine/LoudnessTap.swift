import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One channel's samples, from the process thread to a loudness meter's thread (issue 19): a
/// single-producer, single-consumer ring of floats, allocated by the engine for an input or
/// output meter slot the first time a plan taps it, and kept until the engine goes.
///
/// The process thread writes a span of a cycle into every ring of a tap group (an app's or a
/// route's channels), or into none of them when one lacks room (`Engine.Statistics
/// .droppedTapSpans`): the channels of one app or route stay aligned, however late their reader
/// is, and a reader that never comes holds up no other group. Nothing here allocates or locks.
struct TapRing: ~Copyable {
    let buffer: UnsafeMutablePointer<Float>
    /// A power of two.
    let capacity: Int
    /// Samples written and read since the ring was made (they never wrap in practice).
    let written = Atomic<Int>(0)
    let read = Atomic<Int>(0)

    init(capacity: Int) {
        var size = 1
        while size < capacity { size <<= 1 }
        self.capacity = size
        buffer = .allocate(capacity: size)
        buffer.initialize(repeating: 0, count: size)
    }

    static func make(capacity: Int) -> UnsafeMutablePointer<TapRing> {
        let ring = UnsafeMutablePointer<TapRing>.allocate(capacity: 1)
        ring.initialize(to: TapRing(capacity: capacity))
        return ring
    }

    static func destroy(_ ring: UnsafeMutablePointer<TapRing>) {
        ring.pointee.buffer.deallocate()
        ring.deinitialize(count: 1)
        ring.deallocate()
    }

    /// Room for this many more samples (process thread).
    @_noLocks @inline(__always)
    static func room(_ ring: UnsafeMutablePointer<TapRing>) -> Int {
        ring.pointee.capacity &- (ring.pointee.written.load(ordering: .relaxed) &- ring.pointee.read.load(ordering: .acquiring))
    }

    /// Appends `frames` samples; the caller has checked `room` (process thread).
    @_noLocks
    static func write(_ ring: UnsafeMutablePointer<TapRing>, _ samples: UnsafePointer<Float>, frames: Int) {
        let w = ring.pointee.written.load(ordering: .relaxed)
        let mask = ring.pointee.capacity &- 1
        let start = w & mask
        let first = min(frames, ring.pointee.capacity &- start)
        _ = _unsafePerformance { memcpy(ring.pointee.buffer + start, samples, first &* MemoryLayout<Float>.stride) }
        if first < frames {
            _ = _unsafePerformance { memcpy(ring.pointee.buffer, samples + first, (frames &- first) &* MemoryLayout<Float>.stride) }
        }
        ring.pointee.written.store(w &+ frames, ordering: .releasing)
    }
}

/// A loudness meter's end of one tapped channel (`Engine.loudnessTap`): what the process thread
/// has written and this reader has not yet taken. One reader thread per tap; valid while the
/// engine lives.
public struct LoudnessTap: @unchecked Sendable, Equatable {
    // @unchecked: the ring's indices are atomics; only the reader moves `read`, only the process
    // thread `written` and the samples it has not yet published.
    let ring: UnsafeMutablePointer<TapRing>

    /// Samples waiting.
    public var available: Int {
        ring.pointee.written.load(ordering: .acquiring) &- ring.pointee.read.load(ordering: .relaxed)
    }

    /// Copies up to `count` waiting samples into `destination` and takes them; how many.
    public func take(into destination: UnsafeMutablePointer<Float>, count: Int) -> Int {
        let r = ring.pointee.read.load(ordering: .relaxed)
        let n = min(count, ring.pointee.written.load(ordering: .acquiring) &- r)
        guard n > 0 else { return 0 }
        let mask = ring.pointee.capacity &- 1
        let start = r & mask
        let first = min(n, ring.pointee.capacity &- start)
        destination.update(from: ring.pointee.buffer + start, count: first)
        if first < n { (destination + first).update(from: ring.pointee.buffer, count: n &- first) }
        ring.pointee.read.store(r &+ n, ordering: .releasing)
        return n
    }

    /// The oldest waiting samples that lie one after another in the ring (up to the ring's end):
    /// where they start and how many. They stay until `advance(by:)` takes them; the process thread
    /// does not write over them meanwhile.
    public var contiguous: (samples: UnsafePointer<Float>, count: Int) {
        let r = ring.pointee.read.load(ordering: .relaxed)
        let n = ring.pointee.written.load(ordering: .acquiring) &- r
        let start = r & (ring.pointee.capacity &- 1)
        return (UnsafePointer(ring.pointee.buffer + start), min(n, ring.pointee.capacity &- start))
    }

    /// Takes `count` samples seen through `contiguous` (at most its count): their room goes back
    /// to the process thread.
    public func advance(by count: Int) {
        let r = ring.pointee.read.load(ordering: .relaxed)
        // Never past what was written: the process thread would take the room as free and write
        // beyond the ring.
        let waiting = ring.pointee.written.load(ordering: .acquiring) &- r
        ring.pointee.read.store(r &+ max(0, min(count, waiting)), ordering: .releasing)
    }

    /// Drops everything waiting (a slot that passed to another app: its old samples are not it).
    public func skipAll() {
        ring.pointee.read.store(ring.pointee.written.load(ordering: .acquiring), ordering: .releasing)
    }

    public static func == (a: LoudnessTap, b: LoudnessTap) -> Bool { a.ring == b.ring }
}
