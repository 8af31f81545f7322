import Policy
import Testing

/// Which combinations of category, options and mode are valid, and which make an app mixable
/// (docs/POLICY.md §5.1, "Valid combinations"): each option says whether it mixes, and OSC, the
/// session loader and the state file read one rule.
@Suite("Category, options and mode")
struct CombinationTests {
    @Test("an app of a category that can choose to mix is mixable exactly when one of its options mixes")
    func mixability() {
        // docs/POLICY.md §5.1: each of the three options makes such an app mixable.
        let mixing: [CategoryOption: Bool] = [.mixWithOthers: true, .duckOthers: true, .interruptSpokenAudioAndMixWithOthers: true]
        #expect(Set(mixing.keys) == Set(CategoryOption.allCases), "every option is decided here")
        for category in [Category.playback, .playAndRecord, .multiRoute] {
            #expect(!AppConfiguration(name: "x", category: category).isMixable, "\(category) alone")
            for (option, mixes) in mixing {
                #expect(option.mixes == mixes)
                #expect(AppConfiguration(name: "x", category: category, options: [option]).isMixable == mixes, "\(category) with \(option)")
            }
        }
        #expect(AppConfiguration(name: "x", category: .ambient).isMixable, "ambient always mixes")
        #expect(!AppConfiguration(name: "x", category: .soloAmbient).isMixable)
        #expect(!AppConfiguration(name: "x", category: .record).isMixable)
    }

    @Test("the combination rule: options only where the category takes them, modes only those it goes with")
    func combinationProblem() {
        // docs/POLICY.md, "Valid combinations", written out.
        let modes: [Category: [Mode]] = [
            .ambient: [.default], .soloAmbient: [.default], .multiRoute: [.default],
            .playback: [.default, .spokenAudio, .voicePrompt, .moviePlayback, .measurement],
            .record: [.default, .measurement],
            .playAndRecord: [.default, .spokenAudio, .voicePrompt, .voiceChat, .videoChat, .measurement],
        ]
        let takesOptions: Set<Category> = [.playback, .playAndRecord, .multiRoute]
        #expect(Set(modes.keys) == Set(Category.allCases), "every category is decided here")
        for (category, allowed) in modes {
            for mode in Mode.allCases {
                let app = AppConfiguration(name: "x", category: category, mode: mode)
                let expected: AppConfiguration.CombinationProblem? = allowed.contains(mode)
                    ? nil : .modeNotAllowed(allowed: allowed.sorted { $0.rawValue < $1.rawValue })
                #expect(app.combinationProblem == expected, "\(category) \(mode)")
            }
            let optioned = AppConfiguration(name: "x", category: category, options: [.mixWithOthers])
            #expect((optioned.combinationProblem == .optionsNotTaken) == !takesOptions.contains(category), "\(category) with an option")
        }
    }
}
