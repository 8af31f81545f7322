import CJack
import Dispatch

/// The object JACK's notification callbacks reach through their `void *arg`.
///
/// Ownership: `JackClient` retains one reference (`Unmanaged.passRetained`) before it registers the
/// callbacks and releases it only after `jack_client_close` has returned, when JACK can no longer
/// call any of them. JACK2 calls these callbacks on its notification thread and PipeWire on its
/// main loop, never on the process thread (the table in CycleNotes.swift), so building strings
/// and calling the handler there is allowed. The callbacks that JACK2 or PipeWire may call on the
/// process thread are not among them: the xrun and buffer-size callbacks reach only
/// `CycleNotes`, the shutdown callbacks only a `ShutdownNotice`.
final class CallbackContext: @unchecked Sendable {
    // Written once before the callbacks are registered, read-only afterwards.
    let handler: @Sendable (JackEvent) -> Void
    let client: OpaquePointer
    /// The ports whose latency this client reports, for the latency callback.
    let latency = Locked(LatencyPlan())
    /// On PipeWire's libjack the latency callback's ranges are set from `latencySetter`, after
    /// the callback has returned (`setLater`); on JACK2 inside the callback, as JACK's API asks.
    let setsLatencyLater = JackLibrary.loaded == .pipewire
    /// Every call of ours that PipeWire's libjack turns into work for its loop (setting a range,
    /// asking for a recompute) is made from this one queue: 0.3.65 queues that work in a ring
    /// with room for one writer, so two threads of ours must never write at once. What this
    /// cannot rule out: PipeWire's own process thread writes that ring too, when the graph's
    /// period or rate changes (0.3.65's check_buffer_frames, check_sample_rate), so a range set
    /// at that very moment can race it inside libjack; and the latency fields of a port are
    /// read by PipeWire's loop without a lock of ours. Nothing outside libjack can close that;
    /// ranges are set only when ports change, rarely at a period change.
    private let latencySetter = DispatchQueue(label: "duckrouter.jack-latency")

    init(client: OpaquePointer, handler: @escaping @Sendable (JackEvent) -> Void) {
        self.client = client
        self.handler = handler
    }

    /// Sets `ranges`, worked out under the plan of `generation`, soon and off JACK's thread, if
    /// that plan is still in force then.
    ///
    /// PipeWire's libjack (0.3.65) calls the latency callback from its loop thread holding the
    /// client's `rt_lock`; `jack_port_set_latency_range` made there runs the loop's pending work in
    /// place, and pending work that calls a callback takes `rt_lock` again: the thread waits on
    /// itself for good, and every later request of the client with it (`LatencyCallbackTests`).
    /// Made from another thread the same call only queues the update for the loop. A port is
    /// touched only under the plan's lock and only while the plan it was worked out for is in
    /// force: `setLatencies` swaps the plan (a new generation) under that lock before a port is
    /// unregistered, and `close` empties it, so a port freed (or its memory reused) is never set.
    func setLater(_ ranges: [LatencySetting], generation: UInt64) {
        latencySetter.async { [self] in
            latency.withLock { plan in
                guard plan.generation == generation else { return }
                for setting in ranges { setting.apply() }
            }
        }
    }

    /// Asks JACK to recompute every latency: at once on JACK2; on PipeWire from `latencySetter`,
    /// after any range still to set (see there). The client must stay open until `drain()`.
    func recompute() {
        guard setsLatencyLater else {
            jack_recompute_total_latencies(client)
            return
        }
        let client = Handover(client)
        latencySetter.async { jack_recompute_total_latencies(client.value) }
    }

