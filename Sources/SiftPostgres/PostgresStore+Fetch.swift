// PostgreSQL: how the store runs the statements of a fetch — each on a
// connection of the pool, its rows read through the schema's row layout
// into row-cache nodes. What to run, and what memory does, is
// `SQLStoreBackend`'s, as on SQLite.

import Foundation
import PostgresNIO
import Sift
import SiftStore

extension PostgresStore: SQLStoreBackend {
    /// Calls `observer` with the changes of every committed save and batch
    /// change, on the thread that made it, until the returned observation is
    /// cancelled (releasing it does not stop it: call
    /// `cancel()`).
    ///
    /// - Parameter observer: Hears each `StoreChanges`; hand it to a context's
    ///   own thread before merging.
    /// - Returns: The observation, whose `cancel()` stops it.
    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (StoreChanges) -> Void) -> StoreObservation {
        observers.add(observer)
    }

    package var transformers: ValueTransformerRegistry? { valueTransformers }

    package func fetchNodes(_ query: SQLQuery, entity: Entity, ownerColumn: Bool,
                            owner: ((Int64) -> Void)?) throws(StoreError) -> [RowNode] {
        let collector = RowCollector(
            RowReaders(schema.rowLayout(entity), base: ownerColumn ? 1 : 0, externalData: nil, transformers: valueTransformers),
            ownerColumn: ownerColumn)
        // Rows become nodes as they arrive, on the connection's event loop.
        let logger = self.logger
        statements.add(1, ordering: .relaxed)
        try withConnection { connection in
            try connection.forEachRow(query.sql, query.bindings, logger: logger) { collector.add($0) }
        }
        if let owner { for key in collector.owners { owner(key) } }
        return rowCache.storeFetched(collector.nodes)
    }

    package func fetchObjectIDs(_ query: SQLQuery, entity: Entity) throws(StoreError) -> [ObjectID] {
        let layout = schema.rowLayout(entity)
        let rows = try run(query)
        guard layout.entityColumn != nil else {
            return rows.map { ObjectID(entity: entity, primaryKey: ValueRow($0).integer(0)) }
        }
        return rows.compactMap { columns in
            let row = ValueRow(columns)
            return layout.member(number: row.integer(1)).map {
                ObjectID(entity: $0.entity, root: $0.root, primaryKey: row.integer(0))
            }
        }
    }

    package func fetchIntegers(_ query: SQLQuery, columns: Int) throws(StoreError) -> [Int64] {
        var result: [Int64] = []
        for columnValues in try run(query) {
            let row = ValueRow(columnValues)
            for column in 0..<columns { result.append(row.integer(column)) }
        }
        return result
    }

    package func fetchValues(_ query: SQLQuery, types: [AttributeType]) throws(StoreError) -> [[PredicateValue]] {
        try run(query).map { columns in
            types.indices.map { $0 < columns.count ? PredicateValue(sqlValue: columns[$0], type: types[$0]) : .null }
        }
    }

    /// PostgreSQL binds at most 65 535 parameters to a statement, and its
    /// parser has a stack depth limit: a statement past either is refused
    /// (and its largest terms run in memory).
    package func refuses(_ select: SQLSelect) -> String? {
        let query = schema.render(.select(select))
        if query.bindings.count > Int(UInt16.max) {
            return "PostgreSQL's limits (\(query.bindings.count) parameters, more than 65 535)"
        }
        do {
            _ = try run(ServerCatalog.explain(query))
            return nil
        } catch {
            if case .server(let message, _) = error, message.contains("stack depth") || message.contains("too many") {
                return "PostgreSQL's limits (\(message))"
            }
            return nil
        }
    }

    /// Splits a request's predicate into what PostgreSQL runs and what memory
    /// runs, binding, optimizing and lowering it once.
    ///
    /// - Parameter request: The fetch to plan.
    /// - Returns: The plan: the predicate's SQL part, the residual memory evaluates, the sort keys memory
    ///   applies, and why.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidPredicate` when the
    ///   predicate or a sort key does not parse or fit the model; `.notExpressibleInSQL` when the fetch cannot
    ///   be lowered to SQL at all.
    public func plan(_ request: FetchRequest) throws(StoreError) -> FetchPlan {
        try makePlan(request)
    }

    /// A request's predicate, bound to the store's model and optimized.
    ///
    /// - Parameter request: The fetch whose predicate is bound.
    /// - Returns: The bound, optimized predicate; nil when the request has none.
    /// - Throws: `StoreError.invalidPredicate` when the predicate does not parse or fit the model.
    public func bind(_ request: FetchRequest) throws(StoreError) -> BoundPredicate? {
        try boundPredicate(request)
    }

    /// The SQL a request runs when PostgreSQL runs all of its predicate; an
    /// error naming the first construct it cannot express otherwise.
    ///
    /// - Parameters:
    ///   - request: The fetch.
    ///   - columns: What each row returns: whole rows, identifiers or a count.
    /// - Returns: The statement with its bindings, in PostgreSQL's dialect.
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

    /// PostgreSQL's plan for a query (`EXPLAIN`), one line per step.
    ///
    /// - Parameter query: The statement, with its bindings.
    /// - Returns: The lines of PostgreSQL's `EXPLAIN`.
    /// - Throws: `StoreError.server` when the server cannot be reached or refuses the statement.
    public func queryPlan(_ query: SQLQuery) throws(StoreError) -> [String] {
        try run(ServerCatalog.explain(query)).map { row in
            if case .text(let line)? = row.first { return line }
            return row.map(\.description).joined(separator: " ")
        }
    }
}

