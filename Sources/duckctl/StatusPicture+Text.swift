import Foundation

/// `duckctl status` as text: a tree in the manner of `wpctl status`, columns aligned, states in
/// colour on a terminal.
///
///     duckrouter on JACK server 'default': connected, 48000 Hz, 256 frames, 0 xruns
///      ├─ Routes:
///      │  *  speaker  available    vol 1.00  heard    0.0 dB   peak  -12.0 dBFS
///      ├─ Apps:
///      │     music  playback  active       vol 1.00  heard    0.0 dB   peak  -12.0 dBFS
///      │     game   ambient   ducked       vol 1.00  heard  -14.0 dB   peak  -30.0 dBFS   ducked by nav
///      └─ System:
///            silent switch off, now playing music, no outside interruption
///            ducking -14 dB, attack 100 ms, release 500 ms
extension StatusPicture {
    func text(colored: Bool) -> String {
        let paint = Paint(enabled: colored)
        var lines: [String] = []
        let jackState = jack == "connected" ? paint.green(jack) : paint.red(jack)
        lines.append(paint.bold("\(client)") + " on JACK server '\(server)': \(jackState), \(sampleRate) Hz, "
            + "\(period) frames, \(xruns) xrun\(xruns == 1 ? "" : "s")")

        lines.append(" ├─ Routes:")
        let routeWidth = routes.map(\.name.count).max() ?? 0
        if routes.isEmpty { lines.append(" │     (none)") }
        for route in routes {
            let mark = route.current ? paint.green("*") : " "
            let name = pad(route.name, routeWidth)
            let availability = pad(route.available ? "available" : "unavailable", 11)
            lines.append(" │  \(mark)  \(route.current ? paint.bold(name) : name)  "
                + "\(route.available ? availability : paint.dim(availability))  "
                + "\(volume(route.volume, route.gainDb))   \(peak(route.peakDbfs))")
        }

        lines.append(" ├─ Apps:")
        let appWidth = apps.map(\.name.count).max() ?? 0
        let categoryWidth = apps.map(\.category.count).max() ?? 0
        if apps.isEmpty { lines.append(" │     (none)") }
        for app in apps {
            let state = paint.state(app.state, pad(app.state, 11))
            var line = " │     \(pad(app.name, appWidth))  \(pad(app.category, categoryWidth))  \(state)  "
                + "\(volume(app.volume, app.gainDb))   \(peak(app.peakDbfs))"
            if !app.why.isEmpty { line += "   " + app.why }
            lines.append(line)
        }

        lines.append(" └─ System:")
        var facts = ["silent switch \(system.silent ? paint.yellow("on") : "off")"]
        facts.append(system.nowPlaying.map { "now playing \($0)" } ?? "nothing playing")
        facts.append(system.interruptions.isEmpty
            ? "no outside interruption"
            : paint.red("interrupted by \(system.interruptions.joined(separator: ", "))"))
        lines.append("       " + facts.joined(separator: ", "))
        var ducking = "ducking \(decibels(system.duckingLevelDb)) dB, attack \(Int(system.duckingAttackMs.rounded())) ms, "
            + "release \(Int(system.duckingReleaseMs.rounded())) ms"
        if let target = system.duckingTargetLu { ducking += ", target \(decibels(target)) LU under the ducker" }
        lines.append("       " + ducking)
        return lines.map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }.joined(separator: "\n") + "\n"
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// The slider position, and the gain it is heard at now (volume, ducking, state: -inf while
    /// it is not heard).
    private func volume(_ slider: Double, _ gainDb: Double) -> String {
        let dB = gainDb <= -144 ? "-inf" : decibels(gainDb)
        return "vol " + String(format: "%.2f", slider) + "  heard " + String(repeating: " ", count: max(0, 6 - dB.count)) + dB + " dB"
    }

    private func peak(_ dBFS: Double) -> String {
        dBFS <= -144 ? "peak   -inf     " : "peak " + String(format: "%6.1f", dBFS) + " dBFS"
    }

    private func decibels(_ value: Double) -> String { String(format: "%.1f", value) }
}

/// ANSI colours, or nothing when colour is off.
private struct Paint {
    var enabled: Bool

    func bold(_ text: String) -> String { wrap(text, "1") }
    func dim(_ text: String) -> String { wrap(text, "2") }
    func red(_ text: String) -> String { wrap(text, "31") }
    func green(_ text: String) -> String { wrap(text, "32") }
    func yellow(_ text: String) -> String { wrap(text, "33") }

    /// An app's state in the colour that tells it at a glance (the text is padded already).
    func state(_ state: String, _ text: String) -> String {
        switch state {
        case "active": green(text)
        case "ducked": yellow(text)
        case "interrupted", "silenced": red(text)
        case "listening": wrap(text, "36")
        default: dim(text)
        }
    }

    private func wrap(_ text: String, _ code: String) -> String {
        enabled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}
