// Rule: order the terms of AND and OR by estimated cost.

import SiftTree

/// Orders the operands of `AND` and `OR` by their estimated cost, cheapest
/// first.
///
/// ```
/// name MATCHES '.*x' AND age > 3    =>  age > 3 AND name MATCHES '.*x'
/// ANY tags.name == 'a' OR age == 2  =>  age == 2 OR ANY tags.name == 'a'
/// ```
///
/// Tests have no side effects and `AND` and `OR` are commutative, so the
/// order is free; evaluation in memory stops at the first operand that
/// decides, so cheap numeric tests go first and regular expressions and
/// scans of to-many relationships last. The sort is stable: operands of
/// equal cost keep their written order.
public struct TermOrdering: OptimizerRule {
    public let name = "term-ordering"
    /// Creates the rule.
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        switch predicate {
        case .and(let ps):
            return Self.sorted(ps).map(BoundPredicate.and)
        case .or(let ps):
            return Self.sorted(ps).map(BoundPredicate.or)
        default:
            return nil
        }
    }

    /// The operands by cost, or nil when they are in that order already.
    static func sorted(_ ps: [BoundPredicate]) -> [BoundPredicate]? {
        let order = ps.enumerated().map { ($0, Cost.of($1)) }.sorted { ($0.1, $0.0) < ($1.1, $1.0) }.map(\.0)
        guard order != Array(ps.indices) else { return nil }
        return order.map { ps[$0] }
    }
}
