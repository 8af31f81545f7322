import Foundation
import JackRig
import OSCTransport

/// One change the run asks of the router over OSC, with what the rules say it does: `apply`
/// moves the model and returns the answer the rules give (nil: `/reply`, else the error code).
struct ChaosChange {
    var message: OSCMessage
    var apply: (inout ChaosModel) -> Int32?

    /// A change drawn at random among those the model can follow from here: settings, activations
    /// and interruptions, apps registered, reconfigured and unregistered, routes selected.
    static func draw(_ model: ChaosModel, _ random: inout SplitMix) -> ChaosChange {
        let registered = model.apps.filter { !$0.fromSession }.map(\.name)
        let unregistered = ChaosSession.extras.filter { model.app($0.name) == nil }
        // The apps whose settings the run changes (guest comes and goes with reloads: left alone).
        let settable = model.apps.map(\.name).filter { $0 != "guest" }
        switch random.next(16) {
        case 0, 1:
            let app = settable[random.next(settable.count)], volume = unit(&random, 0.6, 1)
            return ChaosChange(message: OSCMessage("/app/\(app)/volume", [.float(volume)])) { $0.setVolume(app, volume) }
        case 2:
            let app = settable[random.next(settable.count)], muted = random.next(3) == 0
            return ChaosChange(message: OSCMessage("/app/\(app)/mute", [.int32(muted ? 1 : 0)])) { $0.setMuted(app, muted) }
        case 3:
            let volume = unit(&random, 0.7, 1)
            return ChaosChange(message: OSCMessage("/system/volume", [.float(volume)])) { model in
                guard let route = model.current else { return -4 }
                model.setRouteVolume(route, volume)
                return nil
            }
        case 4:
            let on = random.next(2) == 0
            return ChaosChange(message: OSCMessage("/system/silent", [.int32(on ? 1 : 0)])) { $0.silent = on; return nil }
        case 5:
            let level = -Float(6 + random.next(15))
            return ChaosChange(message: OSCMessage("/duck/level", [.float(level)])) { $0.duckLevel = level; return nil }
        case 6, 7:
            // Session apps and registered ones, guest too while the file has it.
            let names = model.apps.map(\.name)
            let app = names[random.next(names.count)]
            return ChaosChange(message: OSCMessage("/app/\(app)/activate")) { $0.activate(app) }
        case 8, 9:
            let names = model.apps.map(\.name)
            let app = names[random.next(names.count)], notify = random.next(2) == 0
            return ChaosChange(message: OSCMessage("/app/\(app)/deactivate", [.int32(notify ? 1 : 0)])) {
                $0.deactivate(app, notifyOthers: notify)
            }
        case 10:
            if model.outside.isEmpty {
                return ChaosChange(message: OSCMessage("/system/interruption/begin", [.string("call")])) { $0.beginOutside("call") }
            }
            let resume = random.next(2) == 0
            return ChaosChange(message: OSCMessage("/system/interruption/end", [.string("call"), .int32(resume ? 1 : 0)])) {
                $0.endOutside("call", shouldResume: resume)
            }
        case 11, 12:
            if let app = unregistered.isEmpty ? nil : unregistered[random.next(unregistered.count)] {
                return register(app)
            }
            // Reconfigured between mixable categories, or x2 as it is.
            let name = registered[random.next(registered.count)]
            var app = ChaosSession.extras.first { $0.name == name }!
            if name != "x2" && random.next(2) == 0 {
                (app.category, app.options) = app.category == .ambient ? (.playback, ["mixWithOthers"]) : (.ambient, [])
            }
            return register(app)
        case 13:
            guard !registered.isEmpty else { return draw(model, &random) }
            let app = registered[random.next(registered.count)]
            return ChaosChange(message: OSCMessage("/app/\(app)/unregister")) { $0.unregister(app) }
        default:
            let routes = ChaosSession.devices.map(\.route)
            let route = routes[random.next(routes.count)]
            return ChaosChange(message: OSCMessage("/route/select", [.string(route)])) { $0.select(route) }
        }
    }

    /// A value from `low` to `high` in hundredths of the span.
    static func unit(_ random: inout SplitMix, _ low: Float, _ high: Float) -> Float {
        low + (high - low) * Float(random.next(101)) / 100
    }

    static func register(_ app: ChaosModel.App) -> ChaosChange {
        ChaosChange(message: OSCMessage("/app/register", [.string(app.name), .string(app.category.rawValue),
                                                           .string(app.options.joined(separator: ",")), .string("default"), .int32(2)])) {
            $0.register(app)
            return nil
        }
    }
}
