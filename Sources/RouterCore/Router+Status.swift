import Engine
import Foundation
import Policy

/// The status snapshot (/state, tests): gathered from each piece of the control plane on the
/// control queue. Owns no state; changes nothing.
extension Router {
    /// A client that has run no cycle for this long (or four periods, if longer) shows as stalled.
    static let stallReportSeconds = 0.5

    /// `stallReportSeconds`, or four periods if longer.
    var stallReportThreshold: Double { max(Router.stallReportSeconds, 4 * periodSeconds) }

    /// One period, in seconds.
    var periodSeconds: Double { Double(bufferSize) / Double(max(sampleRate, 1)) }

    /// The JACK client name the router has now (it may change when the server comes back); one
    /// short trip to the control queue, none of `status()`'s gathering.
    public func jackClientName() -> String {
        queue.sync { clientName }
    }

    /// What the router is doing now.
    public func status() -> RouterStatus {
        queue.sync {
            collectFromEngine()
            if let client = link.client { takeCycleNotes(client) }
            let statistics = engine.statistics
            let mix = policy.mix
            let sessions = policy.state.appsByName
            var status = RouterStatus(
                client: clientName, server: resolvedServerName, jackConnected: link.client != nil,
                jackStalledSeconds: watchdog.silence(cycles: statistics.cycles, lastCycleAt: statistics.lastCycleStart,
                                                     now: Engine.monotonicNow, threshold: stallReportThreshold),
                jackDisconnectedSeconds: link.disconnectedSince.map { Date().timeIntervalSince($0) }, reconnects: link.reconnects,
                processTime: engine.processTimes.sinceStart.summary, recentProcessTime: engine.processTimes.recent.summary,
                planQueueFull: publisher.planQueueFull, sampleRate: sampleRate, bufferSize: bufferSize,
                rampMilliseconds: rampMilliseconds,
                apps: inventory.apps.map { app in
                    .init(name: app.name, ports: (app.ports + app.capturePorts).map(\.name),
                          state: mix[app.name]?.state.rawValue ?? "inactive",
                          volume: Double(Decibels.sliderPosition(linear: sessions[app.name]?.volume ?? 1)),
                          gainDecibels: Double(Decibels.level(app.gain * (sessions[app.name]?.volume ?? 1))),
                          peakDecibels: peakBoard.latestPeakDecibels(app: app),
                          loudness: link.client == nil ? nil : loudness.reading(app: app.name).map { .init(momentary: $0.momentary, shortTerm: $0.shortTerm) },
                          ducks: ducks(of: app.name, mix[app.name]))
                },
                routes: inventory.routes.map {
                    .init(name: $0.name, ports: $0.ports.map(\.name), destinations: $0.destinations,
                          available: policy.state.availableRoutes.contains($0.name),
                          farEndAnswers: $0.farEndAnswers,
                          latencyFrames: link.client == nil ? nil : $0.latencyFrames,
                          volume: Double(Decibels.sliderPosition(linear: $0.gain)),
                          gainDecibels: Double(Decibels.level($0.gain)),
                          peakDecibels: peakBoard.latestPeakDecibels(route: $0),
                          loudness: link.client == nil ? nil : loudness.reading(route: $0.name).map { .init(momentary: $0.momentary, shortTerm: $0.shortTerm) })
                },
                currentRoute: currentRoute.map { inventory.routes[$0].name }, policy: policy.state,
                silentSwitch: policy.state.silentSwitch, outsideInterruptions: policy.state.outsideInterruptions,
                nowPlaying: policy.state.nowPlaying, saveRequests: keeper.requests,
                publishedPlan: publisher.publishedGeneration, adoptedPlan: engine.adoptedPlanGeneration,
                cells: publisher.cellCount, cycles: statistics.cycles, xruns: diagnostics.xruns,
                missedCycles: statistics.missedCycles, recentGaps: engine.recentGaps(), nonFiniteInputBuffers: statistics.nonFiniteInputBuffers)
            status.jackPorts = link.client?.portCount ?? 0
            status.spareJackPorts = link.client?.spareNames.count ?? 0
            status.jackUnanswered = link.client?.unansweredRequest.map { RouterStatus.UnansweredRequest(request: $0.what, seconds: $0.seconds) }
            status.reloadPending = reloadBacklog.descriptions
            status.lastSaveFailure = keeper.lastFailure
            return status
        }
    }

    /// Each route an app is ducked on, with the rule, the depth in force and what was measured.
    private func ducks(of app: String, _ mix: AppMix?) -> [RouterStatus.Duck] {
        guard let mix else { return [] }
        return mix.ducks.sorted { $0.key < $1.key }.map { route, duck in
            var entry = RouterStatus.Duck(route: route, rule: duck.rule, depthDecibels: Double(Decibels.level(duck.factor)))
            if duck.rule.target != nil {
                let pair = DuckPair(ducker: duck.rule.ducker, ducked: app, route: route)
                let estimate = loudnessDucker.estimates[pair]
                entry.duckerLufs = estimate?.ducker
                entry.duckedLufs = estimate?.ducked
                entry.differenceLu = measuredDifference(pair)
            }
            return entry
        }
    }
}
