import CAvahi
import Foundation
import Logging

/// Advertises the router on zeroconf (mDNS / DNS-SD) through the avahi daemon (docs/HTTP.md,
/// "Zeroconf"): OSCQuery as `_oscjson._tcp` on the HTTP port, OSC as `_osc._udp` and `_osc._tcp`
/// on the OSC port, under one name (the JACK client name; avahi picks "name #2" if another host
/// has it).
///
/// No avahi daemon is not an error: one log line, and the services are published once a daemon
/// starts (avahi's NO_FAIL client waits for it); a daemon that goes away and comes back gets
/// them again. The only importer of CAvahi.
///
/// Threads: avahi runs its own thread (a threaded poll); every callback, and all state below,
/// lives on it. `start` sets up before that thread runs; `stop` stops the thread before freeing.
public final class Advertiser: @unchecked Sendable {
    // @unchecked: mutable state is touched only on avahi's thread, or before it starts / after
    // it has stopped (start, stop).
    public struct Service: Sendable, Equatable, CustomStringConvertible {
        /// DNS-SD type: `_oscjson._tcp`, `_osc._udp`, `_osc._tcp`.
        public var type: String
        public var port: UInt16
        public init(type: String, port: UInt16) {
            self.type = type
            self.port = port
        }
        public var description: String { "\(type) \(port)" }
    }

    private let services: [Service]
    private let logger: Logger
    private var name: String
    private var poll: OpaquePointer?
    private var client: OpaquePointer?
    private var group: OpaquePointer?
    private var saidAbsent = false

    public init(name: String, services: [Service], logger: Logger = Logger(label: "duckrouter.zeroconf")) {
        self.name = name
        self.services = services
        self.logger = logger
    }

    /// Starts advertising (now, or once an avahi daemon runs). Safe to call once.
    public func start() {
        guard poll == nil, let poll = avahi_threaded_poll_new() else { return }
        self.poll = poll
        var error: Int32 = 0
        // Before the poll thread runs: the callback may run inside avahi_client_new.
        client = avahi_client_new(avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, Self.clientCallback,
                                  Unmanaged.passUnretained(self).toOpaque(), &error)
        guard client != nil else {
            // No D-Bus system bus to wait on (avahi's NO_FAIL waits for the daemon, not the bus).
            logger.notice("zeroconf: no avahi daemon (\(String(cString: avahi_strerror(error))): no D-Bus system bus); not advertised")
            avahi_threaded_poll_free(poll)
            self.poll = nil
            return
        }
        if avahi_threaded_poll_start(poll) < 0 {
            logger.warning("zeroconf off: avahi's thread did not start")
            avahi_client_free(client)
            client = nil
            avahi_threaded_poll_free(poll)
            self.poll = nil
        }
    }

    /// Withdraws the services and stops avahi's thread. Safe to call twice, or without start.
    public func stop() {
        guard let poll else { return }
        avahi_threaded_poll_stop(poll)
        // The thread has stopped: nothing else touches the state now.
        group = nil          // freed with its client
        if let client { avahi_client_free(client) }
        client = nil
        avahi_threaded_poll_free(poll)
        self.poll = nil
    }

    deinit { stop() }

    // MARK: avahi's thread

    private static let clientCallback: AvahiClientCallback = { client, state, userdata in
        guard let client, let userdata else { return }
        Unmanaged<Advertiser>.fromOpaque(userdata).takeUnretainedValue().clientChanged(client, state)
    }

    private static let groupCallback: AvahiEntryGroupCallback = { group, state, userdata in
        guard let group, let userdata else { return }
        Unmanaged<Advertiser>.fromOpaque(userdata).takeUnretainedValue().groupChanged(group, state)
    }

