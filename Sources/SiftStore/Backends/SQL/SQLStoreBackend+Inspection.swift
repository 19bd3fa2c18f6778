// Store stage: what a SQL store shows of how it runs a request — the plan
// (what SQL runs, what memory runs and why), the bound predicate, and the
// statements — for tools (`sift sql`, `sift explain`) and tests. Written
// once for every SQL store, from the compiled request.

import Foundation
import Sift

extension SQLStoreBackend {
    /// Splits a request's predicate into what SQL runs and what memory runs.
    ///
    /// - Parameter request: The fetch to plan.
    /// - Returns: The plan: the predicate's SQL part, the residual memory evaluates, the sort keys memory
    ///   applies, and why; the request's arguments in place.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidPredicate` when the
    ///   predicate or a sort key does not parse or fit the model; `.notExpressibleInSQL` when the fetch cannot
    ///   be lowered to SQL at all.
    public func plan(_ request: FetchRequest) throws(StoreError) -> FetchPlan {
        let fetch = try compile(request)
        return try plan(for: fetch).fillingParameters(fetch.parameterValues)
    }

    /// A request's predicate, bound to the store's model and optimized.
    ///
    /// - Parameter request: The fetch whose predicate is bound.
    /// - Returns: The bound, optimized predicate; nil when the request has none.
    /// - Throws: `StoreError.invalidPredicate` when the predicate does not parse or fit the model.
    public func bind(_ request: FetchRequest) throws(StoreError) -> BoundPredicate? {
        try compile(request).predicate
    }

    /// The SQL a request runs when SQL runs all of its predicate; an error
    /// naming the first construct SQL cannot express (and where it is in the
    /// predicate's text) otherwise.
    ///
    /// - Parameters:
    ///   - request: The fetch.
    ///   - columns: What each row returns: whole rows, identifiers or a count.
    /// - Returns: The statement with its bindings, in the store's dialect.
    /// - Throws: `StoreError`: `.notExpressibleInSQL` when part of the fetch needs memory (with where in the
    ///   predicate's text, when known); `.unknownEntity` or `.invalidPredicate` when the request does not fit
    ///   the model.
    public func sqlQuery(for request: FetchRequest, columns: SQLColumns) throws(StoreError) -> SQLQuery {
        try makeSQLQuery(for: request, columns: columns)
    }

    /// The one statement a dictionary fetch runs (its properties to fetch,
    /// grouping, having and distinctness); nil when part of it runs in memory.
    ///
    /// - Parameter request: The dictionary fetch, with its `propertiesToFetch`.
    /// - Returns: The statement with its bindings; nil when part of the fetch runs in memory.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidRequest` when the
    ///   request has no properties to fetch, a property is neither grouped nor aggregated, or a sort key names
    ///   no result; `.invalidPredicate` when a property, grouping key or predicate does not parse or fit the
    ///   model.
    public func resultQuery(for request: FetchRequest) throws(StoreError) -> SQLQuery? {
        let results = try compileResults(request)
        return try resultQuery(results.fetch, of: try compileObjects(of: request), sort: results.sort)
    }
}
