import ControlVocabulary
import Foundation
import OSCTransport
import Testing

/// The ownership rule read from the vocabulary, through the real daemon: an app's paths are its
/// owner's, every one of them, including any a later row adds.
@Suite("Vocabulary: every app's path is its owner's", .serialized)
struct VocabularyOwnershipTests {
    @Test("a peer that neither registered the app nor is an admin gets -5 for every path of the table that changes an app, and the app is unchanged")
    func everyAppPathIsTheOwners() throws {
        let rig = try OSCRig()
        defer { rig.close() }
        let owner = try OSCClient(OSCURL(transport: .tcp, host: "127.0.0.1", port: rig.port))
        let other = try OSCClient(OSCURL(transport: .tcp, host: "127.0.0.1", port: rig.port))
        #expect(try ask(owner, OSCMessage("/app/register", [.string("synth"), .string("playback")]))?.path == "/reply")
        let before = try app("synth", in: rig.settings())
        var checked: [String] = []
        for row in Vocabulary.rows where row.overOSC && row.scope != .shared {
            let example = try #require(row.example, "\(row.path) has no example to send")
            let message = switch row.scope {
            case .appInFirstArgument: OSCMessage(row.path, [.string("synth")] + example.dropFirst())
            default: OSCMessage(row.path(for: "synth"), example)
            }
            let answer = try ask(other, message)
            #expect(answer?.path == "/error" && answer?.arguments.dropFirst().first == .int32(-5),
                    "\(message.path) \(message.arguments): \(String(describing: answer))")
            checked.append(row.path)
        }
        print("everyAppPathIsTheOwners: -5 for \(checked.count) paths: \(checked.joined(separator: " "))")
        #expect(checked.count >= 11 && checked.count == Vocabulary.rows.filter { $0.overOSC && $0.scope != .shared }.count)
        #expect(try app("synth", in: rig.settings()) == before, "nothing changed")
        // The owner may (the same message the other was refused).
        #expect(try ask(owner, OSCMessage("/app/synth/volume", [.float(0.5)]))?.path == "/reply")
    }

    /// The app's entry in `/state`'s settings, as text (sorted keys).
    private func app(_ name: String, in settings: [String: Any]) throws -> String {
        let apps = try #require(settings["apps"] as? [[String: Any]])
        let entry = try #require(apps.first { $0["name"] as? String == name })
        return String(decoding: try JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys]), as: UTF8.self)
    }
}