    private func clientChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            if saidAbsent { logger.notice("zeroconf: an avahi daemon runs now") }
            saidAbsent = false
            publish(client)
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The host name is being (re)registered: the services go up again once it runs.
            if let group { avahi_entry_group_reset(group) }
        case AVAHI_CLIENT_CONNECTING:
            if !saidAbsent {
                logger.notice("zeroconf: no avahi daemon runs; not advertised (it will be once one starts)")
                saidAbsent = true
            }
        case AVAHI_CLIENT_FAILURE:
            let error = avahi_client_errno(client)
            guard error == Int32(AVAHI_ERR_DISCONNECTED) else {
                logger.warning("zeroconf: \(String(cString: avahi_strerror(error)))")
                return
            }
            // The daemon went away: a new client waits for it to come back.
            logger.notice("zeroconf: the avahi daemon went away; advertised again once it is back")
            saidAbsent = true
            group = nil
            avahi_client_free(client)
            self.client = nil
            var code: Int32 = 0
            self.client = avahi_client_new(avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, Self.clientCallback,
                                           Unmanaged.passUnretained(self).toOpaque(), &code)
            if self.client == nil { logger.warning("zeroconf off: \(String(cString: avahi_strerror(code)))") }
        default:
            break
        }
    }

    /// Adds every service under `name` to the entry group and commits it.
    private func publish(_ client: OpaquePointer) {
        if group == nil {
            group = avahi_entry_group_new(client, Self.groupCallback, Unmanaged.passUnretained(self).toOpaque())
        }
        guard let group else {
            logger.warning("zeroconf: \(String(cString: avahi_strerror(avahi_client_errno(client))))")
            return
        }
        guard avahi_entry_group_is_empty(group) != 0 else { return }
        for service in services {
            let result = avahi_entry_group_add_service_strlst(group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC),
                                                              AvahiPublishFlags(0), name, service.type, nil, nil, service.port, nil)
            if result == Int32(AVAHI_ERR_COLLISION) {
                // Another service of ours, or someone's, has the name locally: take the next one.
                rename()
                avahi_entry_group_reset(group)
                publish(client)
                return
            }
            if result < 0 {
                logger.warning("zeroconf: cannot add \(service.type): \(String(cString: avahi_strerror(result)))")
                avahi_entry_group_reset(group)
                return
            }
        }
        let result = avahi_entry_group_commit(group)
        if result < 0 { logger.warning("zeroconf: cannot publish: \(String(cString: avahi_strerror(result)))") }
    }

    private func groupChanged(_ group: OpaquePointer, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            logger.info("zeroconf: advertised", metadata: ["name": "\(name)", "services": "\(services.map(\.description).joined(separator: ", "))"])
        case AVAHI_ENTRY_GROUP_COLLISION:
            // Another host has the name: take the next one and publish again.
            let old = name
            rename()
            logger.notice("zeroconf: the name is taken on the network; advertising under another", metadata: ["was": "\(old)", "now": "\(name)"])
            avahi_entry_group_reset(group)
            if let client = avahi_entry_group_get_client(group) { publish(client) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            let client = avahi_entry_group_get_client(group)
            logger.warning("zeroconf: publishing failed: \(String(cString: avahi_strerror(client.map(avahi_client_errno) ?? -1)))")
        default:
            break
        }
    }

    private func rename() {
        guard let alternative = avahi_alternative_service_name(name) else { return }
        name = String(cString: alternative)
        avahi_free(alternative)
    }
}

extension Advertiser {
    /// Whether `bind` is a loopback address (only this machine can reach what listens there).
    public static func isLoopback(_ bind: String) -> Bool {
        bind == "localhost" || bind == "::1" || bind.hasPrefix("127.")
    }

    /// The router's services: OSC over UDP and TCP, and OSCQuery when HTTP is on. None when the
    /// router listens on a loopback address only (the default `osc.bind` of 127.0.0.1), or admits
    /// loopback senders only (`osc.allow`): nobody on the network could use what would be
    /// advertised.
    public static func services(bind: String, admitsNetwork: Bool, oscPort: UInt16, httpPort: UInt16?) -> [Service] {
        guard !isLoopback(bind), admitsNetwork else { return [] }
        var services = [Service(type: "_osc._udp", port: oscPort), Service(type: "_osc._tcp", port: oscPort)]
        if let httpPort { services.insert(Service(type: "_oscjson._tcp", port: httpPort), at: 0) }
        return services
    }
}
