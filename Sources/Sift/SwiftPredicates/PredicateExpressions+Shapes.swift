// The library: the shape of each expression type Sift converts
// (PredicateExpressions+Conversion.swift), for the conversion cache
// (PredicateShapes.swift). Each walks its operands in the order its
// `siftTerm(_:)` converts them, so the captured values it collects are
// numbered as the conversion meets them.

import Foundation
import SiftValues

extension PredicateExpressions.Variable {
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.use(key)
    }
}

extension PredicateExpressions.Value {
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        // (The common case first: each cast is a conformance lookup.)
        if let convertible = value as? any PredicateValueConvertible {
            let value = convertible.predicateValue
            switch value {
            case .null, .bool: shape.value(value, exact: true)
            default: shape.value(value, exact: false)
            }
        } else if let result = value as? ComparisonResult {
            shape.value(.int(Int64(result.rawValue)), exact: true)
        } else if let range = value as? any SiftRangeValue {
            guard let bounds = range.siftBounds else { return shape.refuse() }
            shape.value([bounds.lower, bounds.upper], exact: bounds.lower == .null || bounds.upper == .null)
        } else {
            shape.refuse()
        }
    }
}

extension PredicateExpressions.NilLiteral {
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.symbol(0)
    }
}

extension PredicateExpressions.KeyPath
    where Root: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(root)
        shape.keyPath(keyPath)
    }
}

extension PredicateExpressions.Conjunction
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lhs)
        shape.walk(rhs)
    }
}

extension PredicateExpressions.Disjunction
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lhs)
        shape.walk(rhs)
    }
}

extension PredicateExpressions.Negation
    where Wrapped: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(wrapped)
    }
}

extension PredicateExpressions.Conditional
    where Test: SwiftPredicateExpression, If: SwiftPredicateExpression, Else: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(test)
        shape.walk(trueBranch)
        shape.walk(falseBranch)
    }
}

extension PredicateExpressions.Equal
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lhs)
        shape.walk(rhs)
    }
}

extension PredicateExpressions.NotEqual
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lhs)
        shape.walk(rhs)
    }
}

extension PredicateExpressions.Comparison
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lhs)
        shape.walk(rhs)
        switch op {
        case .lessThan: shape.symbol(1)
        case .lessThanOrEqual: shape.symbol(2)
        case .greaterThan: shape.symbol(3)
        case .greaterThanOrEqual: shape.symbol(4)
        @unknown default: shape.refuse()
        }
    }
}

extension PredicateExpressions.Arithmetic
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lhs)
        shape.walk(rhs)
        switch op {
        case .add: shape.symbol(1)
        case .subtract: shape.symbol(2)
        case .multiply: shape.symbol(3)
        @unknown default: shape.refuse()
        }
    }
}

extension PredicateExpressions.IntDivision
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lhs)
        shape.walk(rhs)
    }
}

extension PredicateExpressions.FloatDivision
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lhs)
        shape.walk(rhs)
    }
}

extension PredicateExpressions.IntRemainder
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lhs)
        shape.walk(rhs)
    }
}

extension PredicateExpressions.UnaryMinus
    where Wrapped: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(wrapped)
    }
}

extension PredicateExpressions.NilCoalesce
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lhs)
        shape.walk(rhs)
    }
}

extension PredicateExpressions.OptionalFlatMap
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(wrapped)
        shape.declare(variable.key)
        shape.walk(transform)
    }
}

extension PredicateExpressions.ForcedUnwrap
    where Inner: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(inner)
    }
}

extension PredicateExpressions.SequenceStartsWith
    where Base: SwiftPredicateExpression, Prefix: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(base)
        shape.walk(prefix)
    }
}

extension PredicateExpressions.CollectionContainsCollection
    where Base: SwiftPredicateExpression, Other: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(base)
        shape.walk(other)
    }
}

extension PredicateExpressions.ClosedRange
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lower)
        shape.walk(upper)
    }
}

extension PredicateExpressions.Range
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(lower)
        shape.walk(upper)
    }
}

extension PredicateExpressions.RangeExpressionContains
    where RangeExpression: SwiftPredicateExpression, Element: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(range)
        shape.walk(element)
    }
}

extension PredicateExpressions.SequenceContains
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(sequence)
        shape.walk(element)
    }
}

extension PredicateExpressions.SequenceContainsWhere
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(sequence)
        shape.declare(variable.key)
        shape.walk(test)
    }
}

extension PredicateExpressions.SequenceAllSatisfy
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(sequence)
        shape.declare(variable.key)
        shape.walk(test)
    }
}

extension PredicateExpressions.Filter
    where LHS: SwiftPredicateExpression, RHS: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(sequence)
        shape.declare(variable.key)
        shape.walk(filter)
    }
}

extension PredicateExpressions.SequenceMaximum
    where Elements: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(elements)
    }
}

extension PredicateExpressions.SequenceMinimum
    where Elements: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(elements)
    }
}

extension PredicateExpressions.CollectionIndexSubscript
    where Wrapped: SwiftPredicateExpression, Index: SwiftPredicateExpression
{
    /// Collects the expression's shape, for the conversion cache.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.walk(wrapped)
        shape.walkExactly(index)
    }
}
