@testable import OSCControl
import ControlVocabulary
import Policy
import RouterCore
import Testing

/// CommandResolver: the two rules of the OSC layer that need the state, against a real policy.
@Suite("CommandResolver: the route /system/volume acts on, and what a registration keeps")
struct CommandResolverTests {
    /// Routes speaker (current) and headphones; music declared as a session file would:
    /// playback with remote commands, resumed by the router.
    static func policy() throws -> PolicyEngine {
        var policy = PolicyEngine(routes: [("speaker", 1), ("headphones", 1)])
        try policy.apply(.register(AppConfiguration(name: "music", category: .playback,
                                                    remoteCommands: [.play, .pause, .nextTrack], resume: .auto)))
        return policy
    }

    /// A policy the resolver reads, counting the reads, that tests can change in between.
    final class Reader: @unchecked Sendable {
        var policy: PolicyEngine
        var reads = 0
        init(_ policy: PolicyEngine) { self.policy = policy }
        func resolver() -> CommandResolver { CommandResolver(reading: { self.reads += 1; return self.policy.state }) }
    }

    private static let register = ControlCommand.change(.register(AppConfiguration(name: "music", category: .playback)), channels: nil)

    @Test("/system/volume is bound to the route current when it arrives, however the route moves after")
    func systemVolumeBindsTheCurrentRoute() throws {
        let reader = Reader(try Self.policy())
        var resolver = reader.resolver()
        let first = try resolver.resolve(.systemVolume(.position(0.5)))
        #expect(first.command == .change(.setSystemVolume(route: "speaker", .position(0.5)), channels: nil))
        #expect(first.change == Router.Change(.setSystemVolume(route: "speaker", .position(0.5))))
        // Another route becomes current while the bundle waits: what was bound stays bound, and the
        // rest of the bundle reads the same moment.
        try reader.policy.apply(.selectRoute("headphones"))
        let second = try resolver.resolve(.systemVolume(.decibels(-6)))
        #expect(second.change == Router.Change(.setSystemVolume(route: "speaker", .decibels(-6))))
        #expect(reader.reads == 1)
        // A message that arrives now reads the new route.
        var later = reader.resolver()
        #expect(try later.resolve(.systemVolume(.position(1))).change == Router.Change(.setSystemVolume(route: "headphones", .position(1))))
    }

    @Test("/system/volume with no route available is refused with -4")
    func noRoute() throws {
        var resolver = CommandResolver(reading: { PolicyEngine(routes: []).state })
        #expect(throws: PolicyError(.unknownRoute, "no route is available")) { try resolver.resolve(.systemVolume(.position(0.5))) }
    }

    @Test("registering an app that exists changes its category, options and mode, and keeps its remote commands, resume and activation")
    func registerExisting() throws {
        let reader = Reader(try Self.policy())
        try reader.policy.apply(.setActivation(app: "music", .signal, nil))
        let command = ControlCommand.change(.register(AppConfiguration(name: "music", category: .playback, options: [.mixWithOthers])),
                                            channels: 4)
        var resolver = reader.resolver()
        let resolved = try resolver.resolve(command)
        #expect(resolved.command == command, "answered as a registration (reply, ownership)")
        #expect(resolved.change == Router.Change(.setCategory(app: "music", category: .playback, options: [.mixWithOthers], mode: .default)))
        try reader.policy.apply(try #require(resolved.change).event)
        let configuration = try #require(reader.policy.state.app("music")).configuration
        #expect(configuration == AppConfiguration(name: "music", category: .playback, options: [.mixWithOthers],
                                                  remoteCommands: [.play, .pause, .nextTrack], resume: .auto, activation: .signal))
    }

    @Test("registering a new app registers it with the defaults and its channel count")
    func registerNew() throws {
        let reader = Reader(try Self.policy())
        var resolver = reader.resolver()
        let command = ControlCommand.change(.register(AppConfiguration(name: "synth", category: .ambient)), channels: 1)
        #expect(try resolver.resolve(command) == .init(command: command, change: Router.Change(.register(AppConfiguration(name: "synth", category: .ambient)), channelCount: 1)))
    }

    @Test("in one bundle, a registration sees the apps registered or unregistered before it")
    func bundleOrder() throws {
        let reader = Reader(try Self.policy())
        var resolver = reader.resolver()
        let synth = ControlCommand.change(.register(AppConfiguration(name: "synth", category: .playback)), channels: nil)
        #expect(try resolver.resolve(synth).change?.event == .register(AppConfiguration(name: "synth", category: .playback)))
        #expect(try resolver.resolve(synth).change?.event == .setCategory(app: "synth", category: .playback, options: [], mode: .default),
                "registered a moment ago in the same bundle")
        #expect(try resolver.resolve(.change(.unregister(app: "music"), channels: nil)).change?.event == .unregister(app: "music"))
        #expect(try resolver.resolve(Self.register).change?.event == .register(AppConfiguration(name: "music", category: .playback)),
                "unregistered earlier in the bundle: registered afresh")
        #expect(try resolver.resolve(.change(.unregister(app: "synth"), channels: nil)).change?.event == .unregister(app: "synth"))
        #expect(try resolver.resolve(synth).change?.event == .register(AppConfiguration(name: "synth", category: .playback)))
        #expect(reader.reads == 1)
    }

    @Test("commands that need no state do not read it, and those the router does not run have no change")
    func noReading() throws {
        let reader = Reader(try Self.policy())
        var resolver = reader.resolver()
        for command: ControlCommand in [.change(.setAppVolume(app: "music", .position(0.5)), channels: nil),
                                        .change(.activate(app: "music"), channels: nil),
                                        .change(.unregister(app: "music"), channels: nil),
                                        .change(.selectRoute("headphones"), channels: nil)] {
            #expect(try resolver.resolve(command).change != nil)
        }
        for command: ControlCommand in [.setNotify(app: "music", url: ""), .query(.init("/system/volume")), .state, .subscribe(url: nil),
                                        .unsubscribe(url: nil), .meters(url: nil, rate: 20)] {
            #expect(try resolver.resolve(command) == .init(command: command, change: nil))
        }
        #expect(reader.reads == 0)
    }
}
