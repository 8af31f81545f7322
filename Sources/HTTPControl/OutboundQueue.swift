import Foundation

/// What waits to be written to one WebSocket: filled from any thread (the OSC server's outlet,
/// the listen hub), emptied by the connection's `FrameOutlet` on its event loop, which takes
/// everything waiting at once and takes again only when the socket has taken that, so a peer
/// that reads slowly slows only its own connection.
///
/// Bounded: frames (replies, errors, notifications, values, path changes) up to `limit` bytes;
/// past that `push` refuses, and the sender counts a failed send (as a slow OSC TCP peer's). One
/// slot for the latest conflatable frame (meters): a newer one replaces it, so a peer gets meters
/// no faster than it reads them and never a backlog of old ones.
///
/// The writer is woken (`setWriter`'s closure, which schedules it on the event loop) by the
/// first push after it found the queue empty, and not again until it finds it empty once more:
/// a burst of pushes costs one wake. A push may ask for the writer's later wake instead (the OSC
/// server's thread: its outlet wakes all the turn's writers together when the turn ends).
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
    private var bytes = 0
    private var latest: Frame?
    private var closed = false
    private var wake: (@Sendable () -> Void)?
    private var wakeLater: (@Sendable () -> Void)?
    /// The writer has been woken and has not found the queue empty since: no push wakes it.
    private var writerBusy = false

    init(limit: Int) {
        self.limit = limit
    }

    /// Names the writer: `wake` is called (on the pushing thread, outside the lock) when frames
    /// wait and the writer is not already busy; at once if some wait now. `later` instead of
    /// `wake` for pushes that ask for it (none given: `wake`).
    func setWriter(_ wake: @escaping @Sendable () -> Void, later: (@Sendable () -> Void)? = nil) {
        let now: Bool = lock.withLock {
            self.wake = wake
            self.wakeLater = later
            guard !closed, !writerBusy, !frames.isEmpty || latest != nil else { return false }
            writerBusy = true
            return true
        }
        if now { wake() }
    }

    /// Queues `frame`; false when it does not fit (or the queue is closed). A conflatable frame
    /// always fits: it replaces the one waiting, if any. `wakingLater`: an idle writer is woken
    /// through `setWriter`'s `later`.
    @discardableResult
    func push(_ frame: Frame, conflatable: Bool = false, wakingLater: Bool = false) -> Bool {
        let (queued, wakeWriter): (Bool, (@Sendable () -> Void)?) = lock.withLock {
            if closed { return (false, nil) }
            if conflatable {
                latest = frame
            } else {
                guard bytes + frame.size <= limit else { return (false, nil) }
                frames.append(frame)
                bytes += frame.size
            }
            guard !writerBusy, let wake else { return (true, nil) }
            writerBusy = true
            return (true, wakingLater ? wakeLater ?? wake : wake)
        }
        wakeWriter?()
        return queued
    }

    /// What waits, in order, up to `maximumBytes` (always at least one frame), the latest
    /// conflatable frame last once every other is taken. Empty when nothing waits (or the queue
    /// is closed): the writer is then idle, and the next push wakes it.
    func take(upTo maximumBytes: Int = .max) -> [Frame] {
        lock.withLock {
            var count = 0
            var size = 0
            while count < frames.count, count == 0 || size + frames[count].size <= maximumBytes {
                size += frames[count].size
                count += 1
            }
            var taken = Array(frames[..<count])
            frames.removeFirst(count)
            bytes -= size
            if frames.isEmpty, let latest {
                taken.append(latest)
                self.latest = nil
            }
            if taken.isEmpty { writerBusy = false }
            return taken
        }
    }

    /// Ends the queue: frames still queued are dropped (the connection is going), `take` returns
    /// nothing more and `push` refuses.
    func close() {
        lock.withLock {
            closed = true
            frames.removeAll()
            bytes = 0
            latest = nil
            wake = nil
            wakeLater = nil
        }
    }

    /// Bytes queued and not yet taken (for tests).
    var queuedBytes: Int { lock.withLock { bytes } }
}
