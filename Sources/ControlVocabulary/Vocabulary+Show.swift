import Foundation
import OSCTransport
import Policy

/// Scenes and the cue list (docs/OSC.md, "Scenes and cues").
extension Vocabulary {
    static let showRows: [PathRow] = [
        PathRow("/scene/recall", .writeOnly,
                [P("scene", .string), P("fade", .float, .numbers(Limits.fadeMilliseconds), unit: "time.millisecond"),
                 P("curve", .string, .words(FadeCurve.allCases.map(\.rawValue)))],
                arguments: "s scene, [f fade ms], [s curve]", reply: "s scene, f fade ms",
                "recalls a scene: its settings at once, its volumes over the fade (the scene's, unless given) along the curve",
                example: [.string("preshow")], decode: { a, _ in
                    let name = try a.nonEmptyString("scene")
                    let fade = try a.optionalNumber("fade in milliseconds")
                    let curve = try a.optionalString("curve").map { word throws(PolicyError) in try fadeCurve(word) }
                    return .change(.recallScene(name, fade: fade, curve: curve), channels: nil)
                }),
        PathRow("/scene/store", .writeOnly, scope: .admin, [P("scene", .string), P("only", .string)],
                arguments: "s scene, [s apps and routes]", reply: "s scene",
                "stores the settings as they are as a scene (admin): every app and route but the recall-safe, or those named (comma-separated)",
                example: [.string("snapshot")], decode: { a, _ in
                    let name = try a.nonEmptyString("scene")
                    let only = try a.optionalString("apps and routes, comma-separated").map { list in
                        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                    }
                    return .change(.storeScene(name, only: only), channels: nil)
                }),
        PathRow("/scene/delete", .writeOnly, scope: .admin, [P("scene", .string)],
                arguments: "s scene", reply: "s scene",
                "deletes a stored scene (admin): the session file's scene of that name is the one again",
                example: [.string("snapshot")], decode: { a, _ in .change(.deleteScene(try a.nonEmptyString("scene")), channels: nil) }),
        PathRow("/scene/list", .readOnly, inNamespace: false, arguments: "—", reply: "s scene …",
                "every scene's name: the session file's in order, then those only stored",
                example: nil, decode: { _, _ in ask() }, answer: { q in q.state.show.sceneNames.map { .string($0) } }),
        PathRow("/scene/current", .readOnly, inNamespace: false, arguments: "—", reply: "s scene, i fading",
                "the scene last recalled (\"\": none) and whether its fade is still running",
                example: nil, decode: { _, _ in ask() }, answer: { q in
                    [.string(q.state.show.currentScene ?? ""), .int32(q.state.show.fading ? 1 : 0)]
                }),
        PathRow("/cue/go", .none, arguments: "—", reply: "i cue, s scene",
                "fires the cue at the playhead (its scene, with its fade) and moves the playhead on",
                example: [], decode: { _, _ in .change(.cueGo, channels: nil) }),
        PathRow("/cue/back", .none, arguments: "—", reply: "i next cue, s scene",
                "moves the playhead back one cue, recalling nothing",
                example: [], decode: { _, _ in .change(.cueBack, channels: nil) }),
        PathRow("/cue/goto", .writeOnly, [P("cue", .int, .atLeast(1))],
                arguments: "i cue (from 1), or s scene", reply: "i next cue, s scene",
                "moves the playhead to a cue (by its number, or the first of a scene), recalling nothing",
                example: [.int32(1)], decode: { a, _ in
                    let place: CuePlace
                    if a.nextIsString {
                        place = .scene(try a.nonEmptyString("scene"))
                    } else {
                        let number = try a.number("cue number (from 1) or scene")
                        guard number == number.rounded(), abs(number) < 1e9 else {
                            throw PolicyError(.badArgument, "cue: expected a whole number from 1, got \(number)")
                        }
                        place = .number(Int(number))
                    }
                    return .change(.cueGoto(place), channels: nil)
                }),
        PathRow("/cue/state", .readOnly, inNamespace: false, arguments: "—", reply: "i cue, s scene, i next cue, s scene, i cues",
                "the cue last fired and the one at the playhead (0 and \"\": none), and how many cues there are",
                example: nil, decode: { _, _ in ask() }, answer: { q in cueState(q.state.show) }),
        // Last: the words above are not scene names (`Scene.reservedNames`).
        PathRow("/scene/<scene>", .readOnly, inNamespace: false, arguments: "—", reply: "s scene, f fade ms, s curve, i stored, s json",
                "one scene: its fade and curve, whether it was stored at run time, and what it sets (JSON, the session file's form)",
                example: nil, decode: { _, name in ask(name) }, answer: { q in
                    guard let scene = q.state.show.scene(q.query.name) else { throw PolicyError.unknownScene(q.query.name) }
                    return [.string(scene.name), .float(Float(scene.fade)), .string(scene.curve.rawValue),
                            .int32(q.state.show.isStored(scene.name) ? 1 : 0), .string(sceneJSON(scene))]
                }),
    ]

    static func fadeCurve(_ word: String) throws(PolicyError) -> FadeCurve {
        guard let curve = FadeCurve(rawValue: word) else {
            throw PolicyError(.badArgument, "curve: expected one of \(FadeCurve.allCases.map(\.rawValue).joined(separator: ", ")), got \(Arguments.quote(word))")
        }
        return curve
    }

    /// `/cue/state`'s answer: the cue last fired and the one at the playhead, by number and scene
    /// (0 and "": none), and the list's length.
    static func cueState(_ show: Show) -> [OSCArgument] {
        let current = show.current.map { (number: $0 + 1, scene: show.cues[$0].scene) }
        let next = show.next < show.cues.count ? (number: show.next + 1, scene: show.cues[show.next].scene) : nil
        return [.int32(Int32(current?.number ?? 0)), .string(current?.scene ?? ""),
                .int32(Int32(next?.number ?? 0)), .string(next?.scene ?? ""), .int32(Int32(show.cues.count))]
    }

    /// What a scene sets, as the session file writes it (apps and routes by name).
    static func sceneJSON(_ scene: Scene) -> String {
        func level(_ volume: Volume?) -> [String: Any] {
            switch volume {
            case let .position(p)?: ["volume": p]
            case let .decibels(dB)?: ["gain": max(dB, Double(Decibels.floor))]
            case nil: [:]
            }
        }
        var object: [String: Any] = ["name": scene.name, "fade": scene.fade, "curve": scene.curve.rawValue]
        if !scene.apps.isEmpty {
            object["apps"] = Dictionary(scene.apps.map { app in
                var fields = level(app.volume)
                if let muted = app.muted { fields["mute"] = muted }
                if let active = app.active { fields["active"] = active }
                return (app.name, fields)
            }, uniquingKeysWith: { first, _ in first })
        }
        if !scene.routes.isEmpty {
            object["routes"] = Dictionary(scene.routes.map { ($0.name, level($0.volume)) }, uniquingKeysWith: { first, _ in first })
        }
        switch scene.route {
        case let .select(route)?: object["route"] = route
        case .followGraph?: object["route"] = NSNull()
        case nil: break
        }
        if let silent = scene.silent { object["silent"] = silent }
        var ducking: [String: Any] = [:]
        if let level = scene.ducking.level { ducking["level"] = level }
        if let target = scene.ducking.target { ducking["target"] = target.map { $0 as Any } ?? "off" }
        if let attack = scene.ducking.attack { ducking["attack"] = attack }
        if let release = scene.ducking.release { ducking["release"] = release }
        if !ducking.isEmpty { object["ducking"] = ducking }
        if !scene.safe.isEmpty { object["safe"] = scene.safe }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
