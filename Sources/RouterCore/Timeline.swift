import Foundation
import Policy

/// One thing that happened, as a person at the desk would want it told: when, what kind, about
/// whom, in words, and the state it changed (docs/OSC.md, "/timeline").
public struct TimelineEvent: Equatable, Sendable {
    /// Counts from 1 over the router's run; a reader asks for those after the last it has.
    public var number: Int
    /// Wall-clock time, when the router told of it.
    public var time: Date
    /// `app` (an app's state: activated, ducked, interrupted, silenced, deactivated),
    /// `interruption`, `duck` (a duck released or holding again), `route`, `silent`, `remote`,
    /// `scene`, `cue`, `playhead`, `jack`, `xrun`.
    public var kind: String
    /// The app, route or scene it is about ("" for the system).
    public var subject: String
    public var text: String
    /// What it changed, field by field: a value, or "before → after".
    public var changed: [String: String]
}

/// The recent events, in a ring: the last `capacity`, oldest first. The control queue records
/// (every notification the router sends goes through `record`); any thread reads, so a page
/// opened later sees what happened before it. An app's state is recorded when the state, or who
/// holds it back and by which rule, changes: not for every gain a loudness duck moves or a
/// volume a fader sends (volumes are not events here).
///
/// Owns: the ring, the counter, and each app's last recorded state. Must not touch: anything of
/// the router's. Any thread; the lock is held for a copy, never for a call out.
public final class Timeline: @unchecked Sendable {
    // @unchecked: every stored var is read and written under `lock` (NSLock, which TSan sees).
    private let lock = NSLock()
    private var events: [TimelineEvent] = []
    private var head = 0
    private var counted = 0
    private var lastState: [String: AppRecord] = [:]
    /// Xruns told since the last xrun event, and when that was: a machine in trouble reports them
    /// every second, which would push everything else out of the ring.
    private var heldXruns = 0
    private var heldTotal = 0
    private var lastXruns: Date?
    public let capacity: Int
    /// How many apps' last states are kept for the words of their next event.
    static let appsKept = 4096
    /// How many are kept now (tests).
    var appsRemembered: Int { lock.withLock { lastState.count } }
    /// At most one xrun event in this many seconds; the xruns between are counted into the next
    /// (`flushXruns` makes it once the spacing has passed, if no xrun comes to).
    public static let xrunSpacing: TimeInterval = 10

    private struct AppRecord: Equatable {
        var state: AppAudioState
        var by: String?
        var rule: String?
    }

    public init(capacity: Int = 256) {
        self.capacity = max(capacity, 1)
        events.reserveCapacity(self.capacity)
    }

    /// Records what a notification tells, if it is an event (control queue).
    public func record(_ notification: RouterNotification, at time: Date = Date()) {
        lock.withLock {
            guard let (kind, subject, text, changed) = describe(notification, at: time) else { return }
            append(kind: kind, subject: subject, text: text, changed: changed, at: time)
        }
    }

    private func append(kind: String, subject: String, text: String, changed: [String: String], at time: Date) {
        counted += 1
        let event = TimelineEvent(number: counted, time: time, kind: kind, subject: subject, text: text, changed: changed)
        if events.count < capacity {
            events.append(event)
        } else {
            events[head] = event
            head = (head + 1) % capacity
        }
    }

    /// Xruns held back (told within `xrunSpacing` of the last xrun event) become an event of
    /// their own once that spacing has passed (control queue: each housekeeping tick), so none is
    /// left out when no further xrun comes to carry them.
    public func flushXruns(at time: Date = Date()) {
        lock.withLock {
            guard heldXruns > 0, let last = lastXruns, time.timeIntervalSince(last) >= Self.xrunSpacing else { return }
            let count = heldXruns
            heldXruns = 0
            lastXruns = time
            append(kind: "xrun", subject: "", text: count == 1 ? "an xrun (\(heldTotal) since start)" : "\(count) xruns (\(heldTotal) since start)",
                   changed: ["xruns": "\(heldTotal)", "new": "\(count)"], at: time)
        }
    }

    /// The events after `number` still in the ring, oldest first, and the newest number (0: none
    /// yet). Asking with a number older than the ring's oldest gives every event it holds.
    public func events(after number: Int) -> (events: [TimelineEvent], newest: Int) {
        lock.withLock {
            let ordered = Array(events[head...] + events[..<head])
            return (ordered.filter { $0.number > number }, counted)
        }
    }

