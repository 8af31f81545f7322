import Foundation
import Logging
import OSCTransport
import Policy
import RouterCore
import SessionStore

/// What goes out (OSC server thread only): replies and errors to a command's sender, the router's
/// notifications to the app concerned and to subscribers, and what a peer that went away leaves.
extension ControlServer {
    func sendReply(to peer: OSCServer.Peer, path: String, _ values: [OSCArgument]) {
        let bytes = OSCCodec.encode(OSCMessage("/reply", [.string(path)] + values))
        if !server.send(bytes, to: peer), peer.transport == .udp, bytes.count > 65_000 {
            sendError(to: peer, path: path, PolicyError(.general, "the reply is \(bytes.count) bytes, too large for UDP; ask over TCP"))
        }
    }

    func sendError(to peer: OSCServer.Peer, path: String, _ error: PolicyError) {
        var message = error.message
        if message.utf8.count > 1024 { message = String(decoding: message.utf8.prefix(1000), as: UTF8.self) + "…" }
        let shownPath = path.utf8.count > 1024 ? String(decoding: path.utf8.prefix(1000), as: UTF8.self) + "…" : path
        server.send(OSCCodec.encode(OSCMessage("/error", [.string(shownPath), .int32(error.code.rawValue), .string(message)])), to: peer)
    }

    /// Lets a target go. A target made for an address has a socket of its own (UDP) or a connection
    /// the router opened (TCP), closed here; one that rides on a peer's TCP connection leaves that
    /// connection to the peer, who may still be using it.
    func release(_ target: Target) {
        if target.connection == nil { server.close(target.destination) }
    }

    /// Removes the subscribers whose sends failed repeatedly from `targets` (notifications, or
    /// peak, level or loudness meters: `kind` names them in the log) and lets their sockets go.
    /// One write of `targets`, so an observer on it (the level targets' turning RMS off) runs once.
    func drop(_ failed: [Target], from targets: inout [Target], _ kind: String? = nil) {
        guard !failed.isEmpty else { return }
        for target in failed {
            logger.warning("dropping a \(kind.map { "\($0) " } ?? "")subscriber after repeated failures", metadata: ["url": "\(target.url)"])
            release(target)
        }
        targets.removeAll { target in failed.contains { $0 === target } }
    }

    /// Sends to a target, counting failures in a row; false once it has failed too often.
    func send(_ bytes: [UInt8], to target: Target, conflatable: Bool = false) -> Bool {
        if server.send(bytes, to: target.destination, conflatable: conflatable) {
            target.failures = 0
        } else {
            target.failures += 1
        }
        return target.failures < configuration.failureLimit
    }

    /// Sends a notification to the app it concerns and to every subscriber, once per address.
    func deliver(_ notification: RouterNotification) {
        for observer in changeObservers { observer() }
        let bytes = OSCCodec.encode(Self.message(for: notification))
        var reached = Set<String>()
        if let app = notification.app, let target = notifyTargets[app] {
            reached.insert(target.url)
            if !send(bytes, to: target) {
                logger.warning("dropping an app's notify address after repeated failures", metadata: ["app": "\(app)", "url": "\(target.url)"])
                notifyTargets[app] = nil
                // A UDP owner that cannot be reached has gone (a restarted program gets a new
                // port): the app is free to be registered again.
                if case let .udp(host, port)? = owners[app], target.url == OSCURL(transport: .udp, host: host, port: port).description {
                    owners[app] = nil
                }
                release(target)
            }
        }
        // A send that fails on a TCP subscriber's connection closes it, and the close takes that
        // subscriber out of the list (`closed`) at once: the list is walked as a copy, and those
        // that failed too often are taken out after.
        var failed: [Target] = []
        for target in subscribers where reached.insert(target.url).inserted {
            if !send(bytes, to: target) { failed.append(target) }
        }
        drop(failed, from: &subscribers)
    }

    static func message(for notification: RouterNotification) -> OSCMessage {
        switch notification {
        case let .policy(notification): message(for: notification)
        case let .jack(connected, reason):
            OSCMessage("/duckrouter/jack", [.string(connected ? "connected" : "disconnected"), .string(reason)])
        case let .xruns(total, new):
            OSCMessage("/duckrouter/xrun", [.int32(Int32(clamping: total)), .int32(Int32(clamping: new))])
        }
    }

    static func message(for notification: PolicyNotification) -> OSCMessage {
        switch notification {
        case let .interruption(app, phase, shouldResume, reason):
            OSCMessage("/duckrouter/interruption", [.string(app), .string(phase.rawValue), .int32(shouldResume ? 1 : 0), .string(reason.rawValue)])
        case let .appState(app, state, gain, reason, held):
            // Who holds it back, and by which rule, after the four that were always there: a
            // loudness-targeted duck adds its target and, once measured, the difference heard.
            OSCMessage("/duckrouter/app", [.string(app), .string(state.rawValue), .float(Float(max(gain, Double(Decibels.floor)))),
                                           .string(reason?.rawValue ?? "")]
                       + (held.map { [.string($0.by), .string($0.rule)] } ?? [])
                       + (held?.target.map { [.float(Float($0))] } ?? [])
                       + (held?.target != nil ? held?.difference.map { [.float(Float(($0 * 10).rounded() / 10))] } ?? [] : []))
        case let .silentSwitch(on):
            OSCMessage("/duckrouter/silent", [.int32(on ? 1 : 0)])
        case let .systemVolume(route, volume):
            OSCMessage("/duckrouter/volume", [.float(Float(volume)), .string(route)])
        case let .remote(app, command, value):
            OSCMessage("/duckrouter/remote", [.string(app), .string(command.rawValue)] + (value.map { [.float(Float($0))] } ?? []))
        case let .route(reason, route, previous, app):
            OSCMessage("/duckrouter/route", [.string(reason.rawValue), .string(route), .string(previous)] + (app.map { [.string($0)] } ?? []))
        case let .duckReleased(app, released):
            OSCMessage("/duckrouter/duck", [.string(app), .string(released ? "released" : "holding")])
        case let .scene(name, phase):
            OSCMessage("/duckrouter/scene", [.string(name), .string(phase.rawValue)])
        case let .cue(number, scene):
            OSCMessage("/duckrouter/cue", [.int32(Int32(clamping: number)), .string(scene)])
        case let .playhead(number, scene):
            OSCMessage("/duckrouter/playhead", [.int32(Int32(clamping: number)), .string(scene)])
        }
    }

    /// A TCP peer went away: its apps become unowned, and what rode on its connection is dropped.
    func closed(_ peer: OSCServer.Peer) {
        let owner = Owner(peer)
        for (app, o) in owners where o == owner { owners[app] = nil }
        for (app, target) in notifyTargets where target.connection == peer.connection { notifyTargets[app] = nil }
        subscribers.removeAll { $0.connection == peer.connection }
        meterTargets.removeAll { $0.connection == peer.connection }
        loudnessTargets.removeAll { $0.connection == peer.connection }
        levelTargets.removeAll { $0.connection == peer.connection }
        adminStreams[peer.connection] = nil
    }
}
