import Foundation
import Logging
import NIOCore

/// Stops the HTTP server's accept loop for a while when accepting fails for want of descriptors
/// or memory (docs/HTTP.md, "Limits"), so the loop does not spin while the process is at its
/// descriptor limit. The first handler of the listening channel's pipeline.
///
/// SwiftNIO's own `AcceptBackoffHandler`, which every `ServerBootstrap` adds, does not stop it: a
/// failed accept leaves the listening socket registered for reading, so the event loop wakes at
/// once and fails again (measured at the limit: about 14,000 failed `accept4` a second, most of a
/// core). This turns the channel's `autoRead` off, which unregisters the socket, and on again
/// after `pause`; peers wait in the listen backlog meanwhile.
///
/// Event loop only.
final class AcceptPause: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let pause: TimeAmount
    private let logger: Logger
    private var resuming: Scheduled<Void>?
    private var lastLogged: NIODeadline?

    init(pause: TimeAmount = .seconds(1), logger: Logger) {
        self.pause = pause
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if resuming == nil, let error = error as? IOError, [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.errnoCode),
           let options = context.channel.syncOptions {
            try? options.setOption(ChannelOptions.autoRead, value: false)
            resuming = context.eventLoop.assumeIsolated().scheduleTask(in: pause) { [self] in
                resuming = nil
                try? context.channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
            }
            // At most a line a minute while it lasts.
            let now = NIODeadline.now()
            if lastLogged.map({ now - $0 >= .seconds(60) }) ?? true {
                lastLogged = now
                logger.warning("HTTP cannot accept connections: \(error); pausing accepts for \(pause.nanoseconds / 1_000_000) ms at a time")
            }
        }
        context.fireErrorCaught(error)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        resuming?.cancel()
        resuming = nil
    }
}
