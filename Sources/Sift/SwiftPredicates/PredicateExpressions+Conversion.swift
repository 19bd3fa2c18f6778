// The library: each of Foundation's `PredicateExpressions` types Sift
// converts, conforming to `SwiftPredicateExpression` when its operands do,
// with the format text it becomes. Types not here (casts, regexes,
// dictionary subscripts, nested predicate evaluation) are refused by name
// (`SwiftPredicateConverter.refusal(of:)`).

import Foundation
import SiftValues

typealias PE = PredicateExpressions

/// A collection type whose `count` and `isEmpty` key paths read as `@count`.
protocol SiftCountedCollection {
    static var siftCountKeyPath: AnyKeyPath { get }
    static var siftIsEmptyKeyPath: AnyKeyPath { get }
}

extension Array: SiftCountedCollection {
    static var siftCountKeyPath: AnyKeyPath { \Self.count }
    static var siftIsEmptyKeyPath: AnyKeyPath { \Self.isEmpty }
}

extension Set: SiftCountedCollection {
    static var siftCountKeyPath: AnyKeyPath { \Self.count }
    static var siftIsEmptyKeyPath: AnyKeyPath { \Self.isEmpty }
}

/// A captured range's bounds, as values.
protocol SiftRangeValue {
    var siftBounds: (lower: PredicateValue, upper: PredicateValue, closed: Bool)? { get }
}

extension ClosedRange: SiftRangeValue {
    var siftBounds: (lower: PredicateValue, upper: PredicateValue, closed: Bool)? {
        guard let lower = lowerBound as? any PredicateValueConvertible,
              let upper = upperBound as? any PredicateValueConvertible else { return nil }
        return (lower.predicateValue, upper.predicateValue, true)
    }
}

extension Range: SiftRangeValue {
    var siftBounds: (lower: PredicateValue, upper: PredicateValue, closed: Bool)? {
        guard let lower = lowerBound as? any PredicateValueConvertible,
              let upper = upperBound as? any PredicateValueConvertible else { return nil }
        return (lower.predicateValue, upper.predicateValue, false)
    }
}

/// Whether a Swift type is a string (or an optional one).
func isStringType(_ type: Any.Type) -> Bool {
    type == String.self || type == String?.self || type == Substring.self || type == Substring?.self
}

// MARK: Leaves

extension PredicateExpressions.Variable: SwiftPredicateExpression {
    /// The variable's key path: `SELF` for the predicate's input, `$v1` for a collection's element.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        guard let term = converter.variables[key] else {
            throw PredicateConversionError(.unsupportedUse("a variable of another predicate is used in this one"))
        }
        return term
    }
}

extension PredicateExpressions.Value: SwiftPredicateExpression {
    /// A captured value: a `%@` argument, so every value shares the predicate's shape.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let source = converter.nextCapturedValue()
        if let result = value as? ComparisonResult {
            return SwiftPredicateTerm("", .comparisonResult(result.rawValue), source: source)
        }
        if let range = value as? any SiftRangeValue {
            guard let bounds = range.siftBounds else {
                throw PredicateConversionError(.unsupportedValue(type: String(describing: Output.self)))
            }
            return SwiftPredicateTerm("", .constantRange(lower: bounds.lower, upper: bounds.upper, closed: bounds.closed),
                                      source: source)
        }
        guard let convertible = value as? any PredicateValueConvertible else {
            throw PredicateConversionError(.unsupportedValue(type: String(describing: Output.self)))
        }
        return SwiftPredicateTerm("", .constant(convertible.predicateValue), source: source)
    }
}

extension PredicateExpressions.NilLiteral: SwiftPredicateExpression {
    /// `nil`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        SwiftPredicateTerm("", .constant(.null))
    }
}

