import Foundation

/// What waits to be written to one WebSocket: filled from any thread (the OSC server's outlet,
/// the listen hub), emptied by the connection's writer task, which writes one frame at a time
/// and waits for the socket, so a peer that reads slowly slows only its own writer.
///
/// Bounded: frames (replies, errors, notifications, values, path changes) up to `limit` bytes;
/// past that `push` refuses, and the sender counts a failed send (as a slow OSC TCP peer's). One
/// slot for the latest conflatable frame (meters): a newer one replaces it, so a peer gets meters
/// no faster than it reads them and never a backlog of old ones.
final class OutboundQueue: @unchecked Sendable {
    // @unchecked: every stored property is read and written under `lock` (NSLock, seen by TSan).
    enum Frame: Equatable, Sendable {
        case text(String)
        case binary([UInt8])

        var size: Int {
            switch self {
            case let .text(text): text.utf8.count
            case let .binary(bytes): bytes.count
            }
        }
    }

    let limit: Int
    private let lock = NSLock()
    private var frames: [Frame] = []
    private var head = 0
    private var bytes = 0
    private var latest: Frame?
    private var closed = false
    private var waiter: CheckedContinuation<Frame?, Never>?

    init(limit: Int) {
        self.limit = limit
    }

    /// Queues `frame`; false when it does not fit (or the queue is closed). A conflatable frame
    /// always fits: it replaces the one waiting, if any.
    @discardableResult
    func push(_ frame: Frame, conflatable: Bool = false) -> Bool {
        enum Outcome { case queued, refused, handOver(CheckedContinuation<Frame?, Never>) }
        let outcome: Outcome = lock.withLock {
            if closed { return .refused }
            if let waiter {
                // The writer waits, so nothing is queued: the frame goes straight to it.
                self.waiter = nil
                return .handOver(waiter)
            }
            if conflatable {
                latest = frame
                return .queued
            }
            guard bytes + frame.size <= limit else { return .refused }
            frames.append(frame)
            bytes += frame.size
            return .queued
        }
        switch outcome {
        case .queued: return true
        case .refused: return false
        case let .handOver(waiter):
            waiter.resume(returning: frame)
            return true
        }
    }

    /// The next frame to write, waiting for one; nil once the queue is closed and emptied of
    /// nothing more (frames still queued at close are dropped: the connection is going).
    func next() async -> Frame? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Frame?, Never>) in
            let ready: Frame?? = lock.withLock {
                precondition(waiter == nil, "one writer per queue")
                if closed { return .some(nil) }
                if head < frames.count {
                    let frame = frames[head]
                    head += 1
                    bytes -= frame.size
                    if head == frames.count {
                        frames.removeAll(keepingCapacity: true)
                        head = 0
                    } else if head >= 64 && head * 2 >= frames.count {
                        // A writer that stays behind never empties the queue: drop what it has
                        // taken, or the array keeps every frame ever sent.
                        frames.removeFirst(head)
                        head = 0
                    }
                    return .some(frame)
                }
                if let frame = latest {
                    latest = nil
                    return .some(frame)
                }
                waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Ends the queue: a waiting `next` returns nil, and so does every later one.
    func close() {
        let resumed: CheckedContinuation<Frame?, Never>? = lock.withLock {
            closed = true
            frames.removeAll()
            head = 0
            bytes = 0
            latest = nil
            defer { waiter = nil }
            return waiter
        }
        resumed?.resume(returning: nil)
    }

    /// Bytes queued and not yet taken (for tests).
    var queuedBytes: Int { lock.withLock { bytes } }

    /// Whether the writer waits for a frame (for tests).
    var hasWaitingWriter: Bool { lock.withLock { waiter != nil } }

    /// Frames held in storage, taken ones included until they are dropped (for tests).
    var storedFrames: Int { lock.withLock { frames.count } }
}
