import Engine
import Loudness

/// The loudness of every app and route (issue 19): which tap group each one's channels form in
/// the plan, the worker that meters them off the process thread (`LoudnessWorker`), kept in step
/// with the ports and the sample rate, and its readings for the status. Control queue only.
///
/// An app's channels are tap group `first input meter slot`; a route's, `maxInputChannels + first
/// output meter slot`: unique, stable while the app or route has its ports, and under the engine's
/// `maxTapGroups` (which the router sets to inputs plus outputs).
struct LoudnessMeters {
    private(set) var enabled: Bool
    let routeGroupBase: Int32
    private(set) var worker: LoudnessWorker?
    private var targets: [LoudnessWorker.Target] = []

    init(enabled: Bool, maxInputChannels: Int) {
        self.enabled = enabled
        routeGroupBase = Int32(maxInputChannels)
    }

    func group(of app: AppState) -> Int32 {
        enabled ? app.meterSlots.first ?? -1 : -1
    }

    func group(of route: RouteState) -> Int32 {
        enabled ? route.meterSlots.first.map { routeGroupBase + $0 } ?? -1 : -1
    }

    /// After a plan went out: the worker runs at the server's rate, and meters every app and
    /// route whose channels are all tapped now.
    mutating func follow(apps: [AppState], routes: [RouteState], engine: Engine, sampleRate: Int) {
        guard enabled else { return }
        if worker?.sampleRate != sampleRate {
            worker?.stop()
            let fresh = LoudnessWorker(sampleRate: sampleRate)
            fresh.start()
            worker = fresh
            targets = []
        }
        var now: [LoudnessWorker.Target] = []
        for app in apps where !app.ports.isEmpty {
            let taps = app.meterSlots.compactMap { engine.loudnessTap(input: $0) }
            if taps.count == app.meterSlots.count { now.append(.init(kind: .app, name: app.name, taps: taps)) }
        }
        for route in routes where !route.ports.isEmpty {
            let taps = route.meterSlots.compactMap { engine.loudnessTap(output: $0) }
            if taps.count == route.meterSlots.count { now.append(.init(kind: .route, name: route.name, taps: taps)) }
        }
        if now != targets {
            targets = now
            worker?.setTargets(now)
        }
    }

    /// Meters from the next plan on, or stops metering; true when that changes the plan's taps.
    mutating func setEnabled(_ on: Bool) -> Bool {
        guard on != enabled else { return false }
        enabled = on
        if !on { stop() }
        return true
    }

    func reading(app name: String) -> LoudnessWorker.Reading? { worker?.reading(.app, name) }
    func reading(route name: String) -> LoudnessWorker.Reading? { worker?.reading(.route, name) }

    mutating func stop() {
        worker?.stop()
        worker = nil
        targets = []
    }
}