extension PredicateExpressions.KeyPath: SwiftPredicateExpression where Root: SwiftPredicateExpression {
    /// The attribute or relationship the key path names, after its root's key path; `count` and `isEmpty`
    /// of a collection as `@count`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let root = try converter.term(self.root)
        if let collection = Root.Output.self as? any SiftCountedCollection.Type {
            let base: String
            switch root.kind {
            case .keyPath, .expression: base = root.text
            default: base = try converter.value(root)
            }
            if keyPath == collection.siftCountKeyPath { return SwiftPredicateTerm("\(base).@count", .expression) }
            if keyPath == collection.siftIsEmptyKeyPath { return SwiftPredicateTerm("\(base).@count == 0", .predicate) }
        }
        if isStringType(Root.Output.self) {
            throw PredicateConversionError(.unsupportedUse(
                "the string property \(keyPath) has no Sift form; compare the string itself, or write length:(name) "
                    + "in a format string"))
        }
        return try converter.extend(root, by: keyPath)
    }
}

// MARK: Logic

extension PredicateExpressions.Conjunction: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `(lhs AND rhs)`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let l = try converter.predicate(try converter.term(lhs)), r = try converter.predicate(try converter.term(rhs))
        return SwiftPredicateTerm("(\(l) AND \(r))", .predicate)
    }
}

extension PredicateExpressions.Disjunction: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `(lhs OR rhs)`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let l = try converter.predicate(try converter.term(lhs)), r = try converter.predicate(try converter.term(rhs))
        return SwiftPredicateTerm("(\(l) OR \(r))", .predicate)
    }
}

extension PredicateExpressions.Negation: SwiftPredicateExpression where Wrapped: SwiftPredicateExpression {
    /// `NOT (wrapped)`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        SwiftPredicateTerm("(NOT \(try converter.predicate(try converter.term(wrapped))))", .predicate)
    }
}

extension PredicateExpressions.Conditional: SwiftPredicateExpression
    where Test: SwiftPredicateExpression, If: SwiftPredicateExpression, Else: SwiftPredicateExpression
{
    /// `TERNARY(test, a, b)`; over conditions, `((test AND a) OR (NOT test AND b))`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let test = try converter.predicate(try converter.term(self.test))
        let a = try converter.term(trueBranch), b = try converter.term(falseBranch)
        if If.Output.self == Bool.self, Else.Output.self == Bool.self {
            let aText = try converter.predicate(a), bText = try converter.predicate(b)
            return SwiftPredicateTerm("((\(test) AND \(aText)) OR ((NOT \(test)) AND \(bText)))", .predicate)
        }
        let aText = try converter.value(a), bText = try converter.value(b)
        return SwiftPredicateTerm("TERNARY(\(test), \(aText), \(bText))", .expression)
    }
}

// MARK: Comparisons

/// `lhs op rhs`, with `caseInsensitiveCompare` met by a `ComparisonResult` read as `op[c]`.
func siftEquality(_ lhs: SwiftPredicateTerm, _ rhs: SwiftPredicateTerm, negated: Bool,
                  _ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm
{
    for (comparison, other) in [(lhs, rhs), (rhs, lhs)] {
        guard case .caseInsensitiveComparison(let a, let b) = comparison.kind else { continue }
        guard case .comparisonResult(let raw) = other.kind else {
            throw PredicateConversionError(.unsupportedUse(
                "caseInsensitiveCompare(_:) converts only when compared with a ComparisonResult written in the predicate"))
        }
        let op = raw == 0 ? "==[c]" : raw < 0 ? "<[c]" : ">[c]"
        let text = "\(a) \(op) \(b)"
        return SwiftPredicateTerm(negated ? "(NOT \(text))" : text, .predicate)
    }
    let l = try converter.value(lhs), r = try converter.value(rhs)
    return SwiftPredicateTerm("\(l) \(negated ? "!=" : "==") \(r)", .predicate)
}

extension PredicateExpressions.Equal: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `lhs == rhs`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        try siftEquality(try converter.term(lhs), try converter.term(rhs), negated: false, &converter)
    }
}

extension PredicateExpressions.NotEqual: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `lhs != rhs`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        try siftEquality(try converter.term(lhs), try converter.term(rhs), negated: true, &converter)
    }
}

