// Rule: negation push-down (and De Morgan).

import SiftTree
import SiftValues

/// Moves `NOT` inward, flipping comparison operators and applying De Morgan's
/// laws, when the result means exactly the same.
///
/// ```
/// NOT (age > 30)                  =>  age <= 30           (age is never nil)
/// NOT (rating > 2)                =>  unchanged           (rating may be nil:
///                                                          NOT selects the nils, <= would not)
/// NOT (name == 'x')               =>  name != 'x'         (!= is NOT == by definition)
/// NOT (ANY reports.age > 60)      =>  NONE reports.age > 60
/// NOT (age > 30 AND name == 'x')  =>  age <= 30 OR name != 'x'
/// ```
///
/// Under two-valued logic every test is true or false, so De Morgan's laws
/// always hold; the rule applies them only when each operand's negation then
/// disappears, which is when its operator can be flipped: always for `==`
/// and `!=`, and for ordering operators only when the model proves both
/// operands are never nil.
public struct NegationPushDown: OptimizerRule {
    public let name = "negation-push-down"
    /// Creates the rule.
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        guard case .not(let inner) = predicate else { return nil }
        return Self.negated(inner)
    }

    /// `NOT p` without a NOT on top, when that is possible exactly.
    static func negated(_ p: BoundPredicate) -> BoundPredicate? {
        switch p {
        case .constant(let b):
            return .constant(!b)
        case .not(let q):
            return q
        case .comparison(let c):
            return negated(c).map(BoundPredicate.comparison)
        case .and(let ps):
            let parts = ps.map(negated)
            guard parts.allSatisfy({ $0 != nil }) else { return nil }
            return .or(parts.map { $0! })
        case .or(let ps):
            let parts = ps.map(negated)
            guard parts.allSatisfy({ $0 != nil }) else { return nil }
            return .and(parts.map { $0! })
        case .exists:
            return nil
        }
    }

    static func negated(_ c: BoundComparison) -> BoundComparison? {
        var result = c
        switch c.quantifier {
        case .any:
            result.quantifier = .none
            return result
        case .none:
            result.quantifier = .any
            return result
        case .all:
            // NOT ALL x op y == ANY x (NOT op) y, when each member's test flips exactly.
            guard let flipped = flip(c.operator, c.left.type.elementType, c.right, nonNil: false) else { return nil }
            result.quantifier = .any
            result.operator = flipped
            return result
        case .direct:
            let nonNil = !c.left.mayBeNil && !c.right.mayBeNil
            guard let flipped = flip(c.operator, c.left.type, c.right, nonNil: nonNil) else { return nil }
            result.operator = flipped
            return result
        }
    }

    static func flip(_ op: ComparisonOperator, _ type: ValueType, _ right: BoundExpression, nonNil: Bool) -> ComparisonOperator? {
        switch op {
        case .equalTo: return .notEqualTo
        case .notEqualTo: return .equalTo
        case .lessThan where nonNil: return .greaterThanOrEqualTo
        case .lessThanOrEqualTo where nonNil: return .greaterThan
        case .greaterThan where nonNil: return .lessThanOrEqualTo
        case .greaterThanOrEqualTo where nonNil: return .lessThan
        default: return nil
        }
    }
}
