// Store stage: the relationship key paths a predicate follows — what must be
// loaded before memory evaluates a plan's residual over store rows.

import Foundation
import Sift

/// The relationship key paths (from the evaluated object) an expression
/// follows: what must be loaded before memory evaluates it over store rows.
package enum RelationshipPaths {
    package static func of(_ p: BoundPredicate, _ variables: [String: [String]] = [:]) -> Set<String> {
        switch p {
        case .constant: return []
        case .not(let q): return of(q, variables)
        case .and(let qs), .or(let qs): return qs.reduce(into: []) { $0.formUnion(of($1, variables)) }
        case .comparison(let c): return of(c.left, variables).union(of(c.right, variables))
        case .exists(let e): return of(e, variables)
        }
    }

    static func of(_ e: BoundExpression, _ variables: [String: [String]]) -> Set<String> {
        var result = Set(paths(e, variables).filter { !$0.isEmpty })
        switch e.kind {
        case .attribute(let b, _), .toOne(let b, _), .toMany(let b, _), .key(let b, _), .negate(let b), .aggregate(_, let b),
             .size(let b):
            result.formUnion(of(b, variables))
        case .map(let collection, let variable, let each):
            result.formUnion(of(collection, variables))
            var inner = variables
            inner[variable] = paths(collection, variables)
            result.formUnion(of(each, inner))
        case .subquery(let collection, let variable, let predicate):
            result.formUnion(of(collection, variables))
            var inner = variables
            inner[variable] = paths(collection, variables)
            result.formUnion(of(predicate, inner))
        case .arithmetic(_, let a, let b), .index(let a, let b):
            result.formUnion(of(a, variables))
            result.formUnion(of(b, variables))
        case .list(let es), .function(_, let es), .custom(_, let es):
            for x in es { result.formUnion(of(x, variables)) }
        case .ternary(let p, let a, let b):
            result.formUnion(of(p, variables))
            result.formUnion(of(a, variables))
            result.formUnion(of(b, variables))
        case .constant, .evaluatedObject, .variable, .parameter:
            break
        }
        return result
    }

    /// The key paths, from the evaluated object, that the objects an
    /// object-valued expression gives may be reached by: one for a plain key
    /// path, both branches' for a TERNARY, every member's for a list or a set
    /// operation. Empty for objects given as constants.
    static func paths(_ e: BoundExpression, _ variables: [String: [String]]) -> [String] {
        switch e.kind {
        case .evaluatedObject: return [""]
        case .variable(let name): return variables[name] ?? []
        case .toOne(let base, let r), .toMany(let base, let r):
            return paths(base, variables).map { $0.isEmpty ? r.name : $0 + "." + r.name }
        case .map(let collection, let variable, let each):
            var inner = variables
            inner[variable] = paths(collection, variables)
            return paths(each, inner)
        case .subquery(let collection, _, _), .index(let collection, _):
            return paths(collection, variables)
        case .ternary(_, let a, let b):
            return paths(a, variables) + paths(b, variables)
        case .list(let es), .function(_, let es):
            return es.flatMap { paths($0, variables) }
        default:
            return []
        }
    }
}
