import CJack

/// Calls that wait for the server's answer, with a deadline (`ServerRequests`): a server that is
/// frozen or hung holds its caller for `answerSeconds` at most, once (a stretch of slow answers
/// shares `patientSeconds` while `serverProgress` moves: a slow server, not a hung one); until
/// that request returns, every such call fails at once with `.serverNotAnswering`, and a port
/// given up meanwhile waits (`deferredGiveUps`). What a late request did to a port (registered
/// it, renamed it, half gave it up) is put right once the server answers again, by the next port
/// registered or given up or by the owner's `settlePending` (`settle`): the port is taken back and
/// given up, so it ends as a spare (JACK2) or unregistered, never holding a name an app may want.
///
/// Calls that read only what JACK shares with its clients (port lists, connections, latencies,
/// metadata) need no answer and are not bounded; neither is `close()`, which waits for the
/// request still running and then for the server.
extension JackClient {
    /// The call that has waited past its deadline for the server and is still waiting, and for
    /// how long (s); nil while the server answers.
    public var unansweredRequest: (what: String, seconds: Double)? { requests.unanswered }

    /// Runs `request` (which must use only what it captured: the client's and its ports' C
    /// handles, names) on the request queue; throws `.serverNotAnswering` when the server does
    /// not answer within the deadline (or the patience, while `serverProgress` moves), or has not
    /// answered an earlier call yet. `late` names the
    /// port a late answer leaves for `settle`, if any.
    func ask<Result>(_ what: String, _ request: @escaping () -> Result,
                     late: @escaping (Result) -> OpaquePointer? = { _ in nil }) throws(JackError) -> Result {
        if case let .answered(result) = requests.ask(what, request, late: late, progress: serverProgress) { return result }
        throw notAnswering(what)
    }

    /// The error for a call the server has not answered: the request that still waits, and how
    /// long since it was asked.
    func notAnswering(_ what: String) -> JackError {
        let waiting = requests.unanswered
        return .serverNotAnswering(request: waiting?.what ?? what, seconds: waiting?.seconds ?? requests.deadline)
    }

    /// Whether a request the server has not answered still waits: a call now would be refused
    /// without running, so what it was for waits too.
    var awaitingServer: Bool { requests.unanswered != nil }

    /// Requests the server answered after their deadline, so far: when this grows, the server
    /// answers again, and what was refused meanwhile may be wanted again.
    public var lateAnswers: Int { requests.lateAnswers }

    /// Whether ports wait to be put right or given up (`settle`).
    public var hasUnsettledPorts: Bool { !deferredGiveUps.isEmpty || requests.hasLatePorts }

    /// Puts right what late requests left and gives up what waited, if the server answers (the
    /// owner's periodic work: otherwise only the next port registered or given up does it).
    public func settlePending() {
        guard hasUnsettledPorts, !awaitingServer else { return }
        try? settle()
    }

    /// Puts right what late requests left, and gives up the ports given up while the server did
    /// not answer. Throws while it still does not.
    func settle() throws(JackError) {
        if awaitingServer { throw notAnswering("settle ports") }
        for late in requests.takeLatePorts() {
            // Taken back under the name it has now, and given up again below.
            let port = JackPort(pointer: late.pointer, name: String(cString: jack_port_name(late.pointer)))
            registered.removeAll { $0.pointer == late.pointer }
            spares.remove(late.pointer)
            registered.append(port)
            if !deferredGiveUps.contains(port) { deferredGiveUps.append(port) }
        }
        while !deferredGiveUps.isEmpty {
            let port = deferredGiveUps.removeFirst()
            giveUp(port)
            if awaitingServer { throw notAnswering("settle ports") }
        }
    }
}
