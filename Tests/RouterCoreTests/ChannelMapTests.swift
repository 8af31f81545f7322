import Testing
@testable import RouterCore

@Suite("Channel maps and downmix")
struct ChannelMapTests {
    /// Route channel → [(app channel, gain)], gains rounded to 4 decimals.
    static func table(_ app: Int, _ route: Int) -> [[String]] {
        ChannelMap.feeds(appChannels: app, routeChannels: route).map { $0.map { "\($0.appChannel):\(String(format: "%.4f", $0.gain))" } }
    }

    @Test("mono feeds every route channel at unity")
    func mono() {
        #expect(Self.table(1, 2) == [["0:1.0000"], ["0:1.0000"]])
        #expect(Self.table(1, 6) == Array(repeating: ["0:1.0000"], count: 6))
    }

    @Test("as many channels as the route: channel for channel; fewer: the first route channels")
    func straight() {
        #expect(Self.table(2, 2) == [["0:1.0000"], ["1:1.0000"]])
        #expect(Self.table(2, 6) == [["0:1.0000"], ["1:1.0000"], [], [], [], []])
    }

    @Test("5.1 onto stereo: L + C·0.707 + Ls·0.707, R + C·0.707 + Rs·0.707, no LFE (ITU-R BS.775)")
    func surroundToStereo() {
        #expect(Self.table(6, 2) == [["0:1.0000", "2:0.7071", "4:0.7071"], ["1:1.0000", "2:0.7071", "5:0.7071"]])
    }

    @Test("5.1 onto mono: the stereo downmix at -3 dB a side (centre 1, fronts 0.707, surrounds 0.5, no LFE)")
    func surroundToMono() {
        #expect(Self.table(6, 1) == [["0:0.7071", "1:0.7071", "2:1.0000", "4:0.5000", "5:0.5000"]])
    }

    @Test("other folds: channels meeting on one route channel get 1/√k each (stereo onto mono -3 dB, quad onto stereo -3 dB)")
    func otherFolds() {
        #expect(Self.table(2, 1) == [["0:0.7071", "1:0.7071"]])
        #expect(Self.table(4, 2) == [["0:0.7071", "2:0.7071"], ["1:0.7071", "3:0.7071"]])
        #expect(Self.table(3, 2) == [["0:0.7071", "2:0.7071"], ["1:1.0000"]])
    }

    @Test("folds other than 5.1's add at most √k for identical content on the k channels that meet")
    func foldGainBounded() {
        for app in 1...8 {
            for route in 1...8 {
                for feeds in ChannelMap.feeds(appChannels: app, routeChannels: route) {
                    let sum = feeds.reduce(Float(0)) { $0 + $1.gain }
                    // 5.1's fronts stay at unity with centre and a surround at -3 dB, as BS.775 has
                    // it (1 + 2·0.707 onto stereo, 0.707·2 + 1 + 0.5·2 onto mono); every other fold
                    // stays within √k.
                    let bound: Float = app == 6 && route <= 2 ? (route == 2 ? 2.4143 : 3.4143) : Float(feeds.count).squareRoot() + 1e-4
                    #expect(sum <= bound, "\(app) → \(route): \(sum)")
                }
            }
        }
    }
}
