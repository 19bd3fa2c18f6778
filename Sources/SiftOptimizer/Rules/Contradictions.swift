// Rule: contradictions and tautologies.

import SiftTree
import SiftValues

/// Replaces conjunctions that no object can satisfy with `FALSEPREDICATE`, and
/// disjunctions that every object satisfies with `TRUEPREDICATE`.
///
/// ```
/// age == 1 AND age == 2           =>  FALSEPREDICATE
/// age > 5 AND age < 3             =>  FALSEPREDICATE      (an empty range)
/// age == 7 AND age < 3            =>  FALSEPREDICATE
/// age > 3 OR NOT (age > 3)        =>  TRUEPREDICATE       (p OR NOT p)
/// age > 3 AND NOT (age > 3)       =>  FALSEPREDICATE
/// ```
///
/// The terms compared are `key op constant` tests on the same key, without
/// options. Under two-valued logic a nil key fails every such test, so an
/// AND of tests no value can pass is false for nil too; `p OR NOT p` is true
/// for every object.
public struct Contradictions: OptimizerRule {
    public let name = "contradictions"
    /// Creates the rule.
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        switch predicate {
        case .and(let ps):
            if Self.hasComplement(ps) { return .constant(false) }
            var byKey: [BoundExpression: [(ComparisonOperator, PredicateValue)]] = [:]
            for p in ps {
                guard case .comparison(let c) = p, let test = c.keyTest else { continue }
                byKey[test.key, default: []].append((test.op, test.value))
            }
            for tests in byKey.values where tests.count > 1 && !Self.satisfiable(tests) {
                return .constant(false)
            }
            return nil
        case .or(let ps):
            return Self.hasComplement(ps) ? .constant(true) : nil
        default:
            return nil
        }
    }

    /// Whether some operand is the negation of another.
    static func hasComplement(_ ps: [BoundPredicate]) -> Bool {
        guard ps.contains(where: { if case .not = $0 { true } else { false } }) else { return false }
        let set = Set(ps)
        return ps.contains { p in
            if case .not(let q) = p { return set.contains(q) }
            return false
        }
    }

    /// Whether some value passes every test (equalities and bounds).
    static func satisfiable(_ tests: [(ComparisonOperator, PredicateValue)]) -> Bool {
        var equal: PredicateValue?
        var lower: (PredicateValue, Bool)?   // value, inclusive
        var upper: (PredicateValue, Bool)?
        func order(_ a: PredicateValue, _ b: PredicateValue) -> Int? { ValueComparison.order(a, b) }
        for (op, v) in tests {
            switch op {
            case .equalTo:
                if let e = equal {
                    guard let o = order(e, v) else { return true }
                    if o != 0 { return false }
                }
                equal = v
            case .greaterThan, .greaterThanOrEqualTo:
                let inclusive = op == .greaterThanOrEqualTo
                if let (l, li) = lower {
                    guard let o = order(v, l) else { return true }
                    if o > 0 || (o == 0 && !inclusive && li) { lower = (v, inclusive) }
                } else {
                    lower = (v, inclusive)
                }
            case .lessThan, .lessThanOrEqualTo:
                let inclusive = op == .lessThanOrEqualTo
                if let (u, ui) = upper {
                    guard let o = order(v, u) else { return true }
                    if o < 0 || (o == 0 && !inclusive && ui) { upper = (v, inclusive) }
                } else {
                    upper = (v, inclusive)
                }
            default:
                continue
            }
        }
        if let e = equal {
            if let (l, li) = lower, let o = order(e, l), o < 0 || (o == 0 && !li) { return false }
            if let (u, ui) = upper, let o = order(e, u), o > 0 || (o == 0 && !ui) { return false }
        }
        if let (l, li) = lower, let (u, ui) = upper, let o = order(l, u) {
            if o > 0 || (o == 0 && !(li && ui)) { return false }
        }
        return true
    }
}
