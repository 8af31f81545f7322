// swift-tools-version:6.1
import PackageDescription

// Module boundaries (docs/ARCHITECTURE.md, "Modules"): exactly one module imports CJack (JackHost),
// the Engine is Swift and real-time safe (its only C: the floating-point control register in
// CFloatEnvironment, the eventfd in CWake, the vector builds of the peak scan in CSignalScan; the
// compiler's @_noLocks checks do not reach into them), executables only wire modules together.
// Built with -O in debug builds too (preconditions and overflow checks stay; only assert() goes):
// the Engine (why: at its target) and the control plane (Policy, RouterCore, OSCTransport, OSCControl), which the tests drive at real
// rates on two shared cores: the 60 s soak's 1,000 OSC messages a second took 49 % of a core
// unoptimised, 29 % optimised (release: 20 %), and answers went missing on a loaded CI machine.
let optimisedInDebug: [SwiftSetting] = [.unsafeFlags(["-O"])]

let package = Package(
    name: "duckrouter",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "duckrouter", targets: ["duckrouter"]),
        .executable(name: "duckctl", targets: ["duckctl"]),
        .executable(name: "duckbench", targets: ["duckbench"]),
        .executable(name: "oscbench", targets: ["oscbench"]),
        .executable(name: "ducksoak", targets: ["ducksoak"]),
        .executable(name: "duckhostile", targets: ["duckhostile"]),
        .executable(name: "duckchaos", targets: ["duckchaos"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The HTTP server for OSCQuery (docs/HTTP.md); no traits: neither swift-configuration
        // nor the full-Foundation extras are used.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        // OSCQuery's WebSocket (LISTEN, path notifications, OSC in binary frames).
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // NIOHTTPTypes: the HTTP parts the connection gate sees (already resolved through Hummingbird).
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // System libraries, found through pkg-config, with non-variadic shims.
        .systemLibrary(name: "CJack", pkgConfig: "jack",
                       providers: [.apt(["libjack-jackd2-dev"])]),
        .systemLibrary(name: "CLiblo", pkgConfig: "liblo",
                       providers: [.apt(["liblo-dev"])]),
        .systemLibrary(name: "CAvahi", pkgConfig: "avahi-client",
                       providers: [.apt(["libavahi-client-dev"])]),
        .systemLibrary(name: "CEbur128", pkgConfig: "libebur128",
                       providers: [.apt(["libebur128-dev"])]),

        // EBU R 128 loudness (libebur128) of apps and routes, off the process thread (issue 19).
        .target(name: "Loudness", dependencies: ["CEbur128", "Engine"]),

        // The real-time engine: mix plans, gain ramps, the mix kernel family, meters, SPSC queues.
        // Optimised in debug builds too: the process callback must meet JACK's deadline in the
        // integration tests (256 stereo apps take 5.5 ms a cycle unoptimised, over a 5.3 ms period).
        .target(name: "Engine", dependencies: ["CFloatEnvironment", "CWake", "CSignalScan"], swiftSettings: optimisedInDebug),
        // The calling thread's floating-point control register: flush-to-zero and
        // denormals-are-zero for the process thread. Imported by Engine (and its tests and bench).
        .target(name: "CFloatEnvironment"),
        // An eventfd the audio thread signals to wake the control side's level watching after a
        // quiet stretch (Engine.levelWakeDescriptor).
        .target(name: "CWake"),
        // The peak-and-finite scan of every buffer the engine reads or writes, built for the
        // baseline, SSE4.1 and AVX2 and chosen at load (SignalGuard.peakIfFinite). Optimised in
        // debug builds too, as the engine is.
        .target(name: "CSignalScan", cSettings: [.unsafeFlags(["-O2", "-fno-fast-math"])]),
        // The plain C reference kernel the Swift kernels are benchmarked against (built with -O3).
        .target(name: "CMixReference",
                cSettings: [.unsafeFlags(["-O3", "-fno-fast-math"])]),

        // The JACK client: lifecycle, ports, connections, callbacks. The only importer of CJack.
        .target(name: "JackHost", dependencies: ["CJack", "Engine"]),
        // The rules of audio sessions: pure Swift, no C, no I/O, no clock; events in, effects out.
        .target(name: "Policy", swiftSettings: optimisedInDebug),
        // OSC packets and sockets: liblo decodes and encodes, our sockets carry. The only
        // importer of CLiblo.
        .target(name: "OSCTransport", dependencies: ["CLiblo"], swiftSettings: optimisedInDebug),
        // The control vocabulary (docs/OSC.md): every path once, with its arguments, reply, access,
        // owner rule and OSCQuery attributes, and the decoder of each; read by every front end.
        .target(name: "ControlVocabulary", dependencies: ["OSCTransport", "Policy"], swiftSettings: optimisedInDebug),
        // The OSC server (docs/OSC.md): runs commands, access control, replies, notifications.
        .target(name: "OSCControl", dependencies: [
            "ControlVocabulary", "Engine", "OSCTransport", "Policy", "RouterCore", "SessionStore",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: optimisedInDebug),
        // OSCQuery over HTTP (docs/HTTP.md): the namespace document built from the control plane,
        // served by Hummingbird off the control queue, through the same command path as OSC.
        .target(name: "HTTPControl", dependencies: [
            "ControlVocabulary", "OSCTransport", "Policy", "SessionStore",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
        ], resources: [.copy("Resources/ui")]),
        // Zeroconf: the router's OSC and OSCQuery services published through the avahi daemon.
        // The only importer of CAvahi.
        .target(name: "Zeroconf", dependencies: ["CAvahi", .product(name: "Logging", package: "swift-log")]),
        // Session files: loading and validation, the state file, and the NSM client.
        .target(name: "SessionStore", dependencies: ["Policy", "OSCTransport"]),
        // The control thread: turns the session and runtime changes into mix plans.
        .target(name: "RouterCore", dependencies: [
            "Engine", "JackHost", "Loudness", "Policy", "SessionStore",
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: optimisedInDebug),

        // Remote routes' helpers beside the router (docs/NETWORK.md): the zita-njbridge senders the
        // daemon runs and supervises, and the watches of their far ends over OSC.
        .target(name: "RemoteRoutes", dependencies: [
            "OSCTransport", "SessionStore", .product(name: "Logging", package: "swift-log"),
        ]),

        // The version both executables and the Debian package give (the Makefile reads it).
        .target(name: "BuildInfo"),
        // Readiness, reloads and status told to systemd (sd_notify's datagram, no libsystemd).
        .target(name: "ServiceNotify"),

        .executableTarget(name: "duckrouter", dependencies: [
            "RouterCore", "SessionStore", "JackHost", "OSCControl", "HTTPControl", "Zeroconf", "RemoteRoutes",
            "BuildInfo", "ServiceNotify",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // A command-line OSC client for people: duckctl state, duckctl activate nav, duckctl watch.
        .executableTarget(name: "duckctl", dependencies: [
            "ControlVocabulary", "OSCTransport", "Policy", "SessionStore", "BuildInfo",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .executableTarget(name: "duckbench", dependencies: [
            "Engine", "CMixReference", "CFloatEnvironment",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // The OSC control path of a running router, measured from outside: command latency to the
        // first moved output sample, and sustained messages per second (make bench).
        // A rig of private JACK servers (jackd or PipeWire), clients that play and capture
        // audio through real ports, and the processes around them: for the tests, the
        // benchmarks, the soak and the hostile run alike.
        .target(name: "JackRig", dependencies: ["JackHost", "Engine"]),
        .executableTarget(name: "oscbench", dependencies: [
            "JackHost", "JackRig", "OSCTransport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // A long run under random valid and invalid OSC and app churn (make soak, and 60 s in make test).
        .executableTarget(name: "ducksoak", dependencies: [
            "JackHost", "JackRig", "OSCTransport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // The router under hostile traffic from a refused and an allowed host, on every listener (make hostile).
        .executableTarget(name: "duckhostile", dependencies: [
            "JackHost", "JackRig", "OSCTransport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // The chaos run (make chaos, and 90 s in make test): a seeded schedule of faults around
        // the router, a model of what should be heard and kept, and a check after each step.
        .target(name: "ChaosRig", dependencies: ["JackHost", "JackRig", "OSCTransport"]),
        .executableTarget(name: "duckchaos", dependencies: [
            "ChaosRig", "JackRig",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // libFuzzer targets (make fuzz). Built with -sanitize=fuzzer they fuzz; built normally they
        // replay a corpus once (the weak driver in CFuzzerDriver), which the tests do.
        .target(name: "CFuzzerDriver"),
        .executableTarget(name: "FuzzSessionFile", dependencies: ["SessionStore", "CFuzzerDriver"]),
        .executableTarget(name: "FuzzOSC", dependencies: ["OSCTransport", "ControlVocabulary", "CFuzzerDriver"]),
        .executableTarget(name: "FuzzOSCQuery", dependencies: ["HTTPControl", "CFuzzerDriver"]),
        .executableTarget(name: "FuzzHTTPWire", dependencies: [
            "HTTPControl", "OSCTransport", "CFuzzerDriver",
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
        ]),

        // Test support: a malloc/free interposer that counts calls made on one chosen thread.
        .target(name: "CAllocCounter", path: "Tests/CAllocCounter"),

        .testTarget(name: "EngineTests", dependencies: ["Engine", "CMixReference", "CFloatEnvironment", "CAllocCounter"]),
        .testTarget(name: "JackHostTests", dependencies: ["JackHost", "CJack", "JackRig", "CAllocCounter"]),
        .testTarget(name: "PolicyTests", dependencies: ["Policy"]),
        .testTarget(name: "LoudnessTests", dependencies: ["Loudness", "Engine"]),
        .testTarget(name: "RouterCoreTests", dependencies: ["RouterCore", "Engine", "Policy", "SessionStore"]),
        .testTarget(name: "SessionStoreTests", dependencies: ["SessionStore"]),
        .testTarget(name: "OSCTransportTests", dependencies: ["OSCTransport", "CAllocCounter"]),
        .testTarget(name: "RemoteRoutesTests", dependencies: [
            "RemoteRoutes", "OSCTransport", "SessionStore",
            .product(name: "Logging", package: "swift-log"), .product(name: "InMemoryLogging", package: "swift-log"),
        ]),
        .testTarget(name: "ControlVocabularyTests", dependencies: ["ControlVocabulary", "OSCTransport", "Policy"]),
        .testTarget(name: "OSCControlTests", dependencies: ["ControlVocabulary", "OSCControl", "OSCTransport", "Policy", "RouterCore"]),
        .testTarget(name: "HTTPControlTests", dependencies: [
            "HTTPControl", "OSCTransport", "Policy", "SessionStore",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "IntegrationTests", dependencies: [
            "RouterCore", "JackHost", "Engine", "SessionStore", "JackRig", "CAllocCounter", "OSCTransport", "Loudness",
            "BuildInfo", "ControlVocabulary", "Policy", "ChaosRig", "OSCControl",
        ], exclude: ["Resources"]),
    ]
)
