import ControlVocabulary
import Foundation
import Logging
import OSCTransport
import Synchronization

/// What OSCQuery's WebSocket clients listen to, and the pushing of it (docs/HTTP.md, "WebSocket"):
/// values of LISTENed paths as OSC messages when they change, `PATH_ADDED` / `PATH_REMOVED` to
/// every client when apps (or routes) come and go.
///
/// How it sees changes: the OSC server tells it after every burst of commands and every router
/// notification (`ControlService.observeChanges`), and, while any client is connected, it also
/// looks every `pollInterval` (a second) for changes that send no notification. Each look is one
/// reading of the control plane (`ControlService.read`: the OSC server's thread, one trip to the
/// control queue), shared by all clients, compared with what each was last sent; a reading whose
/// inputs (`Namespace.Inputs`) equal the last one's builds no namespace and sends nothing new.
/// Looks never overlap and come at most every `minimumInterval`, however many changes arrive. Nothing here runs on the
/// control queue or the audio thread.
actor ListenHub {
    /// A connected client: where its frames go, and per listened path the value last sent.
    private final class Client {
        let queue: OutboundQueue
        /// Closes the connection (a client that missed a path change must read everything again).
        let close: @Sendable () -> Void
        var listening: [String: [OSCQueryNode.Value]?] = [:]
        /// Listened paths whose value is not yet sent (its queue was full): tried again at every look.
        var unsent: Set<String> = []
        init(queue: OutboundQueue, close: @escaping @Sendable () -> Void) {
            self.queue = queue
            self.close = close
        }
    }

    /// One look at the namespace: every path, and the value of every readable one.
    struct Snapshot: Equatable {
        var paths: Set<String> = []
        var values: [String: [OSCQueryNode.Value]] = [:]
        var containers: Set<String> = []

        init(_ root: OSCQueryNode) {
            var stack = [root]
            while let node = stack.popLast() {
                paths.insert(node.fullPath)
                if let value = node.value, node.access == .readOnly || node.access == .readWrite { values[node.fullPath] = value }
                if let contents = node.contents {
                    containers.insert(node.fullPath)
                    stack += contents.values
                }
            }
        }
    }

    private let control: AttachedControl
    private let logger: Logger
    private let pollInterval: Duration
    private let minimumInterval: Duration
    private var clients: [Int: Client] = [:]
    private var latest: Snapshot?
    /// What `latest` was built from: a look that reads the same builds nothing.
    private var latestInputs: Namespace.Inputs?
    /// The last look was made before anyone connected again: its values may be old (its paths
    /// still serve to tell what changed meanwhile).
    private var stale = false
    private var looking = false
    private var lookAgain = false
    /// Looks begun, counted: a LISTEN that needs a fresh look waits for one begun after it asked,
    /// without running the looks itself.
    private var begun = 0
    private var waiting: [(look: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var poller: Task<Void, Never>?
    /// Set by `poke` (any thread), cleared when a look starts: one look per flurry of pokes.
    private nonisolated let poked = Atomic<Bool>(false)
    /// Clients connected (read by `poke` without entering the actor).
    private nonisolated let connected = Atomic<Int>(0)

    init(control: AttachedControl, logger: Logger, pollInterval: Duration = .seconds(1),
         minimumInterval: Duration = .milliseconds(20)) {
        self.control = control
        self.logger = logger
        self.pollInterval = pollInterval
        self.minimumInterval = minimumInterval
    }

    /// Something may have changed: look soon, if anyone is connected. Any thread; never blocks.
    nonisolated func poke() {
        guard connected.load(ordering: .relaxed) > 0, !poked.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Task { await self.look() }
    }

    // MARK: Clients

    func add(_ id: Int, queue: OutboundQueue, close: @escaping @Sendable () -> Void) {
        // Nobody was connected: nothing was looked at meanwhile, so the last look is stale.
        if clients.isEmpty { stale = true }
        clients[id] = Client(queue: queue, close: close)
        connected.add(1, ordering: .relaxed)
        if poller == nil {
            poller = Task { [pollInterval] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: pollInterval)
                    self.poke()
                }
            }
        }
    }

    func remove(_ id: Int) {
        guard clients.removeValue(forKey: id) != nil else { return }
        connected.subtract(1, ordering: .relaxed)
        if clients.isEmpty {
            poller?.cancel()
            poller = nil
        }
    }

    /// Starts pushing `path`'s value to the client (its value now first, then each change).
    /// Returns why not: no such path, or a path with no value to read.
    func listen(_ id: Int, _ path: String) async -> String? {
        // No look yet, or one from before anyone connected, or one without this path (an app
        // just registered): wait for a look begun now.
        if latest == nil || stale || latest?.paths.contains(path) == false { await freshLook() }
        guard let client = clients[id] else { return nil }
        guard let latest else { return "the router is starting or stopping; try again" }
        guard latest.paths.contains(path) else { return "no such path: \(path)" }
        // Meters are not pushed on change: the session has the OSC server send them at 20 Hz,
        // one with no channels yet too (its readings come once it has some).
        if Namespace.isMeter(path) { return nil }
        // A readable path with no value now (/system/volume while no route is available) may be
        // listened to: its value is sent once there is one.
        guard latest.values[path] != nil || Self.readableWithoutValue.contains(path) else {
            return "\(path) has no value to listen to"
        }
        // Listening again (a page that rebuilt itself) sends the value again, whatever was sent.
        client.listening[path] = .some(nil)
        push(latest, to: client, paths: [path])
        return nil
    }

    /// Stops pushing `path` to the client (no error when it was not listened to).
    func ignore(_ id: Int, _ path: String) {
        clients[id]?.listening[path] = nil
        clients[id]?.unsent.remove(path)
    }

    private static let readableWithoutValue: Set<String> = ["/system/volume", "/system/gain"]

    // MARK: Looking

    /// Returns once a look begun after this call has been applied (or the looks stopped), at most
    /// two seconds later. Looks are run by their own task, never by the caller.
    private func freshLook() async {
        let wanted = begun + 1
        if looking { lookAgain = true } else { Task { await self.look() } }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            waiting.append((wanted, continuation))
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(2))
                await self?.resumeWaiting(upTo: .max)
            }
        }
    }

    private func resumeWaiting(upTo look: Int) {
        let ready = waiting.filter { $0.look <= look }
        waiting.removeAll { $0.look <= look }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// One reading of the control plane, compared and pushed. Looks never overlap: one asked for
    /// during a look runs after it.
    func look() async {
        if looking {
            lookAgain = true
            return
        }
        looking = true
        defer {
            looking = false
            // Stopping, or done: nobody waits for a look that will not come.
            resumeWaiting(upTo: .max)
        }
        repeat {
            lookAgain = false
            poked.store(false, ordering: .releasing)
            begun += 1
            let number = begun
            // Most looks (the poll's, every second) find nothing changed: then only the inputs
            // are compared, and the namespace is not built (it costs about a millisecond).
            let previous = latestInputs
            guard let control = control.get(),
                  let reading = await control.read({ reader -> (Snapshot, Namespace.Inputs)? in
                      let inputs = Namespace.Inputs(reader)
                      return inputs == previous ? nil : (Snapshot(Namespace(reader).build()), inputs)
                  }) else {
                // Stopping: nothing to look at. A look asked for meanwhile is dropped with it.
                return
            }
            if let (snapshot, inputs) = reading {
                apply(snapshot)
                latestInputs = inputs
            } else {
                stale = false
                if let latest { for client in clients.values where !client.unsent.isEmpty { push(latest, to: client, paths: Array(client.unsent)) } }
            }
            resumeWaiting(upTo: number)
            try? await Task.sleep(for: minimumInterval)
        } while lookAgain || poked.load(ordering: .acquiring)
    }

    private func apply(_ snapshot: Snapshot) {
        if let previous = latest, previous.paths != snapshot.paths {
            let added = Self.topmost(snapshot.paths.subtracting(previous.paths))
            let removed = Self.topmost(previous.paths.subtracting(snapshot.paths))
            let messages = removed.map { OSCQueryCommand.message("PATH_REMOVED", $0) }
                + added.map { OSCQueryCommand.message("PATH_ADDED", $0) }
            for client in clients.values {
                for path in client.listening.keys where !snapshot.paths.contains(path) {
                    client.listening[path] = nil
                    client.unsent.remove(path)
                }
                // A client that cannot take a path change would not know the namespace: closed,
                // it connects again and reads everything.
                if !messages.allSatisfy({ client.queue.push(.text($0)) }) { client.close() }
            }
        }
        latest = snapshot
        stale = false
        for client in clients.values { push(snapshot, to: client, paths: Array(client.listening.keys)) }
    }

    /// Sends the client each of `paths` whose value differs from what it was last sent.
    private func push(_ snapshot: Snapshot, to client: Client, paths: [String]) {
        for path in paths {
            guard let value = snapshot.values[path], client.listening[path] != .some(value) else {
                client.unsent.remove(path)
                continue
            }
            let message = OSCMessage(path, value.map(\.oscArgument))
            // A full queue: the value is sent again at the next look (it is not marked sent).
            if client.queue.push(.binary(OSCCodec.encode(message))) {
                client.listening[path] = .some(value)
                client.unsent.remove(path)
            } else {
                client.unsent.insert(path)
            }
        }
    }

    /// The paths of `paths` whose parent is not among them: `/app/nav` for a new app, not each
    /// of its methods.
    static func topmost(_ paths: Set<String>) -> [String] {
        paths.filter { path in
            guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return true }
            return !paths.contains(String(path[..<slash]))
        }.sorted()
    }
}

extension OSCQueryNode.Value {
    var oscArgument: OSCArgument {
        switch self {
        case let .float(f): .float(f)
        case let .int(i): .int32(i)
        case let .string(s): .string(s)
        }
    }
}
