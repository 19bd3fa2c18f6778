// Store stage: fetch requests, as Core Data's `NSFetchRequest` describes them.

import Foundation
import Sift

/// A fetch request's view of a predicate: text with format arguments (a
/// ``/Sift/FormatPredicate``'s, or written in place), or a tree already bound.
///
/// ```swift
/// var request = FetchRequest(entityName: "Book")
/// request.predicate = "pages > 300"                           // a string literal
/// request.predicate = FetchPredicate("author.name == %@ AND pages > %@", author, minimum)
/// request.predicate = FetchPredicate(try FormatPredicate.and([long, recent]))   // the one predicate type
/// ```
public enum FetchPredicate: Sendable, ExpressibleByStringLiteral {
    /// Predicate text and the values of its format specifiers, bound when the fetch runs.
    case format(String, [PredicateValue])
    /// A predicate already bound to the store's model (by a `PredicateCompiler`, say).
    case bound(BoundPredicate)

    /// Predicate text with no format arguments.
    ///
    /// - Parameter text: The predicate, in the format language.
    public init(stringLiteral text: String) {
        self = .format(text, [])
    }

    /// Predicate text and the values of its format specifiers, each any
    /// value Sift converts (`Int`, `String`, `Date`, an array of them, …).
    ///
    /// - Parameters:
    ///   - text: The predicate, in the format language.
    ///   - arguments: The values of its format specifiers, in order.
    public init(_ text: String, _ arguments: any PredicateValueConvertible...) {
        self = .format(text, arguments.map(\.predicateValue))
    }
}

/// How to order results: a key path (through to-one relationships), its
/// direction, and whether strings compare as `[c]` folds them.
///
/// ```swift
/// let request = FetchRequest(entityName: "Employee", sortDescriptors: [
///     FetchSortDescriptor("department.name"),                  // by the department's name first
///     FetchSortDescriptor("age", ascending: false),            // then the oldest first
/// ])
/// print(try context.fetch(request).map { try $0.value(forKey: "name") })   // ["Cy", "Ann", "Bob"]
/// if let byName = FetchSortDescriptor(parsing: "name:desc:ci") {   // nil for text it cannot read
///     print(byName == FetchSortDescriptor("name", ascending: false, caseInsensitive: true))   // true
/// }
/// ```
public struct FetchSortDescriptor: Hashable, Sendable {
    /// The key path sorted by: an attribute, through to-one relationships.
    public var keyPath: String
    /// Whether smaller values come first (nil first).
    public var ascending: Bool
    /// Whether strings compare as `[c]` folds them.
    public var caseInsensitive: Bool

    /// A sort by `keyPath`.
    ///
    /// - Parameters:
    ///   - keyPath: An attribute, or a key path through to-one relationships (`department.name`).
    ///   - ascending: Whether smaller values come first.
    ///   - caseInsensitive: Whether strings compare as `[c]` folds them.
    public init(_ keyPath: String, ascending: Bool = true, caseInsensitive: Bool = false) {
        self.keyPath = keyPath
        self.ascending = ascending
        self.caseInsensitive = caseInsensitive
    }

    /// Reads a key path followed by the options `:asc` (or `:ascending`), `:desc` (or `:descending`) and
    /// `:ci`, in any order, each at most once and not both ascending and descending (`name:desc:ci`); nil
    /// for anything else.
    ///
    /// - Parameter text: A key path, followed by `:desc` for a descending sort and `:ci` for case-insensitive
    ///   strings (`:asc` is the default).
    public init?(parsing text: String) {
        let long = ["ascending": "asc", "descending": "desc"]
        let split = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let parts = Array(split.prefix(1)) + split.dropFirst().map { long[$0] ?? $0 }
        let options = Set(parts.dropFirst())
        guard let keyPath = parts.first, !keyPath.isEmpty, options.count == parts.count - 1,
              options.isSubset(of: ["asc", "desc", "ci"]), !options.isSuperset(of: ["asc", "desc"]) else { return nil }
        self.init(keyPath, ascending: !options.contains("desc"), caseInsensitive: options.contains("ci"))
    }
}

/// What to fetch, as Core Data's `NSFetchRequest` describes it.
///
/// ```swift
/// var request = FetchRequest(entityName: "Employee", predicate: "age > %@ AND ANY tags.name ==[c] %@",
///                            arguments: [40, "remote"], sortDescriptors: [FetchSortDescriptor("name")])
/// request.fetchLimit = 20
/// request.relationshipKeyPathsForPrefetching = ["department"]
/// let employees = try context.fetch(request)
/// ```
public struct FetchRequest: Sendable {
    /// What a fetch returns.
    public enum ResultType: Hashable, Sendable {
        /// Objects of the context.
        case objects
        /// Object IDs only.
        case objectIDs
        /// The number of matching objects.
        case count
        /// Dictionaries of the named properties.
        case dictionaries([String])
    }

