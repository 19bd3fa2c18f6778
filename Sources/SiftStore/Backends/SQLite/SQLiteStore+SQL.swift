// Store stage: the SQL a fetch request runs on the SQLite store, for tools
// (`sift sql`, `sift explain`) and tests.

import Foundation
import Sift

extension SQLiteStore {
    /// A request's predicate, bound to the store's model and optimized.
    ///
    /// - Parameter request: The fetch whose predicate is bound.
    /// - Returns: The bound, optimized predicate; nil when the request has none.
    /// - Throws: `StoreError.invalidPredicate` when the predicate does not parse or fit the model.
    public func bind(_ request: FetchRequest) throws(StoreError) -> BoundPredicate? {
        try boundPredicate(request)
    }

    /// The SQL a request runs when SQL runs all of its predicate; an error
    /// naming the first construct SQL cannot express (and where it is in the
    /// predicate's text) otherwise.
    ///
    /// - Parameters:
    ///   - request: The fetch.
    ///   - columns: What each row returns: whole rows, identifiers or a count.
    /// - Returns: The statement with its bindings.
    /// - Throws: `StoreError`: `.notExpressibleInSQL` when part of the fetch needs memory (with where in the
    ///   predicate's text, when known); `.unknownEntity` or `.invalidPredicate` when the request does not fit
    ///   the model.
    public func sqlQuery(for request: FetchRequest, columns: SQLColumns = .rows) throws(StoreError) -> SQLQuery {
        try makeSQLQuery(for: request, columns: columns)
    }

    /// The one statement a dictionary fetch runs (its properties to fetch,
    /// grouping, having and distinctness); nil when part of it runs in memory.
    ///
    /// - Parameter request: The dictionary fetch, with its `propertiesToFetch`.
    /// - Returns: The statement with its bindings; nil when part of the fetch runs in memory.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidFetch` when the
    ///   request has no properties to fetch, a property is neither grouped nor aggregated, or a sort key names
    ///   no result; `.invalidPredicate` when a property, grouping key or predicate does not parse or fit the
    ///   model.
    public func resultQuery(for request: FetchRequest) throws(StoreError) -> SQLQuery? {
        let (fetch, sort) = try bindDictionaryFetch(request)
        return try resultQuery(fetch, request: request, sort: sort)
    }
}
