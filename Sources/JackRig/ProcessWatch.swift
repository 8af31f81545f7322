import Foundation

// What a long run (ducksoak, duckhostile) watches of the daemon it drives, from outside: its
// memory, descriptors, UDP drops and threads; and the seedable random numbers that make a failing
// run repeatable.

/// A small, seedable random generator, so a failing run can be repeated with --seed.
public struct SplitMix {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}

public func residentKB(_ pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
    return Int(line.split(separator: " ").dropFirst().first ?? "")
}

/// Datagrams the kernel dropped at the UDP sockets bound to `port` (full receive buffers), from
/// the drops column of /proc/net/udp and udp6; nil when no such socket is listed.
public func udpDrops(port: UInt16) -> Int? {
    var total: Int?
    for file in ["/proc/net/udp", "/proc/net/udp6"] {
        guard let table = try? String(contentsOfFile: file, encoding: .utf8) else { continue }
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count >= 13, let local = fields[1].split(separator: ":").last,
                  UInt16(local, radix: 16) == port, let drops = Int(fields[12]) else { continue }
            total = (total ?? 0) + drops
        }
    }
    return total
}

/// Every thread's stack of a process that hangs, from gdb when it is installed.
public func threadStacks(_ pid: Int32) -> String {
    let gdb = Process()
    gdb.executableURL = URL(fileURLWithPath: "/usr/bin/gdb")
    gdb.arguments = ["-p", "\(pid)", "-batch", "-ex", "thread apply all bt 25"]
    let output = Pipe()
    gdb.standardOutput = output
    gdb.standardError = FileHandle.nullDevice
    guard (try? gdb.run()) != nil else { return "(no gdb)" }
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    gdb.waitUntilExit()
    return text
}

/// How many descriptors process `pid` has open (the entries of /proc/PID/fd); nil when unreadable.
public func openDescriptors(_ pid: Int32) -> Int? {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
}

/// How many threads process `pid` runs (the entries of /proc/PID/task); nil when unreadable.
public func threadCount(_ pid: Int32) -> Int? {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"))?.count
}

/// What of a daemon's log to print after a failed run: a crash report whole (the crashed
/// thread's frames come first, then registers and a long list of images: its first 400 lines,
/// with the 20 before it), else its last `lastLines` lines. The whole log is kept by the caller.
public func daemonLogExcerpt(_ log: String, lastLines: Int) -> String {
    let lines = log.split(separator: "\n", omittingEmptySubsequences: false)
    if let crash = lines.firstIndex(where: { $0.contains("Program crashed") }) {
        return "duckrouter's log, the 20 lines before its crash report and the report (its first 400 lines; the whole log is kept):\n"
            + (lines[..<crash].suffix(20) + lines[crash...].prefix(400)).joined(separator: "\n")
    }
    return "duckrouter's log (last \(lastLines) lines):\n" + lines.suffix(lastLines).joined(separator: "\n")
}
