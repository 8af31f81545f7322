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
            tellFadeDone(name, recall: recall, after: fadeEnds)
            guard let wait = continueAfter else { continue }
            let moves = policy.state.show.playheadMoves
            queue.asyncAfter(deadline: .now() + fadeEnds + wait / 1000) { [weak self] in
                guard let self, !stopped else { return }
                let show = policy.state.show
                guard show.recallSerial == recall, show.playheadMoves == moves else { return }
                do {
                    _ = try performGivingUpHungServer([Change(.cueGo)])
                } catch {
                    logger.error("the cue after scene '\(name)' did not follow by itself: \(error)")
                }
            }
        }
    }

    /// Tells the policy the fade is over `seconds` from now; a change refused then (the plan could
    /// not be built) is tried again a second later, so the scene is never left fading for good.
    private func tellFadeDone(_ name: String, recall: Int, after seconds: Double) {
        queue.asyncAfter(deadline: .now() + seconds) { [weak self] in
            guard let self, !stopped, policy.state.show.recallSerial == recall else { return }
            do {
                _ = try performOnQueue([Change(.sceneFadeDone(recall: recall))])
            } catch {
                logger.warning("scene '\(name)': the end of its fade could not be told yet (\(error)); trying again in 1 s")
                tellFadeDone(name, recall: recall, after: 1)
            }
        }
    }
}
