// Rule: terms a subquery's loop does not need, taken out of it.
//
// `SUBQUERY(reports, $a, P).@count > 0` tests P once for each member of
// `reports`. When a term of P does not read `$a`, it has the same value for
// every member, so testing it once (before the loop) gives the same answer:
// nested subqueries that each read `reports` of the evaluated object rather
// than of the outer variable (`SUBQUERY(reports, $a0, SUBQUERY(reports, $a1,
// …).@count > 0).@count > 0`) otherwise cost the product of the sizes of
// every level's collection, per object.
//
// The rule rewrites the whole tree below the node it is given, subquery
// predicates included (the optimizer's own walk stops at expressions), from
// the innermost subquery out, so a term hoisted out of an inner loop can be
// hoisted again out of the next when it does not read that loop's variable
// either; a term that reads no variable at all ends at the top of the
// predicate, where it is tested once per object. What is hoisted stays a
// plain bound tree (an AND beside the loop), so the memory lowering, SQL (a
// term correlated with the object's row only, outside the inner `EXISTS`) and
// the remote store's canonical text all honour it with nothing of their own.

import SiftTree
import SiftValues

/// Takes the terms of a subquery's predicate that do not read the
/// subquery's variable out of its loop, where the subquery is tested for
/// members or counted against a constant.
///
/// ```
/// SUBQUERY(reports, $r, $r.age < 30 AND name == 'x').@count > 0
///     =>  name == 'x' AND SUBQUERY(reports, $r, $r.age < 30).@count > 0
/// SUBQUERY(reports, $a, SUBQUERY(reports, $b, TRUEPREDICATE).@count > 0).@count > 0
///     =>  EXISTS reports AND EXISTS reports
/// SUBQUERY(reports, $r, $r.age < 30 AND name == 'x').@count < 2
///     =>  NOT name == 'x' OR SUBQUERY(reports, $r, $r.age < 30).@count < 2
/// ```
///
/// With H the terms that do not read the variable and R the rest,
/// `∃m ∈ C: H ∧ R(m)` is `H ∧ ∃m ∈ C: R(m)`, and a count of members is that
/// of `R`'s members when H holds and 0 when it does not. H and R are tests
/// (true or false, never nil), so this holds in two-valued nil logic too. A
/// term is hoisted only when it is deterministic (no `random()`, `now()`):
/// the loop tested those once per member.
public struct LoopInvariantHoisting: OptimizerRule {
    public let name = "loop-invariant-hoisting"
    /// Creates the rule.
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        switch predicate {
        case .constant, .not, .and, .or:
            // The optimizer has rewritten the operands already.
            return nil
        case .comparison, .exists:
            let rewritten = Self.hoisted(predicate)
            return rewritten == predicate ? nil : rewritten
        }
    }

    // MARK: The walk

    /// `p` with every hoistable term of every subquery inside it hoisted.
    static func hoisted(_ p: BoundPredicate) -> BoundPredicate {
        switch p {
        case .constant: return p
        case .not(let q): return .not(hoisted(q))
        case .and(let qs): return .and(qs.map(hoisted))
        case .or(let qs): return .or(qs.map(hoisted))
        case .exists(let e):
            let inner = hoisted(e)
            return hoistedTest(.exists(inner)) ?? .exists(inner)
        case .comparison(var c):
            c.left = hoisted(c.left)
            c.right = hoisted(c.right)
            return hoistedTest(.comparison(c)) ?? .comparison(c)
        }
    }

    /// `e` with the subqueries inside it rewritten.
    static func hoisted(_ e: BoundExpression) -> BoundExpression {
        let kind: BoundExpression.Kind
        switch e.kind {
        case .constant, .evaluatedObject, .variable, .parameter: return e
        case .attribute(let b, let a): kind = .attribute(hoisted(b), a)
        case .toOne(let b, let r): kind = .toOne(hoisted(b), r)
        case .toMany(let b, let r): kind = .toMany(hoisted(b), r)
        case .key(let b, let k): kind = .key(hoisted(b), k)
        case .map(let c, let v, let each): kind = .map(hoisted(c), variable: v, hoisted(each))
        case .aggregate(let op, let c): kind = .aggregate(op, hoisted(c))
        case .subquery(let c, let v, let p): kind = .subquery(hoisted(c), variable: v, hoisted(p))
        case .list(let es): kind = .list(es.map(hoisted))
        case .arithmetic(let op, let a, let b): kind = .arithmetic(op, hoisted(a), hoisted(b))
        case .negate(let a): kind = .negate(hoisted(a))
        case .function(let f, let args): kind = .function(f, args.map(hoisted))
        case .ternary(let p, let a, let b): kind = .ternary(hoisted(p), hoisted(a), hoisted(b))
        case .index(let a, let b): kind = .index(hoisted(a), hoisted(b))
        case .size(let a): kind = .size(hoisted(a))
        case .custom(let f, let args): kind = .custom(f, args.map(hoisted))
        }
        return BoundExpression(kind, type: e.type)
    }

    // MARK: The rewrite at one test

    /// For a test of a subquery for members (`EXISTS`, as `CountToExists`
    /// writes it), or its count compared with a constant number: the test
    /// with the invariant terms of the subquery's predicate outside it; nil
    /// when it has none.
    static func hoistedTest(_ p: BoundPredicate) -> BoundPredicate? {
        switch p {
        case .exists(let e):
            guard let (invariant, loop) = split(e) else { return nil }
            return conjunction(invariant + [.exists(loop)])
        case .comparison(let c):
            guard c.quantifier == .direct, c.options.isEmpty,
                  case .aggregate(.count, let collection) = c.left.kind,
                  let n = c.right.constantValue.flatMap(ValueComparison.number),
                  let zeroHolds = holds(0, c.operator, n),
                  let (invariant, loop) = split(collection) else { return nil }
            var counted = c
            counted.left = BoundExpression(.aggregate(.count, loop), type: c.left.type)
            // No member when the invariant terms fail: the count is 0.
            if zeroHolds { return .or([.not(conjunction(invariant)), .comparison(counted)]) }
            return conjunction(invariant + [.comparison(counted)])
        default:
            return nil
        }
    }

    /// A subquery's invariant terms, and the subquery over the rest (its
    /// collection alone when nothing is left); nil when `e` is not a
    /// subquery or none of its terms can be hoisted.
    static func split(_ e: BoundExpression) -> ([BoundPredicate], BoundExpression)? {
        // Only over objects of a model: there every term is typed, so testing
        // one before the loop (or when the collection is empty) raises no
        // error the loop would not have raised.
        guard case .subquery(let collection, let variable, let predicate) = e.kind,
              case .collection(.object) = e.type else { return nil }
        let terms: [BoundPredicate] = if case .and(let qs) = predicate { qs } else { [predicate] }
        var invariant: [BoundPredicate] = []
        var loop: [BoundPredicate] = []
        for term in terms {
            if !term.reads(variable), term.isDeterministicThroughout { invariant.append(term) } else { loop.append(term) }
        }
        guard !invariant.isEmpty else { return nil }
        // A subquery whose predicate holds for every member is its collection.
        // (Its type is the collection's: a subquery of objects keeps theirs.)
        let rest: BoundExpression = switch loop.count {
        case 0 where collection.type == e.type: collection
        case 0: BoundExpression(.subquery(collection, variable: variable, .constant(true)), type: e.type)
        case 1: BoundExpression(.subquery(collection, variable: variable, loop[0]), type: e.type)
        default: BoundExpression(.subquery(collection, variable: variable, .and(loop)), type: e.type)
        }
        return (invariant.filter { $0 != .constant(true) }, rest)
    }

    static func conjunction(_ terms: [BoundPredicate]) -> BoundPredicate {
        switch terms.count {
        case 0: .constant(true)
        case 1: terms[0]
        default: .and(terms)
        }
    }

    /// Whether `0 op n` holds; nil for an operator that is not an order or
    /// an equality.
    static func holds(_ zero: Double, _ op: ComparisonOperator, _ n: Double) -> Bool? {
        switch op {
        case .lessThan: zero < n
        case .lessThanOrEqualTo: zero <= n
        case .greaterThan: zero > n
        case .greaterThanOrEqualTo: zero >= n
        case .equalTo: zero == n
        case .notEqualTo: zero != n
        default: nil
        }
    }
}

