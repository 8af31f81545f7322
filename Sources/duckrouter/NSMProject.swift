import Foundation
import OSCTransport
import SessionStore

/// An NSM client's project file made ready before anything starts (docs/SESSIONS.md, "Under the
/// New Session Manager"): `<path>.json` is made from a template when the client is new, and given
/// an OSC port and an HTTP port of its own when it names none, written into it so that control
/// surfaces find the instance on the same ports after every reopen.
///
/// Every duckrouter of one NSM session keeps its project file in the session's folder, so the
/// folder is locked while ports are chosen and the other project files there are read: two
/// instances started together never choose the same port.
struct NSMProject {
    struct Failure: Error, CustomStringConvertible {
        var code: NSMClient.ErrorCode
        var description: String
    }

    var sessionPath: String
    var statePath: String
    /// What was done, for the log and the session manager ("made from …", "ports chosen …").
    var notes: [String]

    /// Where the search starts for a session that names no port: the router's defaults.
    static let defaultOSCPort = UInt16(clamping: Session.OSCSettings().port)
    static let defaultHTTPPort = UInt16(clamping: Session.HTTPSettings().port)

    /// Makes `<path>.json` ready: from `search`'s template when there is none; with the ports
    /// chosen that it does not name. `oscPort`, `httpPort` and `bind`: the command line's, which
    /// win over the file's and are never written into it.
    static func prepare(path: String, search: SessionTemplate.Search, oscPort: Int?, httpPort: Int?,
                        bind: String?) throws(Failure) -> NSMProject {
        let sessionPath = path + ".json"
        var project = NSMProject(sessionPath: sessionPath, statePath: path + ".state.json", notes: [])
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw Failure(code: .createFailed, description: "cannot create the session folder \(folder): \(error.localizedDescription)")
        }
        let lock = FolderLock(folder)
        defer { lock.unlock() }

        let isNew = !FileManager.default.fileExists(atPath: sessionPath)
        let text: Data
        if isNew {
            do throws(SessionTemplate.Failure) {
                let (template, reason) = try search.find()
                text = try SessionTemplate.read(template, for: sessionPath)
                project.notes.append("a new session made from \(template) (\(reason))")
            } catch {
                throw Failure(code: .createFailed, description: error.description)
            }
            do {
                _ = try SessionLoader.parse(text, file: sessionPath)
            } catch {
                throw Failure(code: .createFailed, description: "the template is not a valid session: \(error)")
            }
        } else {
            guard let existing = FileManager.default.contents(atPath: sessionPath) else {
                throw Failure(code: .badProject, description: "cannot read \(sessionPath)")
            }
            text = existing
        }
        // A file that is not a session is for the loader to describe (its answer names the line).
        guard let named = SessionPorts.named(in: text) else { return project }

        let host = bind ?? named.bind ?? "127.0.0.1"
        var taken = siblingPorts(in: folder, except: sessionPath)
        if let oscPort { taken.insert(UInt16(oscPort)) }
        if let httpPort { taken.insert(UInt16(httpPort)) }
        var osc: UInt16?
        var http: UInt16?
        if oscPort == nil, isNew || named.osc == nil {
            let start = named.osc ?? defaultOSCPort
            guard let port = FreePorts.first(from: start, host: host, udp: true, avoiding: taken) else {
                throw Failure(code: .general, description: "no port free for OSC (UDP and TCP) on \(host) from \(start) on")
            }
            osc = port
            taken.insert(port)
        }
        // http.port 0: HTTP off, as the template has it.
        if httpPort == nil, named.http != 0, isNew || named.http == nil {
            let start = named.http ?? defaultHTTPPort
            guard let port = FreePorts.first(from: start, host: host, udp: false, avoiding: taken) else {
                throw Failure(code: .general, description: "no port free for HTTP on \(host) from \(start) on")
            }
            http = port
        }
        guard isNew || osc != nil || http != nil else { return project }

        let written: Data
        do {
            written = try SessionPorts.setting(osc: osc, http: http, in: text)
        } catch {
            throw Failure(code: isNew ? .createFailed : .badProject, description: "\(sessionPath): \(error.description)")
        }
        do {
            if isNew {
                try SessionTemplate.create(sessionPath, contents: written)
            } else {
                try SessionPorts.replace(sessionPath, with: written)
            }
        } catch {
            throw Failure(code: isNew ? .createFailed : .general, description: "\(error)")
        }
        let chosen = [osc.map { "OSC port \($0)" }, http.map { "HTTP port \($0)" }].compactMap { $0 }
        if !chosen.isEmpty {
            project.notes.append("\(chosen.joined(separator: " and ")) chosen for this instance, kept in \(sessionPath)")
        }
        return project
    }

    /// The ports the other session files in `folder` name: the other duckrouters of this NSM
    /// session (files of other programs that are not sessions name none).
    static func siblingPorts(in folder: String, except own: String) -> Set<UInt16> {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return [] }
        var ports: Set<UInt16> = []
        for name in names where name.hasSuffix(".json") && !name.hasSuffix(".state.json") {
            let path = folder + "/" + name
            guard path != own,
                  let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size < 1 << 20,
                  let data = FileManager.default.contents(atPath: path), let named = SessionPorts.named(in: data) else { continue }
            for port in [named.osc, named.http].compactMap({ $0 }) where port != 0 { ports.insert(port) }
        }
        return ports
    }
}

/// An exclusive flock on a folder, held until `unlock` (or the process ends).
private struct FolderLock {
    let fd: Int32

    init(_ folder: String) {
        fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        // Without the lock (a folder that cannot be opened), ports are still checked free.
        if fd >= 0 { _ = flock(fd, LOCK_EX) }
    }

    func unlock() {
        if fd >= 0 { close(fd) }
    }
}