    /// The entity whose objects (and subentities' objects) are fetched.
    public var entityName: String
    /// Which objects to fetch (nil: all of them).
    public var predicate: FetchPredicate?
    /// How to order the results: by each descriptor in turn, then by primary key.
    public var sortDescriptors: [FetchSortDescriptor]
    /// The most objects to return (nil: all).
    public var fetchLimit: Int?
    /// How many matching objects to skip first.
    public var fetchOffset: Int
    /// When positive, the IDs are fetched first and the rows in batches of
    /// this size as objects are touched.
    public var fetchBatchSize: Int
    /// What the fetch returns: objects (the default), IDs, a count, or dictionaries.
    public var resultType: ResultType
    /// Relationship key paths whose objects are fetched with the results, one
    /// statement per key path.
    public var relationshipKeyPathsForPrefetching: [String]
    /// Whether fetched objects come back as faults (their rows are in the row
    /// cache all the same, so firing them needs no SQL).
    public var returnsObjectsAsFaults: Bool
    /// Whether the context's unsaved changes count: inserted and changed
    /// objects are tested in memory, deleted ones drop out — the answers a
    /// save first would give.
    public var includesPendingChanges: Bool
    /// What a dictionary fetch (`ObjectContext.fetchDictionaries(_:)`)
    /// returns for each result: attributes, to-one key paths, expressions
    /// and aggregates, each under its name.
    public var propertiesToFetch: [ExpressionDescription]
    /// What a dictionary fetch groups rows by: key paths or expressions,
    /// or the names of fetched properties.
    public var propertiesToGroupBy: [String]
    /// A predicate over a dictionary fetch's results, by result name
    /// (`total > 1000`), applied after grouping (SQL's HAVING).
    public var havingPredicate: FetchPredicate?
    /// Whether a dictionary fetch returns equal results once.
    public var returnsDistinctResults: Bool
    /// The most steps the fetch's `MATCHES` and `LIKE` tests may take over
    /// all the rows it tests together, wherever they run (memory, SQLite's
    /// functions, a residual after SQL); past it the fetch ends with
    /// `StoreError.evaluation(.fetchTooCostly)`, naming the pattern. Nil
    /// (the default) for `PredicateLimits.standard.regularExpressionStepsPerFetch`.
    /// Each value is also bounded on its own by
    /// `PredicateLimits.regularExpressionSteps`.
    public var regularExpressionStepLimit: Int?
    /// The longest the fetch may work, over all it runs (SQL, memory, unsaved
    /// changes); past it the fetch stops and ends with
    /// `StoreError.evaluation(.fetchTooCostly)`, naming the loop it was in
    /// where known. Nil (the default) for the store's `fetchTimeLimit`, or
    /// else `PredicateLimits.standard.fetchTimeLimit` (5 seconds).
    ///
    /// ```swift
    /// var request = FetchRequest(entityName: "Employee", predicate: text)
    /// request.timeLimit = .milliseconds(500)
    /// let employees = try context.fetch(request)   // or .fetchTooCostly after about 0.5 s
    /// ```
    public var timeLimit: Duration?

    /// A request for `entityName`'s objects matching `predicate`, if given.
    ///
    /// - Parameters:
    ///   - entityName: The entity whose objects (and subentities' objects) are fetched.
    ///   - predicate: The predicate's format string; nil to fetch every object.
    ///   - arguments: The values of the predicate's format specifiers, in order.
    ///   - sortDescriptors: How to order the results, by each descriptor in turn.
    ///   - fetchLimit: The most objects to return; nil for all.
    ///   - fetchOffset: How many matching objects to skip first.
    public init(entityName: String, predicate: String? = nil, arguments: [PredicateValue] = [],
                sortDescriptors: [FetchSortDescriptor] = [], fetchLimit: Int? = nil, fetchOffset: Int = 0) {
        self.entityName = entityName
        self.predicate = predicate.map { .format($0, arguments) }
        self.sortDescriptors = sortDescriptors
        self.fetchLimit = fetchLimit
        self.fetchOffset = fetchOffset
        self.fetchBatchSize = 0
        self.resultType = .objects
        self.relationshipKeyPathsForPrefetching = []
        self.returnsObjectsAsFaults = true
        self.includesPendingChanges = true
        self.propertiesToFetch = []
        self.propertiesToGroupBy = []
        self.havingPredicate = nil
        self.returnsDistinctResults = false
        self.regularExpressionStepLimit = nil
        self.timeLimit = nil
    }
}

extension FetchRequest {
    /// The page of `items` the request's offset and limit select, as SQL
    /// reads them: a negative offset skips nothing, a negative limit is none.
    func page<T>(_ items: [T]) -> [T] {
        var result = items
        if fetchOffset > 0 { result = Array(result.dropFirst(fetchOffset)) }
        if let limit = fetchLimit, limit >= 0 { result = Array(result.prefix(limit)) }
        return result
    }

    /// The steps the fetch's patterns may take over all its rows: its own
    /// limit, or the standard one.
    var patternStepBudget: Int {
        regularExpressionStepLimit ?? PredicateLimits.standard.regularExpressionStepsPerFetch
    }

    /// The time the fetch may work in `store`: its own limit, the store's,
    /// or the standard one.
    func timeBudget(in store: any PersistentStore) -> Duration {
        timeLimit ?? store.fetchTimeLimit ?? PredicateLimits.standard.fetchTimeLimit
    }

    /// The predicate's text, when it was given as text.
    var predicateText: String? {
        if case .format(let text, _) = predicate { return text }
        return nil
    }
}
