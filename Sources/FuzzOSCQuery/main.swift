import CFuzzerDriver
import Foundation
import HTTPControl

/// libFuzzer target: arbitrary bytes as what an OSCQuery peer controls in our own code (the
/// WebSocket frames and the HTTP parsing are SwiftNIO's): a text frame as an OSCQuery command,
/// and the Host and Origin headers of a WebSocket upgrade. Bad input is an error value, never a
/// crash; a command that decodes names a path that starts with "/" and is not too long.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOSCQuery(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let text = String(decoding: bytes, as: UTF8.self)
    if case let .success(command) = OSCQueryCommand.decode(text) {
        switch command {
        case let .listen(path), let .ignore(path):
            precondition(path.hasPrefix("/") && path.utf8.count <= 1024, "a decoded command names a path")
        }
    }
    // The first line as Host, the rest as Origin.
    let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
    _ = OriginCheck.refusal(host: lines.first, origin: lines.count > 1 ? lines[1] : nil, machineNames: ["rig"])
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzOSCQuery($0, $1) })