extension PredicateExpressions.Comparison: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `lhs < rhs`, `<=`, `>`, `>=`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let l = try converter.value(try converter.term(lhs)), r = try converter.value(try converter.term(rhs))
        let symbol = switch op {
        case .lessThan: "<"
        case .lessThanOrEqual: "<="
        case .greaterThan: ">"
        case .greaterThanOrEqual: ">="
        @unknown default: "?"
        }
        guard symbol != "?" else { throw PredicateConversionError(.unsupportedUse("the comparison \(op) has no Sift form")) }
        return SwiftPredicateTerm("\(l) \(symbol) \(r)", .predicate)
    }
}

// MARK: Arithmetic

extension PredicateExpressions.Arithmetic: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `(lhs + rhs)`, `-`, `*`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let l = try converter.value(try converter.term(lhs)), r = try converter.value(try converter.term(rhs))
        let symbol = switch op {
        case .add: "+"
        case .subtract: "-"
        case .multiply: "*"
        @unknown default: "?"
        }
        guard symbol != "?" else { throw PredicateConversionError(.unsupportedUse("the operator \(op) has no Sift form")) }
        return SwiftPredicateTerm("(\(l) \(symbol) \(r))", .expression)
    }
}

extension PredicateExpressions.IntDivision: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `(lhs / rhs)`: integers divide as integers in Sift too.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let l = try converter.value(try converter.term(lhs)), r = try converter.value(try converter.term(rhs))
        return SwiftPredicateTerm("(\(l) / \(r))", .expression)
    }
}

extension PredicateExpressions.FloatDivision: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `(lhs / rhs)`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let l = try converter.value(try converter.term(lhs)), r = try converter.value(try converter.term(rhs))
        return SwiftPredicateTerm("(\(l) / \(r))", .expression)
    }
}

extension PredicateExpressions.IntRemainder: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `modulus:by:(lhs, rhs)`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let l = try converter.value(try converter.term(lhs)), r = try converter.value(try converter.term(rhs))
        return SwiftPredicateTerm("modulus:by:(\(l), \(r))", .expression)
    }
}

extension PredicateExpressions.UnaryMinus: SwiftPredicateExpression where Wrapped: SwiftPredicateExpression {
    /// `(0 - wrapped)`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        SwiftPredicateTerm("(0 - \(try converter.value(try converter.term(wrapped))))", .expression)
    }
}

// MARK: Optionals

extension PredicateExpressions.NilCoalesce: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `TERNARY(lhs != nil, lhs, rhs)`; over an optional condition, `(guard != nil AND lhs)` or
    /// `(guard == nil OR lhs)` for a written `false` or `true`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let l = try converter.term(lhs), r = try converter.term(rhs)
        if case .optionalPredicate(let guardText) = l.kind {
            if case .constant(.bool(let truth)) = r.kind {
                return SwiftPredicateTerm(truth ? "(\(guardText) == nil OR \(l.text))" : "(\(guardText) != nil AND \(l.text))",
                                          .predicate)
            }
            let other = try converter.predicate(r)
            return SwiftPredicateTerm("((\(guardText) != nil AND \(l.text)) OR (\(guardText) == nil AND \(other)))", .predicate)
        }
        let lText = try converter.value(l)
        let rText = try converter.value(r)
        return SwiftPredicateTerm("TERNARY(\(lText) != nil, \(lText), \(rText))", .expression)
    }
}

extension PredicateExpressions.OptionalFlatMap: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// The transform with the variable standing for the wrapped value: a key path goes on from it (nil
    /// through nil, as optional chaining); a condition holds only where the wrapped value is not nil; any
    /// other transform (a key path read from elsewhere too) is nil where the wrapped value is.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let wrapped = try converter.term(self.wrapped)
        let wrappedText: String
        switch wrapped.kind {
        case .keyPath: wrappedText = wrapped.text
        default: wrappedText = try converter.value(wrapped)
        }
        converter.variables[variable.key] = SwiftPredicateTerm(wrappedText, wrapped.kind.isKeyPath ? .keyPath : .expression)
        defer { converter.variables[variable.key] = nil }
        let transformed = try converter.term(transform)
        switch transformed.kind {
        case .keyPath where wrapped.kind.isKeyPath && Self.reads(transformed.text, from: wrappedText):
            return transformed
        case .predicate:
            return SwiftPredicateTerm(transformed.text, .optionalPredicate(guardText: wrappedText))
        case .optionalPredicate(let inner):
            // Nil where the wrapped value is, and where the transform's own optional is.
            return SwiftPredicateTerm(transformed.text,
                                      .optionalPredicate(guardText: "TERNARY(\(wrappedText) != nil, \(inner), nil)"))
        default:
            let text = try converter.value(transformed)
            return SwiftPredicateTerm("TERNARY(\(wrappedText) != nil, \(text), nil)", .expression)
        }
    }
}

