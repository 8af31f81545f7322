import ArgumentParser

/// Negative numbers on the command line are values: `duckctl gain -6`, `duckctl send /duck/level -20`.
///
/// The argument parser takes every word that starts with '-' for an option, and it has no way to
/// accept one as a positional value. So before parsing, a word that reads as a negative number
/// (no duckctl option does) gets U+2212 MINUS SIGN for its sign, and everything that turns words
/// into values or messages (`Number`, `Connection.call`) reads that sign as '-'.
enum NegativeNumbers {
    static let minus: Character = "\u{2212}"

    static func protect(_ arguments: [String]) -> [String] {
        var afterTerminator = false
        return arguments.map { word in
            if word == "--" { afterTerminator = true }
            guard !afterTerminator, isNegativeNumber(word) else { return word }
            return String(minus) + word.dropFirst()
        }
    }

    /// The word as typed: a sign `protect` gave back to '-'. Only a whole word that reads as a
    /// negative number is one of its own; a U+2212 a person typed elsewhere stays as it is.
    static func restore(_ word: String) -> String {
        guard word.first == minus else { return word }
        let typed = "-" + word.dropFirst()
        return isNegativeNumber(typed) ? typed : word
    }

    /// `-6`, `-0.5`, `-.5`, `-1e3`, `-inf`, `-nan`.
    static func isNegativeNumber(_ word: String) -> Bool {
        guard word.count > 1, word.first == "-" else { return false }
        let rest = word.dropFirst()
        if ["inf", "infinity", "nan"].contains(rest.lowercased()) { return true }
        guard let first = rest.first, first.isASCII, first.isNumber || first == "." else { return false }
        return Double(String(rest)) != nil
    }
}

/// A number given on the command line (negative ones included, see `NegativeNumbers`).
struct Number: ExpressibleByArgument, CustomStringConvertible {
    var value: Float
    init?(argument: String) {
        guard let value = Float(NegativeNumbers.restore(argument)) else { return nil }
        self.value = value
    }
    var description: String { "\(value)" }
}
