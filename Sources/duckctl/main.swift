import ArgumentParser
import BuildInfo
import Foundation
import OSCTransport

/// `duckctl`: drive a running duckrouter from a shell. Every subcommand sends one OSC message and
/// prints the reply; an `/error` reply prints the code and message and exits with 1, no reply
/// within the timeout exits with 2.
struct DuckCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duckctl",
        abstract: "Control a running duckrouter over OSC.",
        discussion: """
            Connection options go before or after the subcommand (duckctl --port 19951 state, \
            duckctl state --port 19951). Negative numbers are values, not options (duckctl gain -6). \
            Exit codes: 0 on /reply, 1 on /error (code and message printed), 2 when the router \
            does not answer in time or cannot be reached, 64 for bad arguments. \
            docs/OSC.md (installed in /usr/share/doc/duckrouter/docs, or PREFIX/share/doc) \
            describes every OSC path these commands use. Environment: DUCKROUTER_HOST and \
            DUCKROUTER_PORT, the router to talk to; NO_COLOR, no colour in duckctl status.
            """,
        version: BuildInfo.version,
        subcommands: [Status.self, State.self, Register.self, Activate.self, Deactivate.self, Unregister.self,
                      Volume.self, Gain.self, Silent.self, RouteCommand.self, Interrupt.self,
                      Remote.self, Duck.self, SceneCommand.self, CueCommand.self, TimelineCommand.self, Send.self, Paths.self, Watch.self, Page.self])

    /// Accepted before the subcommand as well as after it: the parser gives what it finds here to
    /// the subcommand's own `Connection` too.
    @OptionGroup var connection: Connection
}

DuckCtl.main(NegativeNumbers.protect(Array(CommandLine.arguments.dropFirst())))
