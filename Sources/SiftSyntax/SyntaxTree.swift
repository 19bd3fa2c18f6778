// Stage 1 (syntax): the syntax tree.
//
// The syntax tree mirrors the text: binary AND/OR as written, key paths as
// names, format arguments already substituted. Every node remembers its source
// range for diagnostics, but ranges take no part in equality or hashing, so a
// tree parsed from its own printed form compares equal to the original.
//
// Spellings that mean the same are normalized while parsing: `=` is `==`,
// `<>` is `!=`, `=<` is `<=`, `=>` is `>=`, `SOME` is `ANY`, `&&` is `AND`,
// `||` is `OR`, `!` is `NOT`, `YES`/`TRUE` are `true`, `NIL`/`NULL` are `nil`,
// and a minus sign written directly before a number literal makes a negative
// literal. Parentheses leave no node.

/// A predicate as written: the root of a syntax tree.
///
/// ```swift
/// let tree = try PredicateParser.parse("age > 40 AND name BEGINSWITH[cd] 'j'")
/// if case .and(let operands) = tree.kind { print(operands[0]) }   // age > 40
/// ```
public struct PredicateSyntax: Hashable, Sendable {
    /// The kinds of predicate.
    public indirect enum Kind: Hashable, Sendable {
        /// `TRUEPREDICATE` (true) or `FALSEPREDICATE` (false).
        case constant(Bool)
        /// `NOT p`, `!p`.
        case not(PredicateSyntax)
        /// `p AND q AND …`, `p && q`: a chain written without parentheses
        /// (at least two operands; a parenthesized AND inside is its own node).
        case and([PredicateSyntax])
        /// `p OR q OR …`, `p || q`: as `and`.
        case or([PredicateSyntax])
        /// `[ANY|ALL|NONE] lhs op[options] rhs`.
        case comparison(ComparisonSyntax)
    }

    /// What this predicate is.
    public var kind: Kind
    /// Where it was written (empty for trees built in code).
    public var range: SourceRange

    /// Creates a node; `range` defaults to an empty range for trees built in code.
    public init(_ kind: Kind, range: SourceRange = .at(0)) {
        self.kind = kind
        self.range = range
    }

    /// Compares the trees, ignoring source ranges.
    public static func == (lhs: PredicateSyntax, rhs: PredicateSyntax) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }
}

/// A comparison: two expressions, an operator, its options and a quantifier.
public struct ComparisonSyntax: Hashable, Sendable {
    /// `ANY`, `ALL`, `NONE`, or none written.
    public var quantifier: Quantifier
    /// The left operand.
    public var left: ExpressionSyntax
    /// The operator.
    public var `operator`: ComparisonOperator
    /// `[c]`, `[d]`, `[n]`, `[l]` as written after the operator.
    public var options: ComparisonOptions
    /// The right operand.
    public var right: ExpressionSyntax

    /// Creates a comparison: `ComparisonSyntax(age, .greaterThan, forty)`.
    public init(
        _ left: ExpressionSyntax, _ operator: ComparisonOperator, options: ComparisonOptions = [],
        _ right: ExpressionSyntax, quantifier: Quantifier = .direct
    ) {
        self.quantifier = quantifier
        self.left = left
        self.operator = `operator`
        self.options = options
        self.right = right
    }
}

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

/// An expression as written: a value that a comparison compares.
public struct ExpressionSyntax: Hashable, Sendable {
    /// The kinds of expression.
    public indirect enum Kind: Hashable, Sendable {
        /// A literal or a `%@`-style argument.
        case constant(PredicateValue)
        /// `a.b.@count`: a key path from the evaluated object (never empty).
        case keyPath([String])
        /// `SELF`: the evaluated object.
        case evaluatedObject
        /// `$name`.
        case variable(String)
        /// `$name := value`.
        case assignment(variable: String, value: ExpressionSyntax)
        /// `base.a.b`: a key path continued from another expression, such as
        /// `SELF.name`, `$r.age` or `SUBQUERY(…).@count` (never empty).
        case member(ExpressionSyntax, [String])
        /// `base[index]`.
        case index(ExpressionSyntax, IndexSyntax)
        /// `{a, b, c}`.
        case aggregate([ExpressionSyntax])
        /// `-value`.
        case negate(ExpressionSyntax)
        /// `a + b`, `a - b`, `a * b`, `a / b`, `a ** b`, and the set operations
        /// `a UNION b`, `a INTERSECT b`, `a MINUS b`.
        case binary(BinaryOperator, ExpressionSyntax, ExpressionSyntax)
        /// `name(arguments)`, such as `uppercase(name)` or `max({1, 2})`.
        case function(name: String, arguments: [ExpressionSyntax])
        /// `FUNCTION(receiver, 'selector', arguments)`.
        case functionCall(receiver: ExpressionSyntax, selector: String, arguments: [ExpressionSyntax])
        /// `SUBQUERY(collection, $variable, predicate)`.
        case subquery(collection: ExpressionSyntax, variable: String, predicate: PredicateSyntax)
        /// `TERNARY(condition, then, else)`.
        case ternary(PredicateSyntax, ExpressionSyntax, ExpressionSyntax)
        /// `CAST(value, 'type')`.
        case cast(ExpressionSyntax, type: String)
    }

    /// What this expression is.
    public var kind: Kind
    /// Where it was written (empty for trees built in code).
    public var range: SourceRange

    /// Creates a node; `range` defaults to an empty range for trees built in code.
    public init(_ kind: Kind, range: SourceRange = .at(0)) {
        self.kind = kind
        self.range = range
    }

    /// Compares the trees, ignoring source ranges.
    public static func == (lhs: ExpressionSyntax, rhs: ExpressionSyntax) -> Bool { lhs.kind == rhs.kind }
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }
}

/// What goes between the brackets of an index expression.
public enum IndexSyntax: Hashable, Sendable {
    /// `[FIRST]`.
    case first
    /// `[LAST]`.
    case last
    /// `[SIZE]`.
    case size
    /// `[0]`, `['key']`, `[$i]`.
    case expression(ExpressionSyntax)
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
    var precedence: Int {
        switch self {
        case .union, .intersect, .minus: 1
        case .add, .subtract: 2
        case .multiply, .divide: 3
        case .power: 4
        }
    }
}
