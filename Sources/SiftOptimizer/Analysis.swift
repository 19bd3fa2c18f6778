// Stage 5 (optimizer): facts the rules rely on — what may be nil, what a
// comparison tests, what a term costs.

import SiftTree
import SiftValues

extension BoundExpression {
    /// Whether the expression may be nil, as far as the model can tell.
    /// False only when it is proven never nil.
    public var mayBeNil: Bool {
        switch kind {
        case .constant(let v): return v == .null
        // Bound without a model, SELF and variables are whatever values come.
        case .evaluatedObject, .variable: return type == .any
        case .key: return true
        case .attribute(let base, let attribute): return attribute.isOptional || base.mayBeNil
        case .toOne: return true
        case .toMany, .map, .subquery, .list: return false
        case .aggregate(let op, _): return op != .count && op != .sum
        case .arithmetic(let op, let l, let r):
            return op == .divide || op == .power || l.mayBeNil || r.mayBeNil
        case .negate(let e): return e.mayBeNil
        case .function, .ternary, .index, .size, .custom, .parameter: return true
        }
    }

    /// Whether the expression is a constant.
    var constantValue: PredicateValue? {
        if case .constant(let v) = kind { return v }
        return nil
    }

    /// Whether evaluating the expression depends on nothing but itself
    /// (no `random()`, no `now()`).
    var isDeterministic: Bool {
        switch kind {
        case .function(let f, let arguments):
            return f != .random && f != .randomn && f != .now && arguments.allSatisfy(\.isDeterministic)
        case .constant, .evaluatedObject, .variable: return true
        case .attribute(let b, _), .toOne(let b, _), .toMany(let b, _), .key(let b, _), .negate(let b), .aggregate(_, let b),
             .size(let b):
            return b.isDeterministic
        case .map(let a, _, let b), .arithmetic(_, let a, let b), .index(let a, let b):
            return a.isDeterministic && b.isDeterministic
        case .subquery(let a, _, _): return a.isDeterministic
        case .list(let es): return es.allSatisfy(\.isDeterministic)
        case .ternary(_, let a, let b): return a.isDeterministic && b.isDeterministic
        case .custom(_, let args): return args.allSatisfy(\.isDeterministic)
        case .parameter: return true
        }
    }
}

extension BoundComparison {
    /// For `key op constant` with no quantifier and no options: the key, the
    /// operator and the constant. The shape range and equality rules work on.
    var keyTest: (key: BoundExpression, op: ComparisonOperator, value: PredicateValue)? {
        guard quantifier == .direct, options.isEmpty, !left.type.isCollection,
              case .constant(let v) = right.kind, v != .null else { return nil }
        switch v {
        case .int, .double, .string, .date, .bool: return (left, self.operator, v)
        default: return nil
        }
    }
}

/// A rough cost of evaluating a term in memory, for ordering: cheap numeric
/// tests first, regular expressions and to-many scans last.
///
/// Costs grow multiplicatively with nesting (a subquery inside a subquery),
/// so all arithmetic here saturates at `Cost.ceiling` instead of trapping:
/// past it, terms are simply "very expensive" and keep their order.
enum Cost {
    /// The largest cost; every sum and product stops there.
    static let ceiling = Int.max / 2

    /// `a + b`, saturating at `ceiling`.
    static func add(_ a: Int, _ b: Int) -> Int { a >= ceiling - b ? ceiling : a + b }

    /// `factor * a` for a small constant factor, saturating at `ceiling`.
    static func scale(_ a: Int, by factor: Int) -> Int { a >= ceiling / factor ? ceiling : a * factor }

    static func sum(_ costs: some Sequence<Int>) -> Int { costs.reduce(0, add) }

    static func of(_ p: BoundPredicate) -> Int {
        switch p {
        case .constant: return 0
        case .not(let q): return of(q)
        case .and(let qs), .or(let qs): return sum(qs.lazy.map(of))
        case .exists(let e): return add(of(e), 10)
        case .comparison(let c):
            let opCost: Int = switch c.operator {
            case .matches: 40
            case .like: 12
            case .contains, .beginsWith, .endsWith, .in: 4
            default: 1
            }
            let optionCost = c.options.isEmpty ? 0 : 8
            let quantified = c.quantifier == .direct ? 0 : 10
            return sum([opCost + optionCost + quantified, of(c.left), of(c.right)])
        }
    }

    static func of(_ e: BoundExpression) -> Int {
        switch e.kind {
        case .constant, .evaluatedObject, .variable: return 0
        case .attribute(let b, _): return add(1, of(b))
        case .key(let b, _): return add(2, of(b))
        case .toOne(let b, _): return add(5, of(b))
        case .toMany(let b, _): return add(20, of(b))
        case .map(let a, _, let b): return add(of(a), scale(of(b), by: 5))
        case .aggregate(_, let a): return add(5, of(a))
        case .subquery(let a, _, let p): return add(of(a), scale(of(p), by: 10))
        case .list(let es): return sum(es.lazy.map(of))
        case .arithmetic(_, let a, let b), .index(let a, let b): return sum([1, of(a), of(b)])
        case .negate(let a), .size(let a): return add(1, of(a))
        case .function(_, let args): return add(5, sum(args.lazy.map(of)))
        case .ternary(let p, let a, let b): return sum([of(p), of(a), of(b)])
        case .custom(_, let args): return add(20, sum(args.lazy.map(of)))
        case .parameter: return 0
        }
    }
}
