import OSCTransport
import Policy

/// Observation and the router's own services: subscriptions, meters, `/state`, `/ping`,
/// `/rights` and the page (docs/OSC.md, "Paths"). Not controls: the OSCQuery namespace leaves
/// them out.
extension Vocabulary {
    static let serviceRows: [PathRow] = [
        PathRow("/subscribe", .writeOnly, inNamespace: false, arguments: "[s url]", reply: "s url",
                "all notifications to that address (default: the sender)", example: [],
                decode: { a, _ in .subscribe(url: try a.optionalURL()) }),
        PathRow("/unsubscribe", .writeOnly, inNamespace: false, arguments: "[s url]", reply: "s url",
                "no more notifications to that address", example: [],
                decode: { a, _ in .unsubscribe(url: try a.optionalURL()) }),
        PathRow("/meters", .writeOnly, inNamespace: false, arguments: "[f Hz], [s url]", reply: "f Hz, s url",
                "peak meters at up to 20 Hz", example: [.float(0)], decode: { a, _ in
                    let rate = try a.optionalNumber("rate in Hz") ?? 20
                    guard rate >= 0 else { throw a.refusal("rate in Hz", "expected 0 (stop) or more (above 20 means 20), got \(rate)") }
                    return .meters(url: try a.optionalURL(), rate: min(rate, 20))
                }),
        PathRow("/meters/loudness", .writeOnly, inNamespace: false, arguments: "[f Hz], [s url]", reply: "f Hz, s url",
                "loudness meters (EBU R 128) at up to 10 Hz", example: [.float(0)], decode: { a, _ in
                    let rate = try a.optionalNumber("rate in Hz") ?? 10
                    guard rate >= 0 else { throw a.refusal("rate in Hz", "expected 0 (stop) or more (above 10 means 10), got \(rate)") }
                    return .loudnessMeters(url: try a.optionalURL(), rate: min(rate, 10))
                }),
        PathRow("/meters/levels", .writeOnly, inNamespace: false, arguments: "[f Hz], [s url]", reply: "f Hz, s url",
                "peak and RMS meters at up to 20 Hz", example: [.float(0)], decode: { a, _ in
                    let rate = try a.optionalNumber("rate in Hz") ?? 20
                    guard rate >= 0 else { throw a.refusal("rate in Hz", "expected 0 (stop) or more (above 20 means 20), got \(rate)") }
                    return .levelMeters(url: try a.optionalURL(), rate: min(rate, 20))
                }),
        PathRow("/state", .none, inNamespace: false, arguments: "—", reply: "s json",
                "the whole state as JSON", example: [], decode: { _, _ in .state }),
        PathRow("/timeline", .none, inNamespace: false, arguments: "[i after]", reply: "s json",
                "what happened lately (activations, interruptions, ducks, routes, scenes, the JACK server, xruns), after that event's number",
                example: [], decode: { a, _ in
                    let after = try a.optionalInteger("after (an event's number)") ?? 0
                    guard after >= 0 else { throw a.refusal("after (an event's number)", "expected 0 or more, got \(after)") }
                    return .timeline(after: after)
                }),
        PathRow("/rights", .none, inNamespace: false, arguments: "—", reply: "s `admin`/`owner`, s `osc.admin`/`key`/`osc.allow`",
                "what the sender may do and why", example: [], decode: { _, _ in .rights }),
        PathRow("/page", .none, inNamespace: false, arguments: "—", reply: "s address, s key file",
                "the control page's address without its key, and the file that keeps the key", example: [],
                decode: { _, _ in .page }),
        PathRow("/page/key/rotate", .none, inNamespace: false, arguments: "[s key]", reply: "s key file",
                "a new key for the control page", example: nil,
                decode: { a, _ in .rotatePageKey(key: try a.optionalString("key")) }),
        PathRow("/ping", .none, inNamespace: false, arguments: "[i token]", reply: "s JACK client name [, i token]",
                "changes nothing: answers with the router's JACK client name (and the token)", example: [],
                decode: { a, _ in .ping(token: try a.optionalInteger("token")) }),
    ]
}
