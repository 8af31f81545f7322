import Foundation

/// The OSC and HTTP ports a session file names, and the same file with ports written into it:
/// an NSM client's project file gets ports of its own that way (docs/SESSIONS.md, "Under the New
/// Session Manager"), with the rest of its text left as it was written.
public enum SessionPorts {
    /// What a session file says of its listeners (nil: it says nothing).
    public struct Named: Equatable, Sendable {
        public var osc: UInt16?
        public var http: UInt16?
        /// `osc.bind`, where both listen.
        public var bind: String?
        /// A port field that is there but not a port (a string, a fraction, out of range), or a
        /// section that is not an object: a mistake for the loader to report, not a port to fill in.
        public var malformed = false

        public init(osc: UInt16? = nil, http: UInt16? = nil, bind: String? = nil, malformed: Bool = false) {
            self.osc = osc
            self.http = http
            self.bind = bind
            self.malformed = malformed
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The ports and bind address a session file's text names; nil when the text is not a JSON
    /// object (the loader says what is wrong with it).
    public static func named(in data: Data) -> Named? {
        guard let parsed = try? JSONParser.parse(data), case let .object(root) = parsed.value else { return nil }
        var named = Named()
        func port(_ section: String) -> UInt16? {
            switch root[section] {
            case nil: return nil
            case let .object(fields)?:
                guard let value = fields["port"] else { return nil }
                guard case let .number(number) = value, number == number.rounded(), (0...65535).contains(number) else {
                    named.malformed = true
                    return nil
                }
                return UInt16(number)
            case .some:
                named.malformed = true
                return nil
            }
        }
        named.osc = port("osc")
        named.http = port("http")
        if case let .object(fields)? = root["osc"], case let .string(text)? = fields["bind"] { named.bind = text }
        return named
    }

    /// `data` with `osc.port` set to `osc` and `http.port` to `http` (nil: left as it is): a
    /// value that is there is replaced, a field or section that is not is added at the top of its
    /// object; every other byte stays as it was.
    public static func setting(osc: UInt16?, http: UInt16?, in data: Data) throws(Failure) -> Data {
        let parsed: JSONParser.Parsed
        do {
            parsed = try JSONParser.parse(data)
        } catch {
            throw Failure(description: "not valid JSON: \(error.message) (line \(error.line), column \(error.column))")
        }
        guard case let .object(root) = parsed.value, let rootSpan = parsed.spans[""] else {
            throw Failure(description: "not a session: the file is not a JSON object")
        }
        // (where, how many bytes to replace, what to put there), applied from the end back.
        var edits: [(at: Int, replacing: Int, with: String)] = []
        var newSections: [String] = []
        for (section, port) in [("osc", osc), ("http", http)] {
            guard let port else { continue }
            switch root[section] {
            case nil:
                newSections.append("\"\(section)\": { \"port\": \(port) }")
            case let .object(fields)?:
                if let span = parsed.spans["\(section).port"] {
                    edits.append((span.lowerBound, span.count, "\(port)"))
                } else if let span = parsed.spans[section] {
                    edits.append((span.lowerBound + 1, 0, fields.isEmpty ? " \"port\": \(port) " : " \"port\": \(port),"))
                }
            case .some:
                throw Failure(description: "'\(section)' is not an object, so it cannot take a port")
            }
        }
        if !newSections.isEmpty {
            let members = newSections.map { "\n  " + $0 }.joined(separator: ",")
            edits.append((rootSpan.lowerBound + 1, 0, root.isEmpty ? members + "\n" : members + ","))
        }
        var bytes = [UInt8](data)
        for edit in edits.sorted(by: { $0.at > $1.at }) {
            bytes.replaceSubrange(edit.at..<edit.at + edit.replacing, with: Array(edit.with.utf8))
        }
        let result = Data(bytes)
        // The edit must say what was asked, and nothing else may have moved.
        guard let check = named(in: result), osc == nil || check.osc == osc, http == nil || check.http == http else {
            throw Failure(description: "the ports could not be written into the file's text")
        }
        return result
    }

    /// Replaces the file at `path` with `data` (atomically: a reader sees the old file or the new
    /// one, never part of either).
    public static func replace(_ path: String, with data: Data) throws(Failure) {
        do {
            _ = try AtomicFile.write(data, to: path, replacing: true)
        } catch {
            throw Failure(description: "cannot write \(path): \(error.description)")
        }
    }
}