// MARK: What a term reads

extension BoundPredicate {
    /// Whether the predicate reads the variable `name` where it is not
    /// bound again inside it (a subquery or map of the same name).
    func reads(_ name: String) -> Bool {
        switch self {
        case .constant: false
        case .not(let q): q.reads(name)
        case .and(let qs), .or(let qs): qs.contains { $0.reads(name) }
        case .exists(let e): e.reads(name)
        case .comparison(let c): c.left.reads(name) || c.right.reads(name)
        }
    }

    /// Whether the predicate depends on nothing but what it reads, the
    /// predicates of subqueries inside it included.
    var isDeterministicThroughout: Bool {
        switch self {
        case .constant: true
        case .not(let q): q.isDeterministicThroughout
        case .and(let qs), .or(let qs): qs.allSatisfy(\.isDeterministicThroughout)
        case .exists(let e): e.isDeterministicThroughout
        case .comparison(let c): c.left.isDeterministicThroughout && c.right.isDeterministicThroughout
        }
    }
}

extension BoundExpression {
    /// `isDeterministic`, looking into the predicates of subqueries and
    /// ternaries too.
    var isDeterministicThroughout: Bool {
        switch kind {
        case .subquery(let c, _, let p):
            return c.isDeterministicThroughout && p.isDeterministicThroughout
        case .ternary(let p, let a, let b):
            return p.isDeterministicThroughout && a.isDeterministicThroughout && b.isDeterministicThroughout
        case .function(let f, let args):
            return f != .random && f != .randomn && f != .now && args.allSatisfy(\.isDeterministicThroughout)
        case .constant, .evaluatedObject, .variable, .parameter: return true
        case .attribute(let b, _), .toOne(let b, _), .toMany(let b, _), .key(let b, _), .aggregate(_, let b),
             .negate(let b), .size(let b):
            return b.isDeterministicThroughout
        case .map(let a, _, let b), .arithmetic(_, let a, let b), .index(let a, let b):
            return a.isDeterministicThroughout && b.isDeterministicThroughout
        case .list(let es), .custom(_, let es): return es.allSatisfy(\.isDeterministicThroughout)
        }
    }

    /// Whether the expression reads the variable `name` where it is free.
    func reads(_ name: String) -> Bool {
        switch kind {
        case .variable(let v): return v == name
        case .constant, .evaluatedObject, .parameter: return false
        case .attribute(let b, _), .toOne(let b, _), .toMany(let b, _), .key(let b, _), .aggregate(_, let b),
             .negate(let b), .size(let b):
            return b.reads(name)
        case .map(let c, let v, let each): return c.reads(name) || (v != name && each.reads(name))
        case .subquery(let c, let v, let p): return c.reads(name) || (v != name && p.reads(name))
        case .list(let es), .function(_, let es), .custom(_, let es): return es.contains { $0.reads(name) }
        case .arithmetic(_, let a, let b), .index(let a, let b): return a.reads(name) || b.reads(name)
        case .ternary(let p, let a, let b): return p.reads(name) || a.reads(name) || b.reads(name)
        }
    }
}
