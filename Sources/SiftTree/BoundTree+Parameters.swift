// Stage 2 (tree): parameters — finding where a tree's parameters sit, and
// putting values in their place. A compiled fetch binds a request's format
// arguments as parameters once, and fills them for each execution.

import SiftValues

extension BoundPredicate {
    /// The tree with every expression `transform` answers replaced by its
    /// answer; the others are rebuilt from their operands, top down.
    package func replacingExpressions(_ transform: (BoundExpression) -> BoundExpression?) -> BoundPredicate {
        switch self {
        case .constant: return self
        case .not(let p): return .not(p.replacingExpressions(transform))
        case .and(let ps): return .and(ps.map { $0.replacingExpressions(transform) })
        case .or(let ps): return .or(ps.map { $0.replacingExpressions(transform) })
        case .comparison(var c):
            c.left = c.left.replacingExpressions(transform)
            c.right = c.right.replacingExpressions(transform)
            return .comparison(c)
        case .exists(let e): return .exists(e.replacingExpressions(transform))
        }
    }

    /// The tree with each parameter named in `values` replaced by a constant
    /// of its value (of the type the parameter was bound with).
    ///
    /// - Parameter values: The parameters' values, by name.
    /// - Returns: The tree, its parameters in place; itself when `values` is empty.
    package func fillingParameters(_ values: [String: PredicateValue]) -> BoundPredicate {
        guard !values.isEmpty else { return self }
        return replacingExpressions { e in
            guard case .parameter(let name) = e.kind, let value = values[name] else { return nil }
            return BoundExpression(.constant(value), type: e.type)
        }
    }

    /// Every occurrence of a parameter in the tree, with how it occurs: as an
    /// operand of a comparison (and what the comparison is), or elsewhere.
    package var parameterOccurrences: [(name: String, comparison: BoundComparison?)] {
        var found: [(name: String, comparison: BoundComparison?)] = []
        visitParameters { name, comparison in found.append((name, comparison)) }
        return found
    }

    fileprivate func visitParameters(_ visit: (String, BoundComparison?) -> Void) {
        switch self {
        case .constant: break
        case .not(let p): p.visitParameters(visit)
        case .and(let ps), .or(let ps): for p in ps { p.visitParameters(visit) }
        case .comparison(let c):
            for side in [c.left, c.right] {
                if case .parameter(let name) = side.kind { visit(name, c) } else { side.visitParameters(visit) }
            }
        case .exists(let e): e.visitParameters(visit)
        }
    }
}

extension BoundExpression {
    /// The expression with every subexpression `transform` answers replaced
    /// by its answer, top down.
    package func replacingExpressions(_ transform: (BoundExpression) -> BoundExpression?) -> BoundExpression {
        if let replaced = transform(self) { return replaced }
        func r(_ e: BoundExpression) -> BoundExpression { e.replacingExpressions(transform) }
        let kind: Kind
        switch self.kind {
        case .constant, .evaluatedObject, .variable, .parameter: return self
        case .attribute(let base, let a): kind = .attribute(r(base), a)
        case .toOne(let base, let rel): kind = .toOne(r(base), rel)
        case .toMany(let base, let rel): kind = .toMany(r(base), rel)
        case .key(let base, let key): kind = .key(r(base), key)
        case .map(let base, let variable, let e): kind = .map(r(base), variable: variable, r(e))
        case .aggregate(let op, let e): kind = .aggregate(op, r(e))
        case .subquery(let base, let variable, let p): kind = .subquery(r(base), variable: variable, p.replacingExpressions(transform))
        case .list(let es): kind = .list(es.map(r))
        case .arithmetic(let op, let a, let b): kind = .arithmetic(op, r(a), r(b))
        case .negate(let e): kind = .negate(r(e))
        case .function(let f, let es): kind = .function(f, es.map(r))
        case .ternary(let p, let a, let b): kind = .ternary(p.replacingExpressions(transform), r(a), r(b))
        case .index(let a, let b): kind = .index(r(a), r(b))
        case .size(let e): kind = .size(r(e))
        case .custom(let f, let es): kind = .custom(f, es.map(r))
        }
        return BoundExpression(kind, type: type)
    }

    /// Every parameter anywhere in the expression, as in a tree's
    /// `parameterOccurrences`.
    fileprivate func visitParameters(_ visit: (String, BoundComparison?) -> Void) {
        switch kind {
        case .parameter(let name): visit(name, nil)
        case .constant, .evaluatedObject, .variable: break
        case .attribute(let e, _), .toOne(let e, _), .toMany(let e, _), .key(let e, _), .aggregate(_, let e), .negate(let e),
             .size(let e):
            e.visitParameters(visit)
        case .map(let a, _, let b), .arithmetic(_, let a, let b), .index(let a, let b):
            a.visitParameters(visit)
            b.visitParameters(visit)
        case .subquery(let e, _, let p):
            e.visitParameters(visit)
            p.visitParameters(visit)
        case .list(let es), .function(_, let es), .custom(_, let es):
            for e in es { e.visitParameters(visit) }
        case .ternary(let p, let a, let b):
            p.visitParameters(visit)
            a.visitParameters(visit)
            b.visitParameters(visit)
        }
    }
}
