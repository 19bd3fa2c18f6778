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

import SiftValues

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
    ///
    /// - Parameters:
    ///   - kind: What the predicate is.
    ///   - range: Where it was written (an empty range by default).
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
    ///
    /// - Parameters:
    ///   - left: The left operand.
    ///   - operator: The operator.
    ///   - options: The comparison options, such as `[c]` (none by default).
    ///   - right: The right operand.
    ///   - quantifier: `ANY`, `ALL` or `NONE`; `Quantifier.direct` (the
    ///     default) for none.
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
    ///
    /// - Parameters:
    ///   - kind: What the expression is.
    ///   - range: Where it was written (an empty range by default).
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
