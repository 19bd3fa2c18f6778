// Rule: duplicate and subsumed terms.

import SiftTree

/// Removes repeated operands of `AND` and `OR`, and operands that another
/// operand absorbs.
///
/// ```
/// age > 3 AND age > 3                   =>  age > 3
/// age > 3 OR (age > 3 AND name == 'x')  =>  age > 3      (absorption)
/// age > 3 AND (age > 3 OR name == 'x')  =>  age > 3
/// ```
public struct DuplicateTerms: OptimizerRule {
    public let name = "duplicate-terms"
    /// Creates the rule.
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        switch predicate {
        case .and(let ps):
            return simplified(ps, rebuild: BoundPredicate.and) { other in
                if case .or(let qs) = other { return qs } else { return nil }
            }
        case .or(let ps):
            return simplified(ps, rebuild: BoundPredicate.or) { other in
                if case .and(let qs) = other { return qs } else { return nil }
            }
        default:
            return nil
        }
    }

    /// Drops repeated operands, and operands of the dual connective that
    /// contain another operand (they are absorbed by it).
    func simplified(_ ps: [BoundPredicate], rebuild: ([BoundPredicate]) -> BoundPredicate,
                    dual: (BoundPredicate) -> [BoundPredicate]?) -> BoundPredicate? {
        var seen = Set<BoundPredicate>()
        var unique: [BoundPredicate] = []
        for p in ps where seen.insert(p).inserted { unique.append(p) }
        let kept = unique.filter { p in
            guard let inner = dual(p) else { return true }
            return !inner.contains { seen.contains($0) && $0 != p }
        }
        if kept.count == ps.count { return nil }
        return kept.count == 1 ? kept[0] : rebuild(kept)
    }
}
