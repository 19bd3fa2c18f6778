// Rule: double negation.

import SiftTree

/// Removes two `NOT`s in a row.
///
/// ```
/// NOT NOT (age == 24)   =>  age == 24
/// ```
///
/// Sift's `NOT` is two-valued (it simply negates), so two cancel.
public struct DoubleNegation: OptimizerRule {
    public let name = "double-negation"
    /// Creates the rule.
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        if case .not(.not(let p)) = predicate { return p }
        return nil
    }
}
