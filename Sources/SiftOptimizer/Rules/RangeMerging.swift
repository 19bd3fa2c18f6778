// Rule: range merging.

import SiftTree
import SiftValues

/// Keeps only the tightest of several bounds on one key, and joins an
/// inclusive lower and upper bound into one `BETWEEN`.
///
/// ```
/// age > 3 AND age > 5               =>  age > 5
/// age < 9 AND age <= 7              =>  age <= 7
/// age >= 30 AND age <= 40           =>  age BETWEEN {30, 40}
/// ```
///
/// Only bounds on the same key without options or a quantifier are merged.
/// A nil key fails the bounds and the `BETWEEN` alike.
public struct RangeMerging: OptimizerRule {
    public let name = "range-merging"
    /// Creates the rule.
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        guard case .and(let ps) = predicate else { return nil }
        var lower: [BoundExpression: (index: Int, op: ComparisonOperator, value: PredicateValue)] = [:]
        var upper: [BoundExpression: (index: Int, op: ComparisonOperator, value: PredicateValue)] = [:]
        var drop = Set<Int>()
        for (i, p) in ps.enumerated() {
            guard case .comparison(let c) = p, let test = c.keyTest else { continue }
            // `tighter` is the sign of `order(new, old)` that makes the new bound win.
            func keepTighter(_ bounds: inout [BoundExpression: (index: Int, op: ComparisonOperator, value: PredicateValue)],
                             tighter: Int, strict: ComparisonOperator) {
                guard let current = bounds[test.key] else {
                    bounds[test.key] = (i, test.op, test.value)
                    return
                }
                guard let o = ValueComparison.order(test.value, current.value) else { return }
                if o.signum() == tighter || (o == 0 && test.op == strict) {
                    drop.insert(current.index)
                    bounds[test.key] = (i, test.op, test.value)
                } else {
                    drop.insert(i)
                }
            }
            switch test.op {
            case .greaterThan, .greaterThanOrEqualTo: keepTighter(&lower, tighter: 1, strict: .greaterThan)
            case .lessThan, .lessThanOrEqualTo: keepTighter(&upper, tighter: -1, strict: .lessThan)
            default: continue
            }
        }
        var replace: [Int: BoundPredicate] = [:]
        for (key, low) in lower {
            guard let high = upper[key], low.op == .greaterThanOrEqualTo, high.op == .lessThanOrEqualTo else { continue }
            let bounds = BoundExpression(.list([.constant(low.value, type: key.type), .constant(high.value, type: key.type)]),
                                         type: .collection(key.type))
            replace[low.index] = .comparison(BoundComparison(key, .between, bounds))
            drop.insert(high.index)
        }
        guard !drop.isEmpty || !replace.isEmpty else { return nil }
        let result = ps.enumerated().compactMap { i, p -> BoundPredicate? in
            if drop.contains(i) { return nil }
            return replace[i] ?? p
        }
        return result.count == 1 ? result[0] : .and(result)
    }
}
