import Foundation
import OSCTransport

/// An NSM client's project file made ready before anything starts (docs/SESSIONS.md, "Under the
/// New Session Manager"): `<path>.json` is made from a template when the client is new, and given
/// an OSC port and an HTTP port of its own when it names none, written into it so that control
/// surfaces find the instance on the same ports after every reopen.
///
/// Every duckrouter of one NSM session keeps its project file in the session's folder, so the
/// folder is locked while ports are chosen and the other project files there are read: two
/// instances started together never choose the same port.
public struct NSMProject: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public var code: NSMClient.ErrorCode
        public var description: String
    }

    public var sessionPath: String
    public var statePath: String
    /// What was done, for the log and the session manager ("made from …", "ports chosen …").
    public var notes: [String]

    /// Where the search starts for a session that names no port: the router's defaults.
    public static let defaultOSCPort = UInt16(clamping: Session.OSCSettings().port)
    public static let defaultHTTPPort = UInt16(clamping: Session.HTTPSettings().port)

    /// Makes `<path>.json` ready: from `search`'s template when there is none; with the ports
    /// chosen that it does not name. `oscPort`, `httpPort` and `bind`: the command line's, which
    /// win over the file's and are never written into it. The folder lock is waited for
    /// `lockTimeout` seconds at most; `defaults`: where the search starts for a port the file
    /// does not name.
    public static func prepare(path: String, search: SessionTemplate.Search, oscPort: Int?, httpPort: Int?,
                               bind: String?, lockTimeout: Double = 10,
                               defaults: (osc: UInt16, http: UInt16) = (defaultOSCPort, defaultHTTPPort)) throws(Failure) -> NSMProject {
        let sessionPath = path + ".json"
        var project = NSMProject(sessionPath: sessionPath, statePath: path + ".state.json", notes: [])
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw Failure(code: .createFailed, description: "cannot create the session folder \(folder): \(error.localizedDescription)")
        }
        let lock = try FolderLock(folder, timeout: lockTimeout)
        defer { lock.unlock() }

        let isNew = !FileManager.default.fileExists(atPath: sessionPath)
        let text: Data
        if isNew {
            let template: String
            do throws(SessionTemplate.Failure) {
                let reason: String
                (template, reason) = try search.find()
                text = try SessionTemplate.read(template, for: sessionPath)
                project.notes.append("a new session made from \(template) (\(reason))")
            } catch {
                throw Failure(code: .createFailed, description: error.description)
            }
            do {
                _ = try SessionLoader.parse(text, file: template)
            } catch {
                throw Failure(code: .createFailed, description: "cannot create \(sessionPath): the template is not a valid session: \(error)")
            }
        } else {
            guard let existing = FileManager.default.contents(atPath: sessionPath) else {
                throw Failure(code: .badProject, description: "cannot read \(sessionPath)")
            }
            text = existing
        }
        // A file that is not a session, or names a port that is not one, is for the loader to
        // describe (its answer names the line): nothing is chosen over it.
        guard let named = SessionPorts.named(in: text), !named.malformed else { return project }

        let host = bind ?? named.bind ?? "127.0.0.1"
        // Ports of the other instances, the command line's and, for a file that was there, its
        // own (an older file's osc.port is not to be chosen for HTTP): none chosen twice. A
        // template's ports are where the search starts, free to be chosen.
        var taken = siblingPorts(in: folder, except: sessionPath)
        let own = isNew ? [] : [named.osc.map(Int.init), named.http.map(Int.init)]
        for port in [oscPort, httpPort] + own {
            if let port, port > 0 { taken.insert(UInt16(port)) }
        }
        var osc: UInt16?
        var http: UInt16?
        if oscPort == nil, isNew || named.osc == nil {
            let start = named.osc ?? defaults.osc
            guard let port = FreePorts.first(from: start, host: host, udp: true, avoiding: taken) else {
                throw Failure(code: .general, description: "no port free for OSC (UDP and TCP) on \(host) from \(start) on")
            }
            osc = port
            taken.insert(port)
        }
        // http.port 0: HTTP off, as the template has it.
        if httpPort == nil, named.http != 0, isNew || named.http == nil {
            let start = named.http ?? defaults.http
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
        let ownName = URL(fileURLWithPath: own).lastPathComponent
        var ports: Set<UInt16> = []
        for name in names where name.hasSuffix(".json") && !name.hasSuffix(".state.json") && name != ownName {
            let path = folder + "/" + name
            guard let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int, size < 1 << 20,
                  let data = FileManager.default.contents(atPath: path), let named = SessionPorts.named(in: data) else { continue }
            for port in [named.osc, named.http].compactMap({ $0 }) where port != 0 { ports.insert(port) }
        }
        return ports
    }
}

/// An exclusive flock on a folder, held until `unlock` (or the process ends).
private struct FolderLock {
    private(set) var fd: Int32

    /// Waits `timeout` seconds at most for the lock (another instance holds it only while it
    /// chooses its ports; one that holds it longer is stuck, and this start says so).
    init(_ folder: String, timeout: Double) throws(NSMProject.Failure) {
        fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        // Without the lock (a folder that cannot be opened), ports are still checked free.
        guard fd >= 0 else { return }
        let deadline = ProcessInfo.processInfo.systemUptime + timeout
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let reason = errno
            // A file system without flock (some network mounts): as without the lock.
            guard reason == EWOULDBLOCK || reason == EINTR else {
                close(fd)
                fd = -1
                return
            }
            guard ProcessInfo.processInfo.systemUptime < deadline else {
                close(fd)
                throw NSMProject.Failure(code: .general, description: "the session folder \(folder) stayed locked by another duckrouter for \(Int(timeout)) s")
            }
            usleep(20_000)
        }
    }

    func unlock() {
        if fd >= 0 { close(fd) }
    }
}
