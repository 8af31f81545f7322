import ControlVocabulary
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OSCTransport
import Policy

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

/// Answers every request the connection gate lets through (docs/HTTP.md; peers outside
/// `osc.allow` never get here): 413 for a body over the limit, 405 for methods other than GET and
/// HEAD, then OSCQuery: `?HOST_INFO` on any path, the namespace at `/` and every path,
/// `?<ATTRIBUTE>`; 404 for unknown paths, 400 for bad queries, 204 for an attribute the node does
/// not have, `{}` for the VALUE of a readable node that has none now; 503 while the control
/// plane cannot be read (starting, stopping). The gate strips bodies from answers to HEAD.
struct OSCQueryResponder: HTTPResponder {
    typealias Context = HTTPRequestContext

    let control: AttachedControl
    let configuration: HTTPControlServer.Configuration
    let page: ControlPage
    let logger: Logger

    /// OSCQuery extensions and whether they are built (LISTEN and the path notifications ride on
    /// the WebSocket, on this same port).
    static let extensions: [String: Bool] = [
        "ACCESS": true, "VALUE": true, "RANGE": true, "DESCRIPTION": true, "UNIT": true,
        "TAGS": false, "EXTENDED_TYPE": false, "CRITICAL": false, "CLIPMODE": false, "OVERLOADS": false, "HTML": false,
        "LISTEN": true, "PATH_CHANGED": false, "PATH_RENAMED": false, "PATH_ADDED": true, "PATH_REMOVED": true,
    ]

    func respond(to request: Request, context: HTTPRequestContext) async throws -> Response {
        // A body is read up to the limit and no further, whatever the method.
        do {
            _ = try await request.body.collect(upTo: configuration.maximumBodyBytes)
        } catch {
            return text(.contentTooLarge, "request bodies are limited to \(configuration.maximumBodyBytes) bytes")
        }
        // A name that is not this machine's: a page from elsewhere rebound to our address.
        if let host = request.head.authority, let refusal = OriginCheck.hostRefusal(host, machineNames: OriginCheck.machineNames) {
            return text(.forbidden, refusal)
        }
        guard request.method == .get || request.method == .head else {
            var response = text(.methodNotAllowed, "only GET and HEAD")
            response.headers[.allow] = "GET, HEAD"
            return response
        }
        // The control page: /ui/, and / for a browser (it asks for HTML; OSCQuery clients do not).
        let path = request.uri.path
        if path == "/ui" {
            var response = Response(status: .permanentRedirect)
            response.headers[.location] = "/ui/"
            response.headers[.contentLength] = "0"
            return response
        }
        if path.hasPrefix("/ui/") {
            return pageFile(path == "/ui/" ? "index.html" : String(path.dropFirst(4)))
        }
        if path == "/", (request.uri.query ?? "").isEmpty, request.headers[.accept]?.contains("text/html") == true {
            return pageFile("index.html")
        }
        return await answer(request, context: context)
    }

    private func pageFile(_ name: String) -> Response {
        guard !page.files.isEmpty else {
            return text(.notFound, "the control page's files were not found (looked in \(page.searched.joined(separator: ", ")))")
        }
        guard let file = page.files[name] else { return text(.notFound, "no such file: /ui/\(name.prefix(128))") }
        var response = body(.ok, file.data, type: file.contentType)
        // Always asked again: a page from an older router must not drive a newer one.
        response.headers[.cacheControl] = "no-cache"
        // Never inside another site's frame (its clicks would be ours), nothing loaded from
        // elsewhere, no guessing at types.
        response.headers[.contentSecurityPolicy] = "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[.xContentTypeOptions] = "nosniff"
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
        guard let control = control.get() else { return unavailable }
        if case .hostInfo = asked {
            // The path is irrelevant to HOST_INFO (OSCQueryProposal), and it needs no namespace.
            let wildcard = configuration.bind == "0.0.0.0" || configuration.bind == "::"
            let oscIP = wildcard ? (context.localAddress?.ipAddress ?? configuration.bind) : configuration.bind
            guard let host = await control.hostInfo() else { return unavailable }
            // The WebSocket is on this port: the address the request came in on.
            let wsIP = context.localAddress?.ipAddress ?? configuration.bind
            return json([
                "NAME": host.client, "EXTENSIONS": Self.extensions,
                "OSC_IP": oscIP, "OSC_PORT": Int(host.oscPort), "OSC_TRANSPORT": "UDP",
                "WS_IP": wsIP, "WS_PORT": context.localAddress?.port ?? configuration.port,
            ] as [String: Any])
        }
        guard let found = await control.read({ reader in Namespace(reader).build().node(at: path) }) else { return unavailable }
        guard let node = found else { return text(.notFound, "no such path: \(path.prefix(256))") }
        switch asked {
        case .node, .hostInfo:
            return json(node.jsonObject())
        case let .attribute(attribute):
            guard let answer = node.attributeAnswer(attribute) else { return Response(status: .noContent) }
            return json(answer)
        }
    }

    private var unavailable: Response {
        text(.serviceUnavailable, "the router is starting or stopping; try again")
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
    /// Everything `init(_ reading:)` reads from a reading but the peaks: two readings with equal
    /// inputs have the same paths and the same values (meters aside). Whatever the namespace comes
    /// to read must be added here too, or listeners miss its changes.
    struct Inputs: Equatable, Sendable {
        /// Whatever `answer` reads of the router (the queries' replies, an app's why).
        var policy: PolicyState
        /// Each app's name and state, each route's name and volume.
        var apps: [String]
        var routes: [String]
        var nowPlaying: String?
        var outsideInterruptions: [String]
        /// The one reply that comes from the OSC server, not the router: `/app/<name>/notify`.
        var notify: [String: String]

        init(_ reading: ControlReading) {
            policy = reading.policy
            apps = reading.apps.map { "\($0.name) \($0.state)" }
            routes = reading.routes.map { "\($0.name) \($0.volume)" }
            nowPlaying = reading.nowPlaying
            outsideInterruptions = reading.outsideInterruptions
            notify = reading.notify
        }
    }

    /// The namespace as one reading of the control plane sees it.
    init(_ reading: ControlReading) {
        self.init(apps: reading.withWhy().apps, routes: reading.routes, nowPlaying: reading.nowPlaying,
                  outsideInterruptions: reading.outsideInterruptions, answer: { try? reading.value($0).get() })
    }
}
