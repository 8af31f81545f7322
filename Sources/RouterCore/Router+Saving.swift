import Engine
import Foundation
import SessionStore

/// What a restart should find (the policy's state, with the reload steps waiting for it), handed
/// to the receiver (`Configuration.onSave`), and the receiver's outcome: a save it could not
/// write stays pending (`StateKeeper`), is tried again at housekeeping, handed over once more at
/// stop and, if a write under way at stop failed, once after it (`handOverUnsavedAfterStop`),
/// and is logged at a bounded rate.
///
/// Owns no state of its own (the keeper holds it). Control queue only; the receiver's answer
/// comes back to it.
extension Router {
    /// What a restart should find, now (a session manager's save). A save request still waiting
    /// for its 200 ms is answered by this one.
    public func currentSavedState() -> SavedState {
        queue.sync {
            keeper.cancelPending()
            return savedState()
        }
    }

    /// What a restart should find: the policy's state, with what reload steps waiting for that
    /// restart set (`ReloadBacklog.laid(over:)`).
    func savedState() -> SavedState {
        let state = StateKeeper.savedState(policy.state, channels: Dictionary(inventory.apps.map { ($0.name, $0.channelCount) }, uniquingKeysWith: { a, _ in a }),
                                           defaultChannelCount: defaultChannelCount, fileDucking: fileDucking)
        return reloadBacklog.laid(over: state)
    }

    /// Hands the pending save, if any, to the receiver; its outcome comes back to `saveFinished`.
    func handOverSave() {
        guard let number = keeper.take(now: Self.monotonicSeconds) else { return }
        handOver(number)
    }

    /// After `stop()`, once the receiver has finished every write handed over: a save whose write
    /// failed (one under way when the router stopped, or the hand-over at stop) is handed over
    /// once more. True when one was: wait for the receiver again, then read `lastSaveFailure`.
    public func handOverUnsavedAfterStop() -> Bool {
        queue.sync {
            guard stopped, let number = keeper.takeAfterStop(now: Self.monotonicSeconds) else { return false }
            handOver(number)
            return true
        }
    }

    private func handOver(_ number: Int) {
        guard let onSave = keeper.onSave else { return }
        let queue = self.queue
        onSave(savedState()) { [weak self] failure in
            queue.async { [weak self] in self?.saveFinished(number, failure: failure) }
        }
    }

    /// Housekeeping: a save that failed is tried again once its wait is over.
    func retryFailedSave() {
        guard keeper.shouldRetry(now: Self.monotonicSeconds) else { return }
        handOverSave()
    }

    /// The receiver's answer to hand-over `number` (nil: written).
    private func saveFinished(_ number: Int, failure: String?) {
        switch keeper.finished(number, failure: failure, now: Self.monotonicSeconds) {
        case .none:
            break
        case let .failed(reason, attempts) where attempts == 1:
            logger.error("could not save the state: \(reason); keeping it, and trying again")
        case let .failed(reason, attempts):
            logger.error("still cannot save the state after \(attempts) attempts: \(reason); trying again")
        case let .recovered(attempts):
            logger.notice("saved the state after \(attempts) failed attempt\(attempts == 1 ? "" : "s")")
        }
    }

    /// The last state save that could not be written, and whether it is still unsaved (nil:
    /// none since start). After `stop()` and the receiver's last write, it says whether the
    /// final save failed.
    public var lastSaveFailure: RouterStatus.SaveFailure? { queue.sync { keeper.lastFailure } }

    static var monotonicSeconds: Double { Double(Engine.monotonicNow) / 1e9 }
}
