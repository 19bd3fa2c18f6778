// Stage 0 (values): the operators, options and function names every
// stage shares. The parser writes them, the binder checks them, the semantics
// give them meaning and both lowerings run them.

/// The quantifier written before a comparison over a collection.
public enum Quantifier: String, Hashable, Sendable, CaseIterable {
    /// No quantifier.
    case direct = ""
    /// `ANY` or `SOME`: true when some member matches.
    case any = "ANY"
    /// `ALL`: true when every member matches.
    case all = "ALL"
    /// `NONE`: true when no member matches.
    case none = "NONE"
}

/// A comparison operator, named as Foundation names them.
public enum ComparisonOperator: String, Hashable, Sendable, CaseIterable {
    case equalTo = "=="
    case notEqualTo = "!="
    case lessThan = "<"
    case lessThanOrEqualTo = "<="
    case greaterThan = ">"
    case greaterThanOrEqualTo = ">="
    case between = "BETWEEN"
    case `in` = "IN"
    case contains = "CONTAINS"
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case like = "LIKE"
    case matches = "MATCHES"
    case conformsTo = "UTI-CONFORMS-TO"
    case utiEquals = "UTI-EQUALS"

    /// Whether the operator is a word (`IN`) rather than a symbol (`==`).
    public var isKeyword: Bool { rawValue.first!.isLetter }
}

/// Comparison options: the letters in brackets after an operator, `[cd]`.
public struct ComparisonOptions: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `[c]`: compare case-insensitively.
    public static let caseInsensitive = ComparisonOptions(rawValue: 1)
    /// `[d]`: compare ignoring diacritics.
    public static let diacriticInsensitive = ComparisonOptions(rawValue: 2)
    /// `[n]`: the strings are already normalized.
    public static let normalized = ComparisonOptions(rawValue: 4)
    /// `[l]`: compare by locale.
    public static let localeSensitive = ComparisonOptions(rawValue: 8)

    /// The options in the order they are printed, with their letters.
    static let letters: [(ComparisonOptions, Character)] = [
        (.caseInsensitive, "c"), (.diacriticInsensitive, "d"), (.normalized, "n"), (.localeSensitive, "l"),
    ]

    /// The bracketed form, `[cd]`, or the empty string.
    public var description: String {
        let text = String(Self.letters.filter { contains($0.0) }.map(\.1))
        return text.isEmpty ? "" : "[\(text)]"
    }
}

/// An operator between two expressions: arithmetic, or an operation on sets.
public enum BinaryOperator: String, Hashable, Sendable, CaseIterable {
    case add = "+"
    case subtract = "-"
    case multiply = "*"
    case divide = "/"
    case power = "**"
    /// `UNION`: the members of either collection.
    case union = "UNION"
    /// `INTERSECT`: the members of both collections.
    case intersect = "INTERSECT"
    /// `MINUS`: the members of the first collection not in the second.
    case minus = "MINUS"

    /// Binding strength, from 1 (set operations) to 4 (`**`): higher binds tighter.
    package var precedence: Int {
        switch self {
        case .union, .intersect, .minus: 1
        case .add, .subtract: 2
        case .multiply, .divide: 3
        case .power: 4
        }
    }
}

/// A collection operator or aggregate function over a collection.
public enum AggregateOperator: String, Hashable, Sendable, CaseIterable {
    case count, sum, avg, min, max
}

/// A built-in function, as NSExpression names them.
public enum BuiltinFunction: String, Hashable, Sendable, CaseIterable {
    // Over a collection (one collection argument, or several numbers).
    case sum, count, min, max, average, median, mode, stddev
    // Numbers.
    case sqrt, log, ln, exp, floor, ceiling, abs, trunc
    case bitwiseAnd, bitwiseOr, bitwiseXor, leftshift, rightshift, onesComplement, modulus
    // Strings.
    case uppercase, lowercase
    // No arguments.
    case random, randomn, now
    // CAST targets.
    case castToDate, castToNumber, castToString
    // Set operations between collections.
    case union, intersect, minus
    // `@distinctUnionOfObjects`.
    case distinct
}
