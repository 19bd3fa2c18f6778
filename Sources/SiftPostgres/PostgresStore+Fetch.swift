// PostgreSQL: how the store runs the statements of a fetch — each on a
// connection of the pool, its rows read through the schema's row layout
// into row-cache nodes. What to run, and what memory does, is
// `SQLStoreBackend`'s, as on SQLite.

import Foundation
import PostgresNIO
import Sift
import SiftStore

extension PostgresStore: SQLStoreBackend {
    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (StoreChanges) -> Void) -> StoreObservation {
        let token = StoreObservation(observers: observers)
        observers.handlers.withLock { $0[token.id] = observer }
        return token
    }

    package var transformers: ValueTransformerRegistry? { valueTransformers }

    package func fetchNodes(_ query: SQLQuery, entity: Entity, ownerColumn: Bool,
                            owner: ((Int64) -> Void)?) throws(StoreError) -> [RowNode] {
        let rows = try run(query)
        let now = Date().timeIntervalSinceReferenceDate
        let layout = schema.rowLayout(entity)
        let base = ownerColumn ? 1 : 0
        let readers = layout.members.map { RowReader($0, base: base, externalData: nil, transformers: valueTransformers) }
        var nodes: [RowNode] = []
        nodes.reserveCapacity(rows.count)
        for columns in rows {
            let row = ValueRow(columns)
            var which = 0
            if let column = layout.entityColumn {
                let number = row.integer(base + column)
                // A row of an entity the model does not know: not an object of this fetch.
                guard let found = readers.firstIndex(where: { $0.member.number == number }) else { continue }
                which = found
            }
            if let owner { owner(row.integer(0)) }
            nodes.append(readers[which].node(row, primaryKey: row.integer(base), version: row.integer(base + 1), now: now))
        }
        return rowCache.storeFetched(nodes)
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
    public func plan(_ request: FetchRequest) throws(StoreError) -> FetchPlan {
        try makePlan(request)
    }

    /// A request's predicate, bound to the store's model and optimized.
    public func bind(_ request: FetchRequest) throws(StoreError) -> BoundPredicate? {
        try boundPredicate(request)
    }

    /// The SQL a request runs when PostgreSQL runs all of its predicate; an
    /// error naming the first construct it cannot express otherwise.
    public func sqlQuery(for request: FetchRequest, columns: SQLColumns = .rows) throws(StoreError) -> SQLQuery {
        try makeSQLQuery(for: request, columns: columns)
    }

    /// PostgreSQL's plan for a query (`EXPLAIN`), one line per step.
    public func queryPlan(_ query: SQLQuery) throws(StoreError) -> [String] {
        try run(ServerCatalog.explain(query)).map { row in
            if case .text(let line)? = row.first { return line }
            return row.map(\.description).joined(separator: " ")
        }
    }
}

extension ObjectContext {
    /// A context on a PostgreSQL store.
    public convenience init(store: PostgresStore) {
        self.init(backend: store)
    }
}