extension PredicateExpressions.OptionalFlatMap {
    /// Whether the key path `text` is read through the key path `wrapped` (so is nil where it is): `wrapped`
    /// itself, a key path going on from it, or any key path of the input when `wrapped` is the input.
    static func reads(_ text: String, from wrapped: String) -> Bool {
        text == wrapped || text.hasPrefix(wrapped + ".") || (wrapped == "SELF" && !text.hasPrefix("$"))
    }
}

extension SwiftPredicateTerm.Kind {
    var isKeyPath: Bool {
        if case .keyPath = self { return true }
        return false
    }
}

extension PredicateExpressions.ForcedUnwrap: SwiftPredicateExpression where Inner: SwiftPredicateExpression {
    /// The value itself: where Swift would trap on nil, the format language compares nil.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        try converter.term(inner)
    }
}

// MARK: Strings

/// `condition`, `base BEGINSWITH pattern` or `base CONTAINS pattern`, as Swift's `starts(with:)` and
/// `contains(_:)` answer it: every string starts with and contains the empty string, where BEGINSWITH and
/// CONTAINS never match an empty pattern. (The guard is written for a captured pattern too, so the text does
/// not depend on the captured value: predicates of one shape share one text.)
func siftMatchingEmpty(_ patternText: String, _ condition: String) -> String {
    "(\(patternText) == '' OR \(condition))"
}

extension PredicateExpressions.SequenceStartsWith: SwiftPredicateExpression
    where Base: SwiftPredicateExpression, Prefix: SwiftPredicateExpression
{
    /// `base BEGINSWITH prefix`, for strings (true for an empty prefix, as in Swift).
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        guard isStringType(Base.Output.self) else {
            throw PredicateConversionError(.unsupportedUse("starts(with:) converts only on strings"))
        }
        let b = try converter.value(try converter.term(base)), p = try converter.value(try converter.term(prefix))
        return SwiftPredicateTerm(siftMatchingEmpty(p, "\(b) BEGINSWITH \(p)"), .predicate)
    }
}

extension PredicateExpressions.CollectionContainsCollection: SwiftPredicateExpression
    where Base: SwiftPredicateExpression, Other: SwiftPredicateExpression
{
    /// `base CONTAINS other`, for strings (true for an empty `other`, as in Swift).
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        guard isStringType(Base.Output.self) else {
            throw PredicateConversionError(.unsupportedUse("contains(_:) of a collection converts only on strings"))
        }
        let b = try converter.value(try converter.term(base)), o = try converter.value(try converter.term(other))
        return SwiftPredicateTerm(siftMatchingEmpty(o, "\(b) CONTAINS \(o)"), .predicate)
    }
}

// (`caseInsensitiveCompare(_:)` builds `StringCaseInsensitiveCompare`, which Foundation has only on Apple's
// platforms; where it exists, `siftEquality` reads it as `==[c]`, `<[c]` or `>[c]`.)

// MARK: Ranges

extension PredicateExpressions.ClosedRange: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// A closed range of two values, for `contains(_:)`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let l = try converter.value(try converter.term(lower)), u = try converter.value(try converter.term(upper))
        return SwiftPredicateTerm("", .range(lower: l, upper: u, closed: true))
    }
}

extension PredicateExpressions.Range: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// A half-open range of two values, for `contains(_:)`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let l = try converter.value(try converter.term(lower)), u = try converter.value(try converter.term(upper))
        return SwiftPredicateTerm("", .range(lower: l, upper: u, closed: false))
    }
}

