// Store stage: the SQL a fetch request runs on the SQLite store, for tools
// (`sift sql`, `sift explain`) and tests.

import Foundation
import Sift

extension SQLiteStore {
    /// A request's predicate, bound to the store's model and optimized.
    public func bind(_ request: FetchRequest) throws(StoreError) -> BoundPredicate? {
        try boundPredicate(request)
    }

    /// The SQL a request runs when SQL runs all of its predicate; an error
    /// naming the first construct SQL cannot express (and where it is in the
    /// predicate's text) otherwise.
    public func sqlQuery(for request: FetchRequest, columns: SQLColumns = .rows) throws(StoreError) -> SQLQuery {
        let plan = try plan(request)
        if let term = plan.fetch.terms.first(where: { $0.error != nil }), let error = term.error {
            throw .notExpressibleInSQL(error, range: sourceRange(of: error.expression, in: request), text: request.predicateText)
        }
        if plan.residual != nil, let reason = plan.reasons.first {
            throw .notExpressibleInSQL(SQLLoweringError(reason), range: nil, text: request.predicateText)
        }
        return plan.query(for: request, columns: columns)
    }

    /// Where in the request's predicate text a bound expression came from.
    func sourceRange(of expression: BoundExpression?, in request: FetchRequest) -> SourceRange? {
        guard let expression, case .format(let text, let arguments) = request.predicate,
              let syntax = try? PredicateParser.parse(text, arguments: arguments),
              let (_, ranges) = try? binder.bindWithSourceMap(syntax, entity: request.entityName)
        else { return nil }
        return ranges[expression]
    }
}
