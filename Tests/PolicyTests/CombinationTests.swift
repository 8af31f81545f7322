import Policy
import Testing

/// Which combinations of category, options and mode are valid, and which make an app mixable
/// (docs/POLICY.md §5.1, "Valid combinations"): each option says whether it mixes, and OSC, the
/// session loader and the state file read one rule.
@Suite("Category, options and mode")
struct CombinationTests {
    @Test("an app of a category that can choose to mix is mixable exactly when one of its options mixes")
    func mixability() {
        for category in Category.allCases where category.acceptsOptions {
            #expect(!AppConfiguration(name: "x", category: category).isMixable, "\(category) alone")
            for option in CategoryOption.allCases {
                let app = AppConfiguration(name: "x", category: category, options: [option])
                #expect(app.isMixable == option.mixes, "\(category) with \(option)")
            }
        }
        #expect(AppConfiguration(name: "x", category: .ambient).isMixable, "ambient always mixes")
        #expect(!AppConfiguration(name: "x", category: .soloAmbient).isMixable)
        #expect(!AppConfiguration(name: "x", category: .record).isMixable)
    }

    @Test("the combination rule: options only where the category takes them, modes only those it goes with")
    func combinationProblem() {
        for category in Category.allCases {
            for mode in Mode.allCases {
                let app = AppConfiguration(name: "x", category: category, mode: mode)
                let expected: AppConfiguration.CombinationProblem? = category.allowedModes.contains(mode)
                    ? nil : .modeNotAllowed(allowed: category.allowedModes.sorted { $0.rawValue < $1.rawValue })
                #expect(app.combinationProblem == expected, "\(category) \(mode)")
            }
            let optioned = AppConfiguration(name: "x", category: category, options: [.mixWithOthers])
            #expect((optioned.combinationProblem == .optionsNotTaken) == !category.acceptsOptions, "\(category) with an option")
        }
    }
}
