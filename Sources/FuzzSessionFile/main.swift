import CFuzzerDriver
import Foundation
import SessionStore

/// libFuzzer target: arbitrary bytes as a session file and as a state file. Neither may crash,
/// hang or fail to report; everything bad must come out as a SessionError / StateFile error.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzSessionFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Data(bytes: $0, count: size) } ?? Data()
    do {
        let session = try SessionLoader.parse(bytes, file: "fuzz.json")
        _ = session.applying(SavedState(silent: false, selectedRoute: nil, ducking: .init(level: -14, attack: 100, release: 500),
                                        routeVolumes: [:], appVolumes: [:], apps: []))
    } catch {
        precondition(!error.description.isEmpty)
    }
    if let saved = try? JSONDecoder().decode(SavedState.self, from: bytes) {
        _ = Session().applying(saved)
    }
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { fuzzSessionFile($0, $1) })
