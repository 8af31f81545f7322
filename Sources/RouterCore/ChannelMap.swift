/// How an app's channels land on a route's channels when nothing more specific is said, and how
/// sources are spread over an app's inputs. Pure functions.
///
/// - A mono app feeds every route channel at unity.
/// - As many channels as the route: channel for channel (stereo to stereo is L→L, R→R).
/// - Fewer channels than the route: channel `c` feeds route channel `c`; the rest get nothing.
/// - 5.1 (L R C LFE Ls Rs, the ITU/SMPTE order) onto stereo: ITU-R BS.775 downmix,
///   L' = L + 0.707 C + 0.707 Ls, R' = R + 0.707 C + 0.707 Rs, LFE left out.
/// - Any other fold onto fewer channels: channel `c` feeds route channel `c mod n`, and the `k`
///   channels that meet on one route channel each get 1/√k (-3 dB for two), so uncorrelated
///   sources keep their power and no fold adds more than +3 dB for identical ones (stereo onto a
///   mono route: L and R at -3 dB each; 5.1 onto mono: the stereo downmix, then that).
enum ChannelMap {
    /// One app channel heard on a route channel, at a linear gain.
    struct Feed: Equatable {
        var appChannel: Int
        var gain: Float
    }

    /// -3 dB.
    static let minus3dB: Float = 0.70710677

    /// For each route channel, the app channels that feed it and at what gain.
    static func feeds(appChannels: Int, routeChannels: Int) -> [[Feed]] {
        var feeds = Array(repeating: [Feed](), count: max(routeChannels, 0))
        guard appChannels > 0, routeChannels > 0 else { return feeds }
        if appChannels == 1 {
            for k in 0..<routeChannels { feeds[k] = [Feed(appChannel: 0, gain: 1)] }
            return feeds
        }
        if appChannels <= routeChannels {
            for c in 0..<appChannels { feeds[c] = [Feed(appChannel: c, gain: 1)] }
            return feeds
        }
        if appChannels == 6 && routeChannels <= 2 {
            let stereo: [[Feed]] = [
                [Feed(appChannel: 0, gain: 1), Feed(appChannel: 2, gain: minus3dB), Feed(appChannel: 4, gain: minus3dB)],
                [Feed(appChannel: 1, gain: 1), Feed(appChannel: 2, gain: minus3dB), Feed(appChannel: 5, gain: minus3dB)],
            ]
            if routeChannels == 2 { return stereo }
            // Mono: both sides of the downmix at -3 dB, one gain per app channel.
            var mono: [Int: Float] = [:]
            for side in stereo { for feed in side { mono[feed.appChannel, default: 0] += feed.gain * minus3dB } }
            return [mono.keys.sorted().map { Feed(appChannel: $0, gain: mono[$0]!) }]
        }
        var folded = Array(repeating: [Int](), count: routeChannels)
        for c in 0..<appChannels { folded[c % routeChannels].append(c) }
        for k in 0..<routeChannels {
            let gain = folded[k].count > 1 ? 1 / Float(folded[k].count).squareRoot() : 1
            feeds[k] = folded[k].map { Feed(appChannel: $0, gain: gain) }
        }
        return feeds
    }

    /// Which sources go to which app input: the i-th matching source port feeds input
    /// `i mod channels` (JACK sums several sources into one input).
    static func sourceAssignments(sources: [String], channels: Int) -> [(source: String, channel: Int)] {
        guard channels > 0 else { return [] }
        return sources.enumerated().map { ($1, $0 % channels) }
    }
}