extension PredicateExpressions.RangeExpressionContains: SwiftPredicateExpression
    where RangeExpression: SwiftPredicateExpression, Element: SwiftPredicateExpression
{
    /// `element BETWEEN {lower, upper}`; for a half-open range, `(element >= lower AND element < upper)`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let range = try converter.term(self.range)
        let lower: String, upper: String, closed: Bool
        switch range.kind {
        case .range(let l, let u, let c):
            (lower, upper, closed) = (l, u, c)
        case .constantRange(let l, let u, let c):
            lower = converter.bound(l, of: range.source, part: 0)
            upper = converter.bound(u, of: range.source, part: 1)
            closed = c
        default:
            throw PredicateConversionError(.unsupportedUse("contains(_:) converts only on a range written or captured"))
        }
        let e = try converter.value(try converter.term(element))
        return SwiftPredicateTerm(closed ? "\(e) BETWEEN {\(lower), \(upper)}" : "(\(e) >= \(lower) AND \(e) < \(upper))",
                                  .predicate)
    }
}

// MARK: Collections

extension PredicateExpressions.SequenceContains: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `element IN sequence`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let s = try converter.value(try converter.term(sequence)), e = try converter.value(try converter.term(element))
        if isStringType(LHS.Output.self) { return SwiftPredicateTerm("\(s) CONTAINS \(e)", .predicate) }
        return SwiftPredicateTerm("\(e) IN \(s)", .predicate)
    }
}

extension PredicateExpressions.SequenceContainsWhere: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `SUBQUERY(sequence, $v, test).@count > 0`: ANY over a to-many relationship.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let s = try converter.value(try converter.term(sequence))
        let name = converter.declareVariable(variable.key)
        defer { converter.variables[variable.key] = nil }
        let t = try converter.predicate(try converter.term(test))
        return SwiftPredicateTerm("SUBQUERY(\(s), \(name), \(t)).@count > 0", .predicate)
    }
}

extension PredicateExpressions.SequenceAllSatisfy: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `SUBQUERY(sequence, $v, NOT test).@count == 0`: ALL over a to-many relationship.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let s = try converter.value(try converter.term(sequence))
        let name = converter.declareVariable(variable.key)
        defer { converter.variables[variable.key] = nil }
        let t = try converter.predicate(try converter.term(test))
        return SwiftPredicateTerm("SUBQUERY(\(s), \(name), NOT \(t)).@count == 0", .predicate)
    }
}

extension PredicateExpressions.Filter: SwiftPredicateExpression
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// `SUBQUERY(sequence, $v, filter)`: the members that pass, for `count` or `isEmpty`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let s = try converter.value(try converter.term(sequence))
        let name = converter.declareVariable(variable.key)
        defer { converter.variables[variable.key] = nil }
        let t = try converter.predicate(try converter.term(filter))
        return SwiftPredicateTerm("SUBQUERY(\(s), \(name), \(t))", .expression)
    }
}

extension PredicateExpressions.SequenceMaximum: SwiftPredicateExpression where Elements: SwiftPredicateExpression {
    /// `elements.@max`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        SwiftPredicateTerm("\(try converter.value(try converter.term(elements))).@max", .expression)
    }
}

extension PredicateExpressions.SequenceMinimum: SwiftPredicateExpression where Elements: SwiftPredicateExpression {
    /// `elements.@min`.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        SwiftPredicateTerm("\(try converter.value(try converter.term(elements))).@min", .expression)
    }
}

extension PredicateExpressions.CollectionIndexSubscript: SwiftPredicateExpression
    where Wrapped: SwiftPredicateExpression, Index: SwiftPredicateExpression
{
    /// `wrapped[index]`, for an index written as a number.
    ///
    /// - Parameter converter: The conversion under way: its arguments, variables and names.
    /// - Returns: The expression's term in the format language.
    /// - Throws: `PredicateConversionError` when the expression, or one of its operands, has no Sift form.
    public func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm {
        let w = try converter.value(try converter.term(wrapped))
        guard case .constant(.int(let position)) = try converter.term(index).kind else {
            throw PredicateConversionError(.unsupportedUse("a collection's index converts only when it is a captured integer"))
        }
        return SwiftPredicateTerm("\(w)[\(position)]", .expression)
    }
}
