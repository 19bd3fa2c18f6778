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
        try makeSQLQuery(for: request, columns: columns)
    }

    /// The one statement a dictionary fetch runs (its properties to fetch,
    /// grouping, having and distinctness); nil when part of it runs in memory.
    public func resultQuery(for request: FetchRequest) throws(StoreError) -> SQLQuery? {
        let (fetch, sort) = try bindDictionaryFetch(request)
        return try resultQuery(fetch, request: request, sort: sort)
    }
}