    // MARK: - In words

    private func describe(_ notification: RouterNotification, at time: Date) -> (String, String, String, [String: String])? {
        switch notification {
        case let .jack(connected, reason):
            return ("jack", "", connected ? "JACK server back: \(reason)" : "JACK server lost: \(reason)",
                    ["jack": connected ? "disconnected → connected" : "connected → disconnected", "reason": reason])
        case let .xruns(total, new):
            if let last = lastXruns, time.timeIntervalSince(last) < Self.xrunSpacing {
                heldXruns += new
                heldTotal = total
                return nil
            }
            let count = heldXruns + new
            heldXruns = 0
            lastXruns = time
            return ("xrun", "", count == 1 ? "an xrun (\(total) since start)" : "\(count) xruns (\(total) since start)",
                    ["xruns": "\(total)", "new": "\(count)"])
        case let .policy(notification):
            return describe(notification)
        }
    }

    private func describe(_ notification: PolicyNotification) -> (String, String, String, [String: String])? {
        switch notification {
        case let .appState(app, state, gain, reason, held):
            let record = AppRecord(state: state, by: held?.by, rule: held?.rule)
            let before = lastState[app]
            guard before != record else { return nil }
            lastState[app] = record
            // Apps come and go by name, and one removed is told of no more: what is kept stays
            // bounded. Over the bound, the inactive go; if that is not enough, all but this one
            // (the next state of another then reads without its "before").
            if lastState.count > Self.appsKept {
                lastState = lastState.filter { $0.value.state != .inactive }
                if lastState.count > Self.appsKept { lastState = [app: record] }
            }
            if state == .inactive, before == nil { return nil }
            var changed = ["state": before.map { "\($0.state.rawValue) → \(state.rawValue)" } ?? state.rawValue,
                           "gainDb": Self.decibels(gain)]
            if let reason { changed["because"] = reason.rawValue }
            var text = "\(app) \(state.rawValue)"
            if let held {
                changed["by"] = held.by
                changed["rule"] = held.rule
                if let route = held.route { changed["route"] = route }
                if let target = held.target { changed["targetLu"] = String(format: "%.1f", target) }
                text += " by \(held.by) (\(held.rule))"
            } else if let reason, state == .active {
                text += " (\(reason.rawValue))"
            }
            return ("app", app, text, changed)
        case let .interruption(app, phase, shouldResume, reason):
            var text = "\(app): interruption \(phase.rawValue)"
            if reason != .default { text += " (\(reason.rawValue))" }
            if phase == .ended { text += shouldResume ? ", should resume" : ", should not resume" }
            return ("interruption", app, text,
                    ["interruption": phase.rawValue, "reason": reason.rawValue, "shouldResume": shouldResume ? "yes" : "no"])
        case let .duckReleased(app, released):
            return ("duck", app, released ? "\(app) silent: ducks no one" : "\(app) sounds again: ducks again",
                    ["ducking": released ? "holding → released" : "released → holding"])
        case let .route(reason, route, previous, app):
            let from = previous.isEmpty ? "none" : previous
            let to = route.isEmpty ? "none" : route
            let text = app.map { "\($0): routes \(from) → \(to) (\(reason.rawValue))" } ?? "route \(from) → \(to) (\(reason.rawValue))"
            return ("route", app ?? to, text, ["route": "\(from) → \(to)", "reason": reason.rawValue])
        case let .silentSwitch(on):
            return ("silent", "", on ? "silent switch on" : "silent switch off", ["silent": on ? "off → on" : "on → off"])
        case let .remote(app, command, value):
            return ("remote", app, "\(command.rawValue) sent to \(app)\(value.map { String(format: " (%g)", $0) } ?? "")",
                    ["command": command.rawValue])
        case let .scene(name, phase):
            return ("scene", name, phase == .began ? "scene \(name) recalled" : "scene \(name): fade done", ["scene": phase.rawValue])
        case let .cue(number, scene):
            return ("cue", scene, "cue \(number) fired: \(scene)", ["cue": "\(number)"])
        case let .playhead(number, scene):
            return ("playhead", scene, number == 0 ? "playhead past the last cue" : "playhead on cue \(number): \(scene)",
                    ["next": "\(number)"])
        case .systemVolume:
            return nil
        }
    }

    private static func decibels(_ gain: Double) -> String {
        gain.isFinite && gain > Double(Decibels.floor) ? String(format: "%.1f", gain) : "-inf"
    }
}
