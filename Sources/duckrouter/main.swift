import ArgumentParser
import BuildInfo

/// `duckrouter [run] SESSION` runs the daemon (the default); `duckrouter check FILE…` validates.
struct DuckRouterCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duckrouter",
        abstract: "A real-time audio mixer and ducking router for JACK, driven by audio-session rules.",
        discussion: """
            `duckrouter SESSION` (or `duckrouter run SESSION`) runs the router; \
            `duckrouter check FILE…` validates session files without starting. \
            `duckrouter run --help` lists the router's options.
            """,
        version: BuildInfo.version,
        subcommands: [Run.self, Check.self],
        defaultSubcommand: Run.self)
}

Signals.block()
DuckRouterCommand.main()
