import Engine
import Foundation
import Policy
/// A snapshot of the router for people and tests: what exists, at what level, and how the audio
/// thread is doing.
public struct RouterStatus: Sendable, Equatable {
    public struct App: Sendable, Equatable {
        public var name: String
        public var ports: [String]
        /// `inactive`, `active`, `ducked`, `interrupted` or `silenced`.
        public var state: String
        /// Relative volume as a slider position 0...1 (cubic taper).
        public var volume: Double
        /// The gain the app is heard at (volume, ducking, audibility), in dB; -inf when silent.
        public var gainDecibels: Double
        /// Input peak per channel over the last meter interval, dBFS.
        public var peakDecibels: [Double]
        /// Its loudness (nil when not metered).
        public var loudness: LoudnessReading? = nil
        /// Every route it is ducked on, and why (empty when it is not ducked).
        public var ducks: [Duck] = []
    }

    /// One duck of an app on one route: who, by which rule, how deep now, and what was measured.
    public struct Duck: Sendable, Equatable {
        /// The route (`""`: the app plays to none now).
        public var route: String
        public var rule: AppliedDuckingRule
        /// The depth in force now, dB.
        public var depthDecibels: Double
        /// For a loudness-targeted duck, once measured: the ducker as heard and the ducked app
        /// as it would be heard undducked (LUFS, volumes included), and the difference heard now
        /// with the duck (LU).
        public var duckerLufs: Double? = nil
        public var duckedLufs: Double? = nil
        public var differenceLu: Double? = nil
    }

    /// EBU R 128 loudness, LUFS: over the last 400 ms (momentary) and 3 s (short-term); nil for
    /// silence, or before that much was heard.
    public struct LoudnessReading: Sendable, Equatable {
        public var momentary: Double?
        public var shortTerm: Double?
    }

    public struct Route: Sendable, Equatable {
        public var name: String
        public var ports: [String]
        public var destinations: [String]
        /// Whether the route's device is there (the session's routes start available).
        public var available: Bool
        /// For a remote route whose far end is watched: whether it answers now.
        public var farEndAnswers: Bool?
        /// How long until what the route's ports carry now is heard, in frames: the playback
        /// latency of what they feed, as JACK has it, plus a bridge's far end (`remote.latency`).
        /// nil while the router is off its server.
        public var latencyFrames: ClosedRange<UInt32>?
        public var volume: Double
        public var gainDecibels: Double
        public var peakDecibels: [Double]
        /// What the route carries: its loudness (nil when not metered).
        public var loudness: LoudnessReading? = nil
    }

    public var client: String
    public var server: String
    /// Whether the router is on its JACK server now; while it is not, how long it has been away.
    public var jackConnected: Bool
    /// While connected: how long no process cycle has run, once that is longer than half a second
    /// (or four periods); nil while cycles run. The watchdog gives the server up after
    /// `Router.Configuration.watchdogSeconds`.
    public var jackStalledSeconds: Double?
    public var jackDisconnectedSeconds: Double?
    /// Times the router joined its server again after losing it.
    public var reconnects: Int
    /// The process callback's own time per cycle, since start and over the last 10 to 20 seconds.
    public var processTime: ProcessTimeSummary
    public var recentProcessTime: ProcessTimeSummary
    /// Hand-offs that found the audio thread's plan queue full (the change waited, coalesced).
    public var planQueueFull: Int
    public var sampleRate: Int
    public var bufferSize: Int
    public var rampMilliseconds: Double
    public var apps: [App]
    public var routes: [Route]
    /// The route every app plays to (nil when none is available).
    public var currentRoute: String?
    /// The policy's whole state: sessions, configurations, volumes, ducking, routes.
    public var policy: PolicyState
    public var silentSwitch: Bool
    /// Outside interruptions in progress, oldest first.
    public var outsideInterruptions: [String]
    /// The app remote commands go to, if any.
    public var nowPlaying: String?
    /// Session saves the policy asked for since start (persistence arrives with session files).
    public var saveRequests: Int
    /// The newest plan handed to the audio thread, and the one it is using.
    public var publishedPlan: UInt64
    public var adoptedPlan: UInt64
    /// Mix cells alive (audible or fading).
    public var cells: Int
    public var cycles: UInt64
    public var xruns: Int
    /// Cycles JACK's frame clock went past without running the router's callback: xruns the
    /// server may not report (PipeWire 0.3.65 reports none to JACK clients).
    public var missedCycles: UInt64
    /// Where the newest of those cycles fell on JACK's frame clock (up to 16 gaps, oldest first).
    public var recentGaps: [Engine.FrameGap]
    public var nonFiniteInputBuffers: UInt64
    /// The JACK ports the router's client holds (0 while the server is away), and how many of them
    /// are spares: ports given up on JACK2, kept for the next app (`JackClient` "SparePorts").
    public var jackPorts = 0
    public var spareJackPorts = 0
    /// A request to the JACK server that has waited past its deadline (JackClient's
    /// `answerSeconds`) and still waits: until it returns, every change that asks the server is
    /// refused at once. nil while the server answers.
    public var jackUnanswered: UnansweredRequest?
    /// What of the session file, as last reloaded (SIGHUP), waits for a restart: its edits only a
    /// restart applies, and the steps the running router refused (`ReloadBacklog`).
    public var reloadPending: [String] = []

    public struct UnansweredRequest: Equatable, Sendable {
        public var request: String
        public var seconds: Double
    }

    /// The last state save the receiver could not write (nil: none since start).
    public var lastSaveFailure: SaveFailure?

    /// A state save that could not be written: when, why, and whether none has been written since.
    public struct SaveFailure: Equatable, Sendable {
        public var at: Date
        public var reason: String
        /// Nothing written since: the save is tried again (`StateKeeper`).
        public var retrying: Bool
        /// Failed hand-overs in a row.
        public var attempts: Int
    }
}

/// The peak of every channel of one app (its input) or route (its output) over a span, linear,
/// and while RMS is measured the sum of each channel's squares over the frames measured.
public struct PeakMeter: Sendable, Equatable {
    public enum Kind: String, Sendable { case app, route }
    public var kind: Kind
    public var name: String
    public var peaks: [Float]
    /// Per channel, the sum of the squares of its samples over `squaredFrames` frames; empty when
    /// RMS was not measured in the span.
    public var squares: [Double]
    public var squaredFrames: Int

    public init(kind: Kind, name: String, peaks: [Float], squares: [Double] = [], squaredFrames: Int = 0) {
        self.kind = kind
        self.name = name
        self.peaks = peaks
        self.squares = squares
        self.squaredFrames = squaredFrames
    }

    /// The RMS level of every channel, linear; nil when RMS was not measured in the span.
    public var rms: [Float]? {
        guard squaredFrames > 0, squares.count == peaks.count else { return nil }
        return squares.map { Float(($0 / Double(squaredFrames)).squareRoot()) }
    }
}

/// The loudness of one app (its input) or route (its output), EBU R 128, LUFS: momentary (the last
/// 400 ms) and short-term (the last 3 s); nil for silence or before that much was heard.
public struct LoudnessMeterReading: Sendable, Equatable {
    public var kind: PeakMeter.Kind
    public var name: String
    public var momentary: Double?
    public var shortTerm: Double?
}
