// Store stage: how the SQLite store runs the statements of a fetch — rows
// read straight from the statement into row-cache nodes. What to run, and
// what memory does, is `SQLStoreBackend`'s.

import Foundation
import Sift

extension SQLiteStore: SQLStoreBackend, BatchFetchingStore {
    /// "SQLite", for plans and messages.
    public var databaseName: String { "SQLite" }
    package var location: String { path }

    /// The value transformers of the store's transformable attributes.
    public var transformers: ValueTransformerRegistry? { valueTransformers }

    package func fetchNodes(_ query: SQLQuery, entity: Entity, ownerColumn: Bool,
                            owner: ((Int64) -> Void)?) throws(StoreError) -> [RowNode] {
        let now = Date().timeIntervalSinceReferenceDate
        let readers = try read(query, entity: entity, ownerColumn: ownerColumn, owner: owner, now: now)
        return rowCache.storeFetched(readers.nodes(now: now))
    }

    /// Runs a row query of `entity` into readers: the rows go into one
    /// batch per entity, by column.
    private func read(_ query: SQLQuery, entity: Entity, ownerColumn: Bool, owner: ((Int64) -> Void)?,
                      now: Double) throws(StoreError) -> RowReaders {
        let readers = RowReaders(schema.rowLayout(entity), base: ownerColumn ? 1 : 0, externalData: externalData,
                                 transformers: valueTransformers)
        do {
            try withConnection { connection in
                try connection.forEachRow(query.sql, query.bindings) { row in
                    if readers.add(row, now: now), let owner { owner(row.integer(0)) }
                    return true
                }
            }
        } catch {
            throw StoreError(error, path: path, sql: query.sql)
        }
        return readers
    }

    package func fetchedRows(for fetch: CompiledFetch) throws(StoreError) -> FetchedRows {
        let plan = try sharedPlan(for: fetch)
        if plan.value.needsMemory { return .nodes(try rowsWithResidual(fetch, plan.value)) }
        let now = Date().timeIntervalSinceReferenceDate
        let readers = try read(try statement(fetch, columns: .rows), entity: fetch.entity, ownerColumn: false, owner: nil, now: now)
        // Rows the cache keeps as their batches (a table it holds nothing of) need no node each.
        if let batches = readers.batches(now: now) {
            let count = batches.reduce(0) { $0 &+ $1.count }
            if rowCache.storeFetched(batches: batches, count: count) { return .batches(batches, count: count) }
            return .nodes(rowCache.storeFetched(RowNode.nodes(of: batches)))
        }
        return .nodes(rowCache.storeFetched(readers.nodes(now: now)))
    }

    package func fetchObjectIDs(_ query: SQLQuery, entity: Entity) throws(StoreError) -> [ObjectID] {
        let layout = schema.rowLayout(entity)
        guard layout.entityColumn != nil else {
            return try fetchIntegers(query, columns: 1).map { ObjectID(entity: entity, primaryKey: $0) }
        }
        var result: [ObjectID] = []
        do {
            try withConnection { connection in
                try connection.forEachRow(query.sql, query.bindings) { row in
                    if let member = layout.member(number: row.integer(1)) {
                        result.append(ObjectID(entity: member.entity, root: member.root, primaryKey: row.integer(0)))
                    }
                    return true
                }
            }
        } catch {
            throw StoreError(error, path: path, sql: query.sql)
        }
        return result
    }

    package func fetchIntegers(_ query: SQLQuery, columns: Int) throws(StoreError) -> [Int64] {
        var result: [Int64] = []
        do {
            try withConnection { connection in
                try connection.forEachRow(query.sql, query.bindings) { row in
                    for column in 0..<columns { result.append(row.integer(column)) }
                    return true
                }
            }
        } catch {
            throw StoreError(error, path: path, sql: query.sql)
        }
        return result
    }

    package func fetchValues(_ query: SQLQuery, types: [AttributeType]) throws(StoreError) -> [[PredicateValue]] {
        var result: [[PredicateValue]] = []
        do {
            try withConnection { connection in
                try connection.forEachRow(query.sql, query.bindings) { row in
                    result.append(types.indices.map { row.value($0, as: types[$0]) })
                    return true
                }
            }
        } catch {
            throw StoreError(error, path: path, sql: query.sql)
        }
        return result
    }

    package func refuses(_ select: SQLSelect) -> String? {
        let query = schema.render(.select(select))
        do {
            try withConnection { try $0.check(query.sql) }
            return nil
        } catch let error as SQLiteError where error.isLimit {
            return "SQLite's limits (\(error.message))"
        } catch {
            return nil
        }
    }

    /// SQLite's query plan for a query, one line per step.
    ///
    /// - Parameter query: The statement, with its bindings.
    /// - Returns: The steps of SQLite's `EXPLAIN QUERY PLAN`, one line each.
    /// - Throws: `StoreError` when SQLite cannot prepare or run the statement (`.sqlite`, `.locked`, …, with
    ///   the SQL).
    public func queryPlan(_ query: SQLQuery) throws(StoreError) -> [String] {
        do {
            return try withConnection { connection in
                try connection.query(SQLiteDialect().explainQueryPlan(query.sql), query.bindings).map { row in
                    if case .text(let detail) = row[3] { return detail }
                    return row.map(\.description).joined(separator: " ")
                }
            }
        } catch {
            throw StoreError(error, path: path, sql: query.sql)
        }
    }
}
