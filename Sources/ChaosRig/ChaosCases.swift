/// The schedules that found a defect, kept so they can be played again (`make chaos-cases`, or
/// `duckchaos --cases`): each seed on its server for as long as it took, plus a margin. Each
/// defect also has a regression test of its own, in the suite of the code it was in.
public struct ChaosCase: Sendable {
    public var seed: UInt64
    /// `jackd` or `pipewire`.
    public var server: String
    public var seconds: Double
    public var found: String

    public static let all = [
        ChaosCase(seed: 2611, server: "jackd", seconds: 70,
                  found: "a reload adding an app as the server died left the app out until a restart (ReloadTests.reloadAsServerDies)"),
        ChaosCase(seed: 7, server: "pipewire", seconds: 160,
                  found: "a selection its route's going cleared was not saved (RouteSelectionTests.clearedSelectionSaved)"),
        ChaosCase(seed: 2811, server: "jackd", seconds: 1140,
                  found: "devices back after a server restart taken out of the order they came, the last one losing (RoutePresenceTests)"),
        ChaosCase(seed: 2811, server: "jackd", seconds: 1500,
                  found: "a TCP subscriber reset as a notification went out aborted the router (SubscriberResetTests); played after the fix above"),
        ChaosCase(seed: 888_447_386, server: "jackd", seconds: 45,
                  found: "the harness's own: an OSC-registered app's tone connected after it was made active, judged a click of the router's (ChaosTests.toneJoiningMidWave)"),
    ]
}
