// Rule: counting members to test for one.

import SiftTree
import SiftValues

/// Turns a count of a collection's members compared with zero into a test for
/// whether there is a member at all.
///
/// ```
/// SUBQUERY(reports, $r, $r.age < 30).@count > 0   =>  EXISTS SUBQUERY(reports, $r, $r.age < 30)
/// reports.@count != 0                              =>  EXISTS reports
/// employees.@count == 0                            =>  NOT EXISTS employees
/// ```
///
/// SQL then stops at the first member (`EXISTS`) instead of counting them
/// all, and evaluation in memory stops at the first member too.
public struct CountToExists: OptimizerRule {
    public let name = "count-to-exists"
    /// Creates the rule.
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        guard case .comparison(let c) = predicate, c.quantifier == .direct,
              case .aggregate(.count, let collection) = c.left.kind,
              let n = c.right.constantValue.flatMap(ValueComparison.number) else { return nil }
        switch (c.operator, n) {
        case (.greaterThan, 0), (.notEqualTo, 0), (.greaterThanOrEqualTo, 1):
            return .exists(collection)
        case (.equalTo, 0), (.lessThan, 1), (.lessThanOrEqualTo, 0):
            return .not(.exists(collection))
        default:
            return nil
        }
    }
}
