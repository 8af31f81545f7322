/// How an app's channels land on a route's channels when nothing more specific is said:
/// a mono app feeds every route channel; otherwise app channel `c` feeds route channel
/// `c mod routeChannels` (stereo to stereo is L→L, R→R; a 6-channel app folds onto a stereo route).
enum ChannelMap {
    /// For each route channel, the app channels that feed it.
    static func feeds(appChannels: Int, routeChannels: Int) -> [[Int]] {
        var feeds = Array(repeating: [Int](), count: routeChannels)
        guard appChannels > 0, routeChannels > 0 else { return feeds }
        if appChannels == 1 {
            for k in 0..<routeChannels { feeds[k] = [0] }
            return feeds
        }
        for c in 0..<appChannels { feeds[c % routeChannels].append(c) }
        return feeds
    }

    /// Which sources go to which app input: the i-th matching source port feeds input
    /// `i mod channels` (JACK sums several sources into one input).
    static func sourceAssignments(sources: [String], channels: Int) -> [(source: String, channel: Int)] {
        guard channels > 0 else { return [] }
        return sources.enumerated().map { ($1, $0 % channels) }
    }
}
