// Rule: flatten nested AND and OR.

import SiftTree

/// Flattens nested `AND`s and nested `OR`s into one connective each.
///
/// ```
/// (a == 1 AND b == 2) AND c == 3   =>  a == 1 AND b == 2 AND c == 3
/// a == 1 OR (b == 2 OR c == 3)     =>  a == 1 OR b == 2 OR c == 3
/// ```
///
/// `AND` and `OR` are associative, so a chain is one node with many
/// operands; a connective left with one operand becomes that operand.
public struct FlattenConnectives: OptimizerRule {
    public let name = "flatten-connectives"
    /// Creates the rule.
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        switch predicate {
        case .and(let ps):
            if ps.count == 1 { return ps[0] }
            guard ps.contains(where: { if case .and = $0 { true } else { false } }) else { return nil }
            return .and(ps.flatMap { p -> [BoundPredicate] in if case .and(let inner) = p { inner } else { [p] } })
        case .or(let ps):
            if ps.count == 1 { return ps[0] }
            guard ps.contains(where: { if case .or = $0 { true } else { false } }) else { return nil }
            return .or(ps.flatMap { p -> [BoundPredicate] in if case .or(let inner) = p { inner } else { [p] } })
        default:
            return nil
        }
    }
}
