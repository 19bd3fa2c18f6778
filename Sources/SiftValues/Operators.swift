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
    /// `==`: the two values are equal.
    case equalTo = "=="
    /// `!=`: the two values are not equal.
    case notEqualTo = "!="
    /// `<`: the left value orders before the right one; false when they do
    /// not compare (either is nil, or their kinds differ).
    case lessThan = "<"
    /// `<=`: the left value orders before the right one or equals it; false
    /// when they do not compare.
    case lessThanOrEqualTo = "<="
    /// `>`: the left value orders after the right one; false when they do
    /// not compare.
    case greaterThan = ">"
    /// `>=`: the left value orders after the right one or equals it; false
    /// when they do not compare.
    case greaterThanOrEqualTo = ">="
    /// `BETWEEN`: the left value lies within the two bounds on the right,
    /// `{low, high}`, bounds included.
    case between = "BETWEEN"
    /// `IN`: the left value is a member of the collection on the right, a
    /// substring of the string on the right, or one of the values of the
    /// dictionary on the right.
    case `in` = "IN"
    /// `CONTAINS`: the collection on the left has the right value as a
    /// member, or the string on the left contains the string on the right.
    case contains = "CONTAINS"
    /// `BEGINSWITH`: the string on the left starts with the string on the right.
    case beginsWith = "BEGINSWITH"
    /// `ENDSWITH`: the string on the left ends with the string on the right.
    case endsWith = "ENDSWITH"
    /// `LIKE`: the string on the left matches the wildcard pattern on the
    /// right, where `*` stands for any run of characters and `?` for any one
    /// character.
    case like = "LIKE"
    /// `MATCHES`: the whole string on the left matches the regular expression
    /// on the right.
    case matches = "MATCHES"
    /// `UTI-CONFORMS-TO`: the uniform type identifier on the left conforms to
    /// the one on the right. Sift parses it but reports it as unsupported when
    /// checking a predicate, since there are no uniform type identifiers on Linux.
    case conformsTo = "UTI-CONFORMS-TO"
    /// `UTI-EQUALS`: the uniform type identifier on the left equals the one on
    /// the right. Sift parses it but reports it as unsupported when checking a
    /// predicate, since there are no uniform type identifiers on Linux.
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
    /// `+`: the sum of two numbers. Integers give an integer, or a
    /// floating-point number when the result overflows.
    case add = "+"
    /// `-`: the difference of two numbers. Integers give an integer, or a
    /// floating-point number when the result overflows.
    case subtract = "-"
    /// `*`: the product of two numbers. Integers give an integer, or a
    /// floating-point number when the result overflows.
    case multiply = "*"
    /// `/`: the quotient of two numbers: of two integers, an integer
    /// truncated toward zero (as Apple's NSExpression divides them), else a
    /// floating-point number; nil when dividing by zero.
    case divide = "/"
    /// `**`: the first number raised to the power of the second, as a
    /// floating-point number.
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
    /// `@count`: the number of members.
    case count
    /// `@sum`: the total of the members that are numbers; 0 for an empty collection.
    case sum
    /// `@avg`: the mean of the members that are numbers; nil when there are none.
    case avg
    /// `@min`: the least member; nil for an empty collection.
    case min
    /// `@max`: the greatest member; nil for an empty collection.
    case max
}

/// A built-in function, as NSExpression names them.
public enum BuiltinFunction: String, Hashable, Sendable, CaseIterable {
    // Over a collection (one collection argument, or several numbers).
    /// `sum(…)`: the total of the numbers.
    case sum
    /// `count(…)`: the number of members.
    case count
    /// `min(…)`: the least value, skipping nil.
    case min
    /// `max(…)`: the greatest value, skipping nil.
    case max
    /// `average(…)`: the mean of the numbers; nil when there are none.
    case average
    /// `median(…)`: the middle number in sorted order, or the mean of the two
    /// middle ones when there is an even count; nil when there are none.
    case median
    /// `mode(…)`: the value that occurs most often, skipping nil (the first
    /// one seen, on a tie).
    case mode
    /// `stddev(…)`: the population standard deviation of the numbers; nil
    /// when there are none.
    case stddev
    // Numbers.
    /// `sqrt(x)`: the square root; nil for a negative number.
    case sqrt
    /// `log(x)`: the base-10 logarithm; nil for zero or a negative number.
    case log
    /// `ln(x)`: the natural logarithm; nil for zero or a negative number.
    case ln
    /// `exp(x)`: e raised to the power of the number.
    case exp
    /// `floor(x)`: the number rounded down to a whole number.
    case floor
    /// `ceiling(x)`: the number rounded up to a whole number.
    case ceiling
    /// `abs(x)`: the absolute value; an integer stays an integer.
    case abs
    /// `trunc(x)`: the number rounded toward zero to a whole number.
    case trunc
    /// `bitwiseAnd(a, b)`: the bitwise AND of two integers.
    case bitwiseAnd
    /// `bitwiseOr(a, b)`: the bitwise OR of two integers.
    case bitwiseOr
    /// `bitwiseXor(a, b)`: the bitwise exclusive OR of two integers.
    case bitwiseXor
    /// `leftshift(a, n)`: the integer shifted left by 0 to 63 bits; nil for
    /// other shift counts.
    case leftshift
    /// `rightshift(a, n)`: the integer shifted right by 0 to 63 bits, keeping
    /// its sign; nil for other shift counts.
    case rightshift
    /// `onesComplement(a)`: the integer with every bit inverted.
    case onesComplement
    /// `modulus(a, b)`: the remainder of dividing the first number by the
    /// second, with the sign of the first; nil when the second is zero.
    case modulus
    // Strings.
    /// `uppercase(s)`: the string in upper case.
    case uppercase
    /// `lowercase(s)`: the string in lower case.
    case lowercase
    // No arguments.
    /// `random()`: a random floating-point number from 0 up to, but not
    /// including, 1.
    case random
    /// `randomn(n)`: a random integer from 0 up to, but not including, `n`;
    /// nil unless `n` is greater than 0.
    case randomn
    /// `now()`: the current date and time.
    case now
    // CAST targets.
    /// `CAST(x, 'NSDate')`: the date that many seconds after the first instant
    /// of 1 January 2001 (UTC); a date stays as it is.
    case castToDate
    /// `CAST(x, 'NSNumber')`: the value as a number. Booleans give 1 or 0,
    /// dates their seconds since 1 January 2001, strings the number they spell
    /// (nil when they spell none); other values give nil.
    case castToNumber
    /// `CAST(x, 'NSString')`: the value as a string. Numbers give their
    /// digits, booleans "1" or "0", UUIDs their standard text, dates NSDate's
    /// description (`2001-01-01 00:00:00 +0000`, UTC, whole seconds); nil for
    /// anything else.
    case castToString
    // Set operations between collections.
    /// `UNION`: the members of either collection, without duplicates, in
    /// order of first appearance.
    case union
    /// `INTERSECT`: the members of the first collection that are also in the
    /// second, without duplicates.
    case intersect
    /// `MINUS`: the members of the first collection that are not in the
    /// second, without duplicates.
    case minus
    // `@distinctUnionOfObjects`.
    /// `@distinctUnionOfObjects` (and `@distinctUnionOfArrays`,
    /// `@distinctUnionOfSets`): the collection's members without duplicates,
    /// in order of first appearance.
    case distinct
}
