import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OSCControl
import OSCTransport

/// What a request's context carries beyond Hummingbird's: the addresses of its connection (the
/// allow list reads the peer's; HOST_INFO the local one when bound to every interface).
struct HTTPRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: NIOCore.SocketAddress?
    let localAddress: NIOCore.SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        remoteAddress = source.channel.remoteAddress
        localAddress = source.channel.localAddress
    }
}

/// Answers every request (docs/HTTP.md): 403 outside `osc.allow`, 413 for a body over the
/// limit, 405 for methods other than GET and HEAD, then OSCQuery: the namespace at `/` and every
/// path, `?HOST_INFO`, `?<ATTRIBUTE>`; 404 for unknown paths, 400 for bad queries, 204 for an
/// attribute the node does not have.
struct OSCQueryResponder: HTTPResponder {
    typealias Context = HTTPRequestContext

    let control: ControlServer
    let configuration: HTTPControlServer.Configuration
    let logger: Logger

    /// OSCQuery extensions and whether they are built (LISTEN and the path notifications need
    /// the WebSocket, which is not there yet).
    static let extensions: [String: Bool] = [
        "ACCESS": true, "VALUE": true, "RANGE": true, "DESCRIPTION": true, "UNIT": true,
        "TAGS": false, "EXTENDED_TYPE": false, "CRITICAL": false, "CLIPMODE": false, "OVERLOADS": false, "HTML": false,
        "LISTEN": false, "PATH_CHANGED": false, "PATH_RENAMED": false, "PATH_ADDED": false, "PATH_REMOVED": false,
    ]

    func respond(to request: Request, context: HTTPRequestContext) async throws -> Response {
        guard let peer = context.remoteAddress, allowed(peer) else {
            logger.notice("refused HTTP from a sender outside osc.allow", metadata: ["peer": "\(context.remoteAddress.map { "\($0)" } ?? "unknown")"])
            return text(.forbidden, "\(context.remoteAddress?.ipAddress ?? "this address") is not allowed to control this router (osc.allow)")
        }
        // A body is read up to the limit and no further, whatever the method.
        do {
            _ = try await request.body.collect(upTo: configuration.maximumBodyBytes)
        } catch {
            return text(.contentTooLarge, "request bodies are limited to \(configuration.maximumBodyBytes) bytes")
        }
        guard request.method == .get || request.method == .head else {
            var response = text(.methodNotAllowed, "only GET and HEAD")
            response.headers[.allow] = "GET, HEAD"
            return response
        }
        let response = await answer(request, context: context)
        if request.method == .head {
            var head = Response(status: response.status, headers: response.headers)
            head.headers[.contentLength] = response.headers[.contentLength]
            return head
        }
        return response
    }

    private func answer(_ request: Request, context: HTTPRequestContext) async -> Response {
        guard let path = request.uri.path.removingPercentEncoding else {
            return text(.badRequest, "the path is not valid percent-encoding")
        }
        enum Asked { case node, hostInfo, attribute(OSCQueryNode.Attribute) }
        let asked: Asked
        switch request.uri.query {
        case nil, "": asked = .node
        case "HOST_INFO": asked = .hostInfo
        case let query?:
            guard let attribute = OSCQueryNode.Attribute(rawValue: query) else {
                let known = (["HOST_INFO"] + OSCQueryNode.Attribute.allCases.map(\.rawValue)).joined(separator: ", ")
                return text(.badRequest, "unknown query '\(query.prefix(64))': expected one of \(known)")
            }
            asked = .attribute(attribute)
        }
        let wildcard = configuration.bind == "0.0.0.0" || configuration.bind == "::"
        let oscIP = wildcard ? (context.localAddress?.ipAddress ?? configuration.bind) : configuration.bind
        let found: (node: OSCQueryNode?, client: String, oscPort: UInt16) = await control.read { reader in
            (Namespace(reader).build().node(at: path), reader.status.client, reader.configuration.port)
        }
        guard let node = found.node else { return text(.notFound, "no such path: \(path.prefix(256))") }
        switch asked {
        case .node:
            return json(node.jsonObject())
        case .hostInfo:
            return json([
                "NAME": found.client, "EXTENSIONS": Self.extensions,
                "OSC_IP": oscIP, "OSC_PORT": Int(found.oscPort), "OSC_TRANSPORT": "UDP",
            ] as [String: Any])
        case let .attribute(attribute):
            guard let value = node.jsonValue(of: attribute) else { return Response(status: .noContent) }
            return json([attribute.rawValue: value])
        }
    }

    private func allowed(_ peer: NIOCore.SocketAddress) -> Bool {
        guard let host = peer.ipAddress, let port = peer.port,
              let address = OSCTransport.SocketAddress(host: host, port: UInt16(clamping: port)) else { return false }
        return configuration.allow.contains { $0.contains(address.bytes, port: address.port) }
    }

    private func json(_ object: Any) -> Response {
        body(.ok, OSCQueryJSON.data(object), type: "application/json")
    }

    private func text(_ status: HTTPResponse.Status, _ message: String) -> Response {
        body(status, Data((message + "\n").utf8), type: "text/plain; charset=utf-8")
    }

    private func body(_ status: HTTPResponse.Status, _ data: Data, type: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.contentLength] = "\(data.count)"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension Namespace {
    /// The namespace as one reading of the control plane sees it.
    init(_ reader: ControlServer.Reader) {
        self.init(apps: reader.status.apps.map { App(name: $0.name, state: $0.state) },
                  routes: reader.status.routes.map { Route(name: $0.name, volume: $0.volume) },
                  answer: { try? reader.value($0).get() })
    }
}
