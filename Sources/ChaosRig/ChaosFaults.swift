import Foundation
import JackRig

/// The faults the run throws, and how a step is drawn: one fault, or two or three at once.
public enum ChaosFault: String, CaseIterable, Sendable, Comparable {
    // In the order a step carries them out: OSC first (so the router has answered before the
    // graph or the process changes under it), the router's own death last.
    case oscChanges = "OSC changes"
    case timedBundle = "a time-tagged bundle"
    case garbage = "garbage on every listener"
    case stuckClients = "clients that never read"
    case stateReadOnly = "the state folder read-only"
    case reload = "a valid edit reloaded (SIGHUP)"
    case brokenReload = "a broken edit reloaded (SIGHUP)"
    case deviceUnplugged = "a route's device unplugged"
    case devicePlugged = "a route's device plugged back"
    case sourceKilled = "the tone source killed and started again"
    case periodChanged = "the server's period changed"
    case serverFrozen = "the server frozen (SIGSTOP) and resumed"
    case serverKilled = "the server killed and started again"
    case routerKilled = "the router killed (SIGKILL) and started again"

    public static func < (a: Self, b: Self) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// Faults after which sound may stop or jump: the sinks' steps in their time are theirs.
    var breaksTheSound: Bool {
        switch self {
        case .sourceKilled, .periodChanged, .serverFrozen, .serverKilled, .routerKilled: true
        default: false
        }
    }

    /// How long the router has, from the end of the fault, to be back as the model says.
    var recoveryDeadline: Double {
        switch self {
        case .serverKilled, .serverFrozen, .routerKilled: 10
        case .stateReadOnly: 40   // a failed save is tried again after 1 s, then waits doubling
        default: 5
        }
    }

    /// Faults on the JACK graph; a step has at most one, so the order the router sees them in
    /// is never left open.
    var touchesTheGraph: Bool {
        switch self {
        case .deviceUnplugged, .devicePlugged, .sourceKilled, .periodChanged, .serverFrozen, .serverKilled: true
        default: false
        }
    }

    /// A step: usually one fault, sometimes two or three at once (never two on the graph, nor a
    /// reload with the router's death, whose outcome would then be left to timing).
    static func drawStep(_ model: ChaosModel, readOnlyPossible: Bool, endingSoon: Bool = false, _ random: inout SplitMix) -> [ChaosFault] {
        let count = [1, 1, 1, 1, 1, 1, 2, 2, 3][random.next(9)]
        var step: [ChaosFault] = []
        var tries = 0
        while step.count < count && tries < 40 {
            tries += 1
            let fault = draw(model, readOnlyPossible: readOnlyPossible, &random)
            if step.contains(fault) || (endingSoon && fault.recoveryDeadline > 5) { continue }
            if fault.touchesTheGraph && step.contains(where: \.touchesTheGraph) { continue }
            let reloads: Set<ChaosFault> = [.reload, .brokenReload]
            if (reloads.contains(fault) && (step.contains(.routerKilled) || step.contains(where: reloads.contains)))
                || (fault == .routerKilled && step.contains(where: reloads.contains)) { continue }
            if fault == .routerKilled && step.contains(where: \.touchesTheGraph) { continue }
            if fault.touchesTheGraph && step.contains(.routerKilled) { continue }
            step.append(fault)
        }
        return step.isEmpty ? [.oscChanges] : step.sorted()
    }

    static func draw(_ model: ChaosModel, readOnlyPossible: Bool, _ random: inout SplitMix) -> ChaosFault {
        let unplugged = model.routes.contains { !$0.available }
        let weights: [(ChaosFault, Int)] = [
            (.oscChanges, 30), (.timedBundle, 5), (.garbage, 5), (.stuckClients, 3), (.stateReadOnly, readOnlyPossible ? 3 : 0),
            (.reload, 5), (.brokenReload, 4), (.deviceUnplugged, [0, 2, 7, 7][model.routes.filter(\.available).count]),
            (.devicePlugged, unplugged ? 12 : 0), (.sourceKilled, 4), (.periodChanged, 3), (.serverFrozen, 4),
            (.serverKilled, 5), (.routerKilled, 5),
        ]
        var roll = random.next(weights.reduce(0) { $0 + $1.1 })
        for (fault, weight) in weights {
            if roll < weight { return fault }
            roll -= weight
        }
        return .oscChanges
    }
}
