import Policy
import Engine
import JackHost
import SessionStore

/// The records the control queue keeps of each app, route and the input route: their ports, meter
/// slots, patchbay rules and the gains the policy wants heard. Plain values, so a change
/// transaction can keep a copy and put it back.
///
/// Owned by `PortInventory`; read by the matrix, the patchbay, diagnostics and persistence.
/// Control queue only.
struct AppState {
    var name: String
    var channelCount: Int
    /// `<app>_in_<n>`; empty while the JACK server is away (registered again when it is back).
    var ports: [JackPort] = []
    var meterSlots: [Int32]
    /// Recording apps: `<app>_capture_<n>`, one per input channel, fed from the input route.
    /// Slots are kept while the server is away; the ports are registered again with the app's.
    var capturePorts: [JackPort] = []
    var captureSlots: [Int32] = []
    var connect: [PortPattern]
    /// Only `connect` sources may feed it: other connections are removed.
    var exclusive = false
    /// Linear gain the policy wants in the mix cells (ducking and audibility; the volume is the
    /// policy's, applied by the app's volume stage).
    var gain: Float = 0
    /// The gain on routes where a ducking rule for that route makes it differ from `gain`.
    var routeGains: [String: Float] = [:]
    /// How the volume stage moves to the policy's volume: the latest volume change's.
    var volumeChange = StageChange()
    /// The ramp of the latest gain change, until a plan carrying it is published.
    var pendingRamp: Int32?
    /// The silence after which an active ducking app releases its duck (ms).
    var unduckAfter: Double?
}

struct RouteState {
    var name: String
    var channelCount: Int
    /// `<route>_out_<n>`; empty while the JACK server is away.
    var ports: [JackPort] = []
    var meterSlots: [Int32]
    var destinations: [String]
    /// The route's system volume, linear, applied by its volume stage on what is mixed.
    var gain: Float
    /// How the volume stage moves there: the latest volume change's.
    var volumeChange = StageChange()
    var pendingRamp: Int32?
    /// Whether every destination port exists in the JACK graph (a route without destination
    /// ports always is). The route is available while present, enabled and its far end answers.
    var present = true
    /// When the last of its destination ports appeared: uptime (ns) before which the route is not
    /// taken as present, so the connections just made carry audio when audio moves there.
    var settlesAt: UInt64?
    /// What `/route/<route>/available` last said (for devices JACK cannot see); default yes.
    var enabled = true
    /// For a remote route whose far end is watched (a zita-njbridge route with `watch`): whether
    /// it answers (`Router.setFarEndAnswers`), false until it first does. nil: not watched.
    var farEndAnswers: Bool?
    /// Whether audio sent here is heard: its ports exist, and a watched far end answers.
    var reachable: Bool { present && farEndAnswers != false }
    /// Milliseconds this route hears its inputs late (look-ahead for talkover), 0: none.
    var lookahead: Double = 0
    /// Milliseconds the far end of a bridged route adds out of JACK's sight (`remote.latency`).
    var beyondMs: Double = 0
    /// `beyondMs` in frames at `sampleRate`.
    func beyondFrames(sampleRate: Int) -> UInt32 { UInt32(clamping: Int((beyondMs * Double(sampleRate) / 1000).rounded())) }
    /// How long until what the route's ports carry is heard, frames (what they feed, plus
    /// `beyondMs`), as last worked out (`Router.refreshRouteLatencies`); nil while unknown.
    var latencyFrames: ClosedRange<UInt32>?
}

/// The input route: `input_<n>`, fed by the session's `input.ports` (docs/SESSIONS.md, "Fields").
struct InputRoute {
    var sources: [String] = []
    var ports: [JackPort] = []
    var slots: [Int32] = []
}

/// An unregistered app whose ports stay until its fade has finished and no plan the audio
/// thread may still use reads them.
struct RetiringApp {
    var name: String
    /// The app channel its first port carries: 0 for a removed app, more for the channels an
    /// app dropped when it was registered again with fewer (`<app>_in_<firstChannel + 1>`…).
    var firstChannel = 0
    /// Empty once the server that had them went away.
    var ports: [JackPort]
    var meterSlots: [Int32]
    var capturePorts: [JackPort] = []
    var captureSlots: [Int32] = []
    /// The first published plan without any of its cells.
    var clearedInPlan: UInt64?
}

/// The latest change of a volume stage (an app's or a route's): its ramp and curve, and the serial
/// the engine tells one change from the next by (`VolumeTarget.serial`).
struct StageChange: Equatable {
    var rampFrames: Int32 = 1
    var curve: GainCurve = .linear
    var serial: UInt32 = 0
}

extension GainCurve {
    /// The engine's curve for the policy's.
    init(_ curve: FadeCurve) {
        switch curve {
        case .fader: self = .fader
        case .linear: self = .linear
        case .equalPower: self = .equalPower
        }
    }
}
