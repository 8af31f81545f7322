import ControlVocabulary
import Foundation
import HummingbirdWebSocket
import Logging
import NIOCore
import OSCTransport

/// One OSCQuery WebSocket connection, from upgrade to close (docs/HTTP.md, "WebSocket").
///
/// - Binary frames are OSC packets, handed to the OSC server as a stream connection
///   (`ControlService.openStream`): executed exactly as OSC over TCP, with the rights of the
///   peer's address, or a person's (as `osc.admin`) while the page's key it opened with is the
///   page's (docs/HTTP.md, "Who may do what"). Replies, errors, notifications and meters come
///   back as binary frames.
/// - Text frames are OSCQuery commands (LISTEN, IGNORE), followed by the listen hub; one that
///   cannot be followed gets `{"COMMAND": "ERROR", "DATA": {"path": …, "message": …}}`.
///
/// This task reads; what goes to the peer is written by the connection's `FrameOutlet` on its
/// event loop, from a bounded queue every sender pushes to, so a peer that never reads holds at
/// most `queueLimit` bytes (and one batch in NIO's buffer), delays nobody, and is closed: the
/// outlet closes the connection when a batch has waited for the socket longer than `stallSeconds`
/// (a peer that stopped reading: its pings would wait behind the same writes and never find it
/// dead). A peer that sends faster than its commands run is not read meanwhile (`waitForRoom`).
struct WebSocketSession {
    /// OSC packets (and their bytes) of one WebSocket handed to the OSC server and not yet run,
    /// at which it is not read until some have run.
    static let maximumBacklog = (packets: 256, bytes: 256 * 1024)

    let control: any ControlService
    let hub: ListenHub
    let channel: any Channel
    let peer: OSCTransport.SocketAddress
    /// The page's key as the upgrade request presented it (`?key=` on the WebSocket's URL), if
    /// any: the control server decides what it is worth.
    let key: String?
    let queueLimit: Int
    let maximumMessageBytes: Int
    let stallSeconds: Int64
    /// Wakes the outlets of the server's event loop together.
    let waker: OutletWaker?
    let logger: Logger

    func run(inbound: WebSocketInboundStream) async {
        let queue = OutboundQueue(limit: queueLimit)
        do {
            try await FrameOutlet.install(on: channel, queue: queue, stallTime: .seconds(stallSeconds), onStall: { [logger, peer, stallSeconds] in
                logger.notice("closing a WebSocket that has not taken a frame for \(stallSeconds) s", metadata: ["peer": "\(peer)"])
            }, waker: waker).get()
        } catch {
            logger.notice("could not set up a WebSocket: \(error)", metadata: ["peer": "\(peer)"])
            channel.close(promise: nil)
            return
        }
        // The OSC server's thread pushes what it sends; the loop is woken once its turn ends.
        var turnEnd: (@Sendable () -> Void)?
        if let waker { turnEnd = { waker.flush() } }
        let later = waker != nil
        let stream = control.openStream(from: peer, key: key, outlet: { packet, conflatable in
            queue.push(.binary(packet), conflatable: conflatable, wakingLater: later)
        }, turnEnd: turnEnd)
        let id = stream.id
        await hub.add(id, queue: queue, close: { [channel] in channel.close(promise: nil) })
        logger.info("WebSocket opened", metadata: ["peer": "\(peer)", "connection": "\(id)", "key": "\(key == nil ? "none" : "presented")"])
        await read(inbound, stream: stream, queue: queue)
        queue.close()
        control.closeStream(stream)
        await hub.remove(id)
        logger.info("WebSocket closed", metadata: ["peer": "\(peer)", "connection": "\(id)"])
    }

    private func read(_ inbound: WebSocketInboundStream, stream: OSCServer.StreamHandle, queue: OutboundQueue) async {
        let id = stream.id
        // The meter paths listened to (sent by the OSC server at 20 Hz, not by the hub).
        var meters: Set<String> = []
        do {
            for try await message in inbound.messages(maxSize: maximumMessageBytes) {
                switch message {
                case let .binary(buffer):
                    control.receive(Array(buffer.readableBytesView), on: stream)
                    // A peer that sends faster than its commands run waits here, not read: its
                    // TCP window closes and it slows down; nobody else waits for it.
                    await stream.waitForRoom(packets: Self.maximumBacklog.packets, bytes: Self.maximumBacklog.bytes)
                case let .text(text):
                    switch OSCQueryCommand.decode(text) {
                    case let .success(.listen(path)):
                        if let problem = await hub.listen(id, path) {
                            queue.push(.text(error(path, problem)))
                        } else if Namespace.isMeter(path), meters.insert(path).inserted {
                            control.listenMeters(on: stream, paths: meters)
                        }
                    case let .success(.ignore(path)):
                        await hub.ignore(id, path)
                        if meters.remove(path) != nil { control.listenMeters(on: stream, paths: meters) }
                    case let .failure(problem):
                        queue.push(.text(error(nil, problem.description)))
                    }
                }
            }
        } catch {
            // Too large a message, a protocol error, a reset: the connection ends.
            logger.debug("WebSocket read ended", metadata: ["peer": "\(peer)", "error": "\(error)"])
        }
    }

    /// The key in an upgrade request's target (`/?key=…`, any path): the page cannot set
    /// headers on a WebSocket, so it puts the key in the URL's query (never in the page's own
    /// address, where it is a fragment).
    static func presentedKey(in target: String) -> String? {
        guard let query = target.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in query.split(separator: "&") where pair.hasPrefix("key=") {
            return String(pair.dropFirst(4)).removingPercentEncoding
        }
        return nil
    }

    private func error(_ path: String?, _ message: String) -> String {
        OSCQueryCommand.message("ERROR", ["path": path ?? "", "message": message])
    }
}
