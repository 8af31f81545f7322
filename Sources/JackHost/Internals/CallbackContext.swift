import CJack
import Synchronization

/// The object JACK's notification callbacks reach through their `void *arg`.
///
/// Ownership: `JackClient` retains one reference (`Unmanaged.passRetained`) before it registers the
/// callbacks and releases it only after `jack_client_close` has returned, when JACK can no longer
/// call any of them. The callbacks run on JACK's notification thread (never the process thread),
/// so building strings and calling the handler there is allowed.
final class CallbackContext: @unchecked Sendable {
    // Written once before the callbacks are registered, read-only afterwards.
    let handler: @Sendable (JackEvent) -> Void
    let client: OpaquePointer
    /// Set when JACK says the server shut the client down: nothing more may be asked of it.
    let serverGone = Atomic<Bool>(false)

    init(client: OpaquePointer, handler: @escaping @Sendable (JackEvent) -> Void) {
        self.client = client
        self.handler = handler
    }

    static func from(_ arg: UnsafeMutableRawPointer?) -> CallbackContext {
        Unmanaged<CallbackContext>.fromOpaque(arg!).takeUnretainedValue()
    }

    func portName(_ id: jack_port_id_t) -> String? {
        guard let port = jack_port_by_id(client, id), let name = jack_port_name(port) else { return nil }
        return String(cString: name)
    }
}

let portRegistrationCallback: JackPortRegistrationCallback = { id, registered, arg in
    let context = CallbackContext.from(arg)
    if registered != 0 {
        guard let name = context.portName(id) else { return }
        context.handler(.portRegistered(name))
    } else {
        // By the time this arrives the port is often gone from the graph and its name with it;
        // the event still matters (a device went away), so it comes with an empty name then.
        context.handler(.portUnregistered(context.portName(id) ?? ""))
    }
}

let portConnectCallback: JackPortConnectCallback = { a, b, connected, arg in
    let context = CallbackContext.from(arg)
    guard let source = context.portName(a), let destination = context.portName(b) else { return }
    context.handler(connected != 0 ? .portsConnected(source, destination) : .portsDisconnected(source, destination))
}

let bufferSizeCallback: JackBufferSizeCallback = { frames, arg in
    CallbackContext.from(arg).handler(.bufferSizeChanged(Int(frames)))
    return 0
}

let sampleRateCallback: JackSampleRateCallback = { rate, arg in
    CallbackContext.from(arg).handler(.sampleRateChanged(Int(rate)))
    return 0
}

let xrunCallback: JackXRunCallback = { arg in
    CallbackContext.from(arg).handler(.xrun)
    return 0
}

let infoShutdownCallback: JackInfoShutdownCallback = { _, reason, arg in
    let text = reason.map { String(cString: $0) } ?? "unknown reason"
    let context = CallbackContext.from(arg)
    context.serverGone.store(true, ordering: .releasing)
    context.handler(.shutdown(reason: text))
}
