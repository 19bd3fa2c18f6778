// Rule: double negation.
//
//   NOT NOT (age == 24)   =>  age == 24
//
// Sift's NOT is two-valued (NOT simply negates), so two cancel.

import SiftTree

public struct DoubleNegation: OptimizerRule {
    public let name = "double-negation"
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        if case .not(.not(let p)) = predicate { return p }
        return nil
    }
}
