// Rule: TRUE and FALSE absorption.

import SiftTree

/// Absorbs `TRUEPREDICATE` and `FALSEPREDICATE` into the connectives around them.
///
/// ```
/// age > 3 AND TRUEPREDICATE        =>  age > 3
/// age > 3 AND FALSEPREDICATE       =>  FALSEPREDICATE
/// age > 3 OR TRUEPREDICATE         =>  TRUEPREDICATE
/// NOT TRUEPREDICATE                =>  FALSEPREDICATE
/// ```
public struct BooleanAbsorption: OptimizerRule {
    public let name = "boolean-absorption"
    /// Creates the rule.
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        switch predicate {
        case .not(.constant(let b)):
            return .constant(!b)
        case .and(let ps):
            if ps.contains(.constant(false)) { return .constant(false) }
            let rest = ps.filter { $0 != .constant(true) }
            if rest.count == ps.count { return nil }
            return rest.isEmpty ? .constant(true) : rest.count == 1 ? rest[0] : .and(rest)
        case .or(let ps):
            if ps.contains(.constant(true)) { return .constant(true) }
            let rest = ps.filter { $0 != .constant(false) }
            if rest.count == ps.count { return nil }
            return rest.isEmpty ? .constant(false) : rest.count == 1 ? rest[0] : .or(rest)
        default:
            return nil
        }
    }
}
