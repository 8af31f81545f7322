import CFuzzerDriver
import Foundation
import ControlVocabulary
import OSCTransport

/// libFuzzer target: arbitrary bytes as an OSC packet, as the OSC server hands them on. Decoding
/// (liblo, then the bundle framing) and turning each message into a command must never crash:
/// bad input is an error value, and whatever decodes must encode again.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOSC(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    guard let packet = try? OSCCodec.decode(bytes) else { return 0 }
    for message in OSCClient.messages(in: packet) {
        _ = try? ControlCommand.decode(message)
        let again = OSCCodec.encode(message)
        precondition(!again.isEmpty, "a decoded message encodes again")
    }
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzOSC($0, $1) })
