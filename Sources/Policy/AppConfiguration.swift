/// What an app declares about its sound: the equivalent of a phone app's audio-session category,
/// options and mode, plus what the router needs to drive it.
public struct AppConfiguration: Equatable, Sendable {
    public var name: String
    public var category: Category
    public var options: Set<CategoryOption>
    public var mode: Mode
    /// Remote commands the app handles; only those are forwarded to it.
    public var remoteCommands: Set<RemoteCommand>
    /// Who activates the app again after a resumable interruption.
    public var resume: ResumePolicy
    /// What activates it: requests, or its own sound.
    public var activation: Activation

    public init(name: String, category: Category = .soloAmbient, options: Set<CategoryOption> = [],
                mode: Mode = .default, remoteCommands: Set<RemoteCommand> = [], resume: ResumePolicy = .app,
                activation: Activation = .osc) {
        self.name = name
        self.category = category
        self.options = options
        self.mode = mode
        self.remoteCommands = remoteCommands
        self.resume = resume
        self.activation = activation
    }

    /// Whether the app plays along with others instead of interrupting them (docs/POLICY.md §5.1).
    public var isMixable: Bool {
        switch category {
        case .ambient: true
        case .playback, .playAndRecord, .multiRoute: options.contains { $0.mixes }
        case .soloAmbient, .record: false
        }
    }

    public var ducksOthers: Bool { options.contains(.duckOthers) }
    public var interruptsSpokenAudio: Bool { options.contains(.interruptSpokenAudioAndMixWithOthers) }
    public var isSpokenAudio: Bool { mode == .spokenAudio }

    /// Whether the app can own remote control ("now playing", docs/POLICY.md §5.12).
    public var canOwnRemoteControl: Bool { category == .playback && !isMixable && !remoteCommands.isEmpty }

    /// What is wrong with a combination of category, options and mode (docs/POLICY.md, "Valid
    /// combinations").
    public enum CombinationProblem: Equatable, Sendable {
        /// Options on a category that takes none.
        case optionsNotTaken
        /// A mode the category does not go with; the modes it does.
        case modeNotAllowed(allowed: [Mode])
    }

    /// The combination rule, checked here once: OSC (`validate`), the session loader and the
    /// state file word what it finds for their readers.
    public var combinationProblem: CombinationProblem? {
        if !options.isEmpty && !category.acceptsOptions { return .optionsNotTaken }
        if !category.allowedModes.contains(mode) {
            return .modeNotAllowed(allowed: category.allowedModes.sorted { $0.rawValue < $1.rawValue })
        }
        return nil
    }

    /// Checks the name and the combination of category, options and mode.
    public func validate() throws(PolicyError) {
        if let problem = AppConfiguration.nameProblem(name) { throw PolicyError(.badArgument, problem) }
        switch combinationProblem {
        case nil: break
        case .optionsNotTaken:
            let list = options.map(\.rawValue).sorted().joined(separator: ", ")
            throw PolicyError(.badArgument, "category \(category.rawValue) takes no options (got \(list)); options are for playback, playAndRecord and multiRoute")
        case let .modeNotAllowed(allowed):
            throw PolicyError(.badArgument, "mode \(mode.rawValue) does not go with category \(category.rawValue) (expected one of \(allowed.map(\.rawValue).joined(separator: ", ")))")
        }
    }

    /// Why `name` cannot name an app (it becomes part of JACK port names), or nil when it can.
    public static func nameProblem(_ name: String) -> String? {
        let valid = !name.isEmpty && name.utf8.count <= Limits.nameBytes && name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || byte == 0x2d || byte == 0x5f || byte == 0x2e
        }
        return valid ? nil : "expected a name of 1 to \(Limits.nameBytes) letters, digits, '-', '_' or '.', got '\(name)'"
    }
}
