import Dispatch
import Policy

/// Scenes in time: when a recall's fade is done, and the cue that follows an auto-continue cue.
/// The policy has no clock; the control queue's says when, and hands the policy the event.
extension Router {
    /// After a change stands: for each scene it recalled, the end of its fade is told to the
    /// policy (`sceneFadeDone`), and an auto-continue cue fires the next one its wait later,
    /// unless a later recall, or a move of the playhead, came first. What the scene could not
    /// apply is logged.
    func followScenes(_ effects: [PolicyEffect], startFrame: UInt32?) {
        for case let .sceneFade(name, recall, milliseconds, continueAfter, skipped) in effects {
            if !skipped.isEmpty {
                logger.warning("scene '\(name)' recalled without what cannot apply now: \(skipped.joined(separator: "; "))")
            }
            // A timed recall is heard from its frame, a little after it was applied.
            var lead = 0.0
            if let startFrame, let client = link.client, sampleRate > 0 {
                lead = max(0, Double(Int32(bitPattern: startFrame &- client.frameTime))) / Double(sampleRate)
            }
            let fadeEnds = lead + milliseconds / 1000
            queue.asyncAfter(deadline: .now() + fadeEnds) { [weak self] in
                guard let self, !stopped else { return }
                do {
                    _ = try performOnQueue([Change(.sceneFadeDone(recall: recall))])
                } catch {
                    logger.error("scene '\(name)': the end of its fade could not be told: \(error)")
                }
            }
            guard let wait = continueAfter else { continue }
            let playhead = policy.state.show.next
            queue.asyncAfter(deadline: .now() + fadeEnds + wait / 1000) { [weak self] in
                guard let self, !stopped else { return }
                let show = policy.state.show
                guard show.recallSerial == recall, show.next == playhead else { return }
                do {
                    _ = try performGivingUpHungServer([Change(.cueGo)])
                } catch {
                    logger.error("the cue after scene '\(name)' did not follow by itself: \(error)")
                }
            }
        }
    }
}