    /// Returns once everything queued on `latencySetter` has run: before the client closes.
    func drain() { latencySetter.sync {} }

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

/// A renamed port is, to everyone who knew it by name, one port gone and another come: so it
/// arrives as both (a route whose destination is renamed away loses it).
let portRenameCallback: JackPortRenameCallback = { _, oldName, newName, arg in
    let context = CallbackContext.from(arg)
    context.handler(.portUnregistered(oldName.map { String(cString: $0) } ?? ""))
    if let newName { context.handler(.portRegistered(String(cString: newName))) }
}

let sampleRateCallback: JackSampleRateCallback = { rate, arg in
    CallbackContext.from(arg).handler(.sampleRateChanged(Int(rate)))
    return 0
}

/// Which input ports feed which output ports, and how many frames each output adds.
struct LatencyPlan: Sendable {
    var inputs: [UInt] = []                         // jack_port_t * bit patterns
    /// `added`: frames this output hears some inputs later (capture); `beyond`: frames what it
    /// feeds adds that JACK cannot see (a network bridge's far end), on top of its playback latency.
    var outputs: [(port: UInt, added: UInt32, beyond: UInt32)] = []
    /// Which plan this is: every plan set gets a new one (`JackClient.setLatencies`).
    var generation: UInt64 = 0
}

/// A pointer handed to a queue that uses it while its owner keeps it valid.
struct Handover<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Reports the router's latencies (jack_set_latency_callback): every output hears every input,
/// some outputs (look-ahead routes) some of them up to that many frames later: their range
/// widens by that much at the top.
let latencyCallback: JackLatencyCallback = { mode, arg in
    // All of it under the lock: `setLatencies` swaps the plan (under the same lock) before the
    // router unregisters a port the new plan leaves out, so no port is touched here once it is
    // gone, and no copy of the plan outlives the one in force (found by make tsan).
    let context = CallbackContext.from(arg)
    context.latency.withLock { plan in
        let ranges = latencyRanges(plan, mode: mode, client: context.client)
        if context.setsLatencyLater {
            context.setLater(ranges, generation: plan.generation)
        } else {
            for setting in ranges { setting.apply() }
        }
    }
    if mode == JackPlaybackLatency { context.handler(.latenciesChanged) }
}

/// One port's latency range for one direction, to set.
struct LatencySetting: Sendable {
    var port: UInt                                  // jack_port_t * bit pattern
    var mode: jack_latency_callback_mode_t
    var min: UInt32
    var max: UInt32
    /// JACK has this range already (an output's, worked out from its connections): nothing to set.
    var known = false

    func apply() {
        guard !known else { return }
        var range = jack_latency_range_t(min: min, max: max)
        jack_port_set_latency_range(OpaquePointer(bitPattern: port)!, mode, &range)
    }
}

/// The latency ranges of `plan`'s ports for `mode`, from what JACK says lies around them. For
/// playback, every output's own range comes first (worked out from what it feeds, plus what lies
/// beyond that, for an output with `beyond`; as JACK has it otherwise), then the inputs'.
private func latencyRanges(_ plan: LatencyPlan, mode: jack_latency_callback_mode_t, client: OpaquePointer) -> [LatencySetting] {
    func port(_ bits: UInt) -> OpaquePointer { OpaquePointer(bitPattern: bits)! }
    var range = jack_latency_range_t(min: 0, max: 0)
    if mode == JackCaptureLatency {
        // Outputs: the latest and earliest of the inputs' capture latencies, plus what each adds.
        var low = UInt32.max, high: UInt32 = 0
        for input in plan.inputs {
            jack_port_get_latency_range(port(input), mode, &range)
            low = min(low, range.min)
            high = max(high, range.max)
        }
        if low == UInt32.max { low = 0 }
        return plan.outputs.map { LatencySetting(port: $0.port, mode: mode, min: low, max: high + $0.added) }
    } else {
        // Each output: what lies downstream of it. JACK works that out from its connections; for
        // one with something beyond them, the same is done here (not read back and added to,
        // which would add it again each time), and the far end's share put on top.
        var outputs: [LatencySetting] = []
        for output in plan.outputs {
            if output.beyond > 0 {
                let fed = downstreamPlaybackLatency(of: port(output.port), client: client)
                outputs.append(LatencySetting(port: output.port, mode: mode, min: fed.min &+ output.beyond, max: fed.max &+ output.beyond))
            } else {
                jack_port_get_latency_range(port(output.port), mode, &range)
                outputs.append(LatencySetting(port: output.port, mode: mode, min: range.min, max: range.max, known: true))
            }
        }
        // Inputs: what lies downstream of every output, plus what each output adds.
        var low = UInt32.max, high: UInt32 = 0
        for (output, setting) in zip(plan.outputs, outputs) {
            low = min(low, setting.min)
            high = max(high, setting.max + output.added)
        }
        if low == UInt32.max { low = 0 }
        return outputs + plan.inputs.map { LatencySetting(port: $0, mode: mode, min: low, max: high) }
    }
}

/// The playback latency of what `port` (an output) feeds: the range over the ports it is
/// connected to, as JACK2 works it out for an output itself; 0 when it feeds none.
func downstreamPlaybackLatency(of port: OpaquePointer, client: OpaquePointer) -> (min: UInt32, max: UInt32) {
    guard let names = jack_port_get_all_connections(client, port) else { return (0, 0) }
    defer { jack_free(UnsafeMutableRawPointer(mutating: names)) }
    var low = UInt32.max, high: UInt32 = 0
    var index = 0
    while let name = names[index] {
        index += 1
        guard let peer = jack_port_by_name(client, name) else { continue }
        var range = jack_latency_range_t(min: 0, max: 0)
        jack_port_get_latency_range(peer, JackPlaybackLatency, &range)
        low = min(low, range.min)
        high = max(high, range.max)
    }
    return low == UInt32.max ? (0, 0) : (low, high)
}
