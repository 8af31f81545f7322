import Foundation
import HummingbirdWebSocket
import Logging
import NIOCore
import OSCControl
import OSCTransport

/// One OSCQuery WebSocket connection, from upgrade to close (docs/HTTP.md, "WebSocket").
///
/// - Binary frames are OSC packets, handed to the OSC server as a stream connection
///   (`ControlServer.openStream`): executed exactly as OSC over TCP, with the rights of a person's
///   control surface (`osc.admin`); replies, errors, notifications and meters come back as binary
///   frames.
/// - Text frames are OSCQuery commands (LISTEN, IGNORE), followed by the listen hub; one that
///   cannot be followed gets `{"COMMAND": "ERROR", "DATA": {"path": …, "message": …}}`.
///
/// Two tasks: this one reads, a child writes what the outbound queue holds, one frame at a time,
/// waiting for the socket. Everything sent to the peer goes through that bounded queue, so a peer
/// that never reads holds at most `queueLimit` bytes and delays nobody; it is closed by the
/// WebSocket's pings.
struct WebSocketSession {
    /// OSC packets of one WebSocket handed to the OSC server and not yet run, past which it is
    /// not read until some have run.
    static let maximumBacklog = 256

    let control: ControlServer
    let hub: ListenHub
    let peer: OSCTransport.SocketAddress
    let queueLimit: Int
    let maximumMessageBytes: Int
    let logger: Logger

    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async {
        let queue = OutboundQueue(limit: queueLimit)
        let stream = control.openStream(from: peer, admin: true) { packet, conflatable in
            queue.push(.binary(packet), conflatable: conflatable)
        }
        let id = stream.id
        await hub.add(id, queue: queue)
        logger.info("WebSocket opened", metadata: ["peer": "\(peer)", "connection": "\(id)"])
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while let frame = await queue.next() {
                    do {
                        switch frame {
                        case let .text(text): try await outbound.write(.text(text))
                        case let .binary(bytes): try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
                        }
                    } catch {
                        break
                    }
                }
            }
            await read(inbound, stream: stream, queue: queue)
            queue.close()
        }
        control.closeStream(stream)
        await hub.remove(id)
        logger.info("WebSocket closed", metadata: ["peer": "\(peer)", "connection": "\(id)"])
    }

    private func read(_ inbound: WebSocketInboundStream, stream: OSCServer.StreamHandle, queue: OutboundQueue) async {
        let id = stream.id
        do {
            for try await message in inbound.messages(maxSize: maximumMessageBytes) {
                switch message {
                case let .binary(buffer):
                    control.receive(Array(buffer.readableBytesView), on: stream)
                    // A peer that sends faster than its commands run waits here, not reading:
                    // its TCP window closes and it slows down; nobody else waits for it.
                    while stream.backlog >= Self.maximumBacklog, !Task.isCancelled {
                        try await Task.sleep(for: .milliseconds(2))
                    }
                case let .text(text):
                    switch OSCQueryCommand.decode(text) {
                    case let .success(.listen(path)):
                        if let problem = await hub.listen(id, path) { queue.push(.text(error(path, problem))) }
                    case let .success(.ignore(path)):
                        await hub.ignore(id, path)
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

    private func error(_ path: String?, _ message: String) -> String {
        OSCQueryCommand.message("ERROR", ["path": path ?? "", "message": message])
    }
}