extension ObjectContext {
    /// A context on a PostgreSQL store.
    ///
    /// - Parameter store: The store the context reads and saves to.
    public convenience init(store: PostgresStore) {
        self.init(backend: store)
    }
}

/// Builds nodes from rows as they arrive (on the connection's event loop;
/// read after the statement completes).
final class RowCollector: @unchecked Sendable {
    let readers: RowReaders
    let ownerColumn: Bool
    let now = Date().timeIntervalSinceReferenceDate
    var nodes: [RowNode] = []
    var owners: [Int64] = []

    init(_ readers: RowReaders, ownerColumn: Bool) {
        self.readers = readers
        self.ownerColumn = ownerColumn
    }

    func add(_ row: PostgresRow) {
        let row = PostgresStoreRow(row.makeRandomAccess())
        guard let node = readers.node(row, now: now) else { return }
        if ownerColumn { owners.append(row.integer(0)) }
        nodes.append(node)
    }
}

/// A PostgreSQL row, its cells decoded straight into Sift's values.
struct PostgresStoreRow: StoreRow {
    let row: PostgresRandomAccessRow

    init(_ row: PostgresRandomAccessRow) { self.row = row }

    func value(_ index: Int, as type: AttributeType) -> PredicateValue {
        guard index < row.count else { return .null }
        let cell = row[index]
        guard cell.bytes != nil else { return .null }
        switch (type, cell.dataType) {
        case (.integer16, .int8), (.integer32, .int8), (.integer64, .int8):
            if let value = try? cell.decode(Int64.self) { return .int(value) }
        case (.double, .float8), (.float, .float8), (.decimal, .float8):
            if let value = try? cell.decode(Double.self) { return .double(value) }
        case (.date, .float8):
            if let value = try? cell.decode(Double.self) { return .date(Date(timeIntervalSinceReferenceDate: value)) }
        case (.boolean, .int8):
            if let value = try? cell.decode(Int64.self) { return .bool(value != 0) }
        case (.string, .text), (.uri, .text):
            if let value = try? cell.decode(String.self) { return .string(value) }
        default:
            break
        }
        return (try? PostgresDatabase.value(cell)).map { PredicateValue(sqlValue: $0, type: type) } ?? .null
    }

    func integer(_ index: Int) -> Int64 {
        guard index < row.count else { return 0 }
        let cell = row[index]
        guard cell.bytes != nil else { return 0 }
        if cell.dataType == .int8, let value = try? cell.decode(Int64.self) { return value }
        return (try? PostgresDatabase.value(cell)).map { ValueRow([$0]).integer(0) } ?? 0
    }

    func isNull(_ index: Int) -> Bool {
        index >= row.count || row[index].bytes == nil
    }
}
