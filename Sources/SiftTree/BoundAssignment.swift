// Stage 3 (tree): a bound assignment — an attribute of an entity and the
// expression its new value is computed from, for a batch update. Both
// lowerings read it: SQL writes `SET column = expression` in one UPDATE,
// memory evaluates the expression on each row's values before any is
// changed.

import SiftModel
import SiftValues

/// An attribute a batch update sets, and the expression of each object's
/// current values its new value is.
public struct BoundAssignment: Hashable, Sendable {
    /// The attribute set.
    public var attribute: AttributeReference
    /// Its new value, evaluated on the object before the update.
    public var value: BoundExpression

    /// Creates an assignment of an expression's value to an attribute.
    ///
    /// - Parameters:
    ///   - attribute: The attribute the update sets.
    ///   - value: The expression, evaluated on each object's values before
    ///     the update, that gives the attribute's new value.
    public init(attribute: AttributeReference, value: BoundExpression) {
        self.attribute = attribute
        self.value = value
    }
}
