// Store stage: how the SQLite store answers a context's fetches — SQL for
// what SQL can run, memory for a plan's residual; rows by key and links for
// faults and prefetching, with the statements the SQL stage builds.

import Foundation
import Sift

extension SQLiteStore: StoreBackend {
    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (StoreChanges) -> Void) -> StoreObservation {
        let token = StoreObservation(observers: observers)
        observers.handlers.withLock { $0[token.id] = observer }
        return token
    }

    func rows(for request: FetchRequest) throws(StoreError) -> [RowNode] {
        let entity = try self.entity(request.entityName)
        let plan = try self.plan(request)
        if plan.residual != nil { return try rowsWithResidual(request, plan, entity) }
        return try fetchNodes(plan.query(for: request, columns: .rows), entity: entity)
    }

    func keys(for request: FetchRequest) throws(StoreError) -> [ObjectID] {
        let entity = try self.entity(request.entityName)
        let plan = try self.plan(request)
        if plan.residual != nil { return try rowsWithResidual(request, plan, entity).map(\.id) }
        return try fetchObjectIDs(plan.query(for: request, columns: .identifiers), entity: entity)
    }

    func count(for request: FetchRequest) throws(StoreError) -> Int {
        let entity = try self.entity(request.entityName)
        var countRequest = request
        countRequest.sortDescriptors = []
        let plan = try self.plan(countRequest)
        if plan.residual != nil { return try rowsWithResidual(countRequest, plan, entity).count }
        let whole = request.fetchLimit == nil && request.fetchOffset == 0
        let query = plan.query(for: countRequest, columns: whole ? .count : .identifiers)
        if whole { return Int(try fetchIntegers(query).first ?? 0) }
        return try fetchObjectIDs(query, entity: entity).count
    }

    /// Runs a plan with a residual: SQL returns the candidate rows in order,
    /// the relationships the residual follows are loaded (one statement per
    /// key path), memory filters, then offset and limit apply.
    func rowsWithResidual(_ request: FetchRequest, _ plan: FetchPlan, _ entity: Entity) throws(StoreError) -> [RowNode] {
        guard let residual = plan.residual else { return [] }
        let candidates = try fetchNodes(plan.query(for: request, columns: .rows), entity: entity)
        for path in RelationshipPaths.of(residual).sorted() {
            try loadPath(path, from: candidates, entity: entity)
        }
        let domain = RowNodeDomain(cache: rowCache)
        let filter = MemoryPredicate(residual, domain: domain)
        let current = candidates.compactMap { domain.snapshot.node(entity: entity.index, primaryKey: $0.id.primaryKey) }
        let matching = try StoreError.evaluating { () throws(EvaluationError) in try filter.filter(current) }
        return request.page(matching)
    }

    func rows(_ entity: Entity, keys: [Int64]) throws(StoreError) -> [RowNode] {
        try fetchNodes(schema.selectRows(entity, keys: keys), entity: entity)
    }

    func links(_ relationship: Relationship, of owners: [Int64], entity: Entity,
               loadingRows: Bool) throws(StoreError) -> [Int64: [Int64]] {
        guard let destination = model.entity(named: relationship.destination),
              let query = schema.selectLinks(relationship, in: entity, owners: owners, withRows: loadingRows) else {
            throw .unknownRelationship(relationship.name, entity: entity.name)
        }
        var links: [Int64: [Int64]] = [:]
        for owner in owners { links[owner] = [] }
        if loadingRows {
            var owner: [Int64] = []
            let fetched = try fetchNodes(query, entity: destination, extraLeadingColumns: 1) { row in owner.append(row.integer(0)) }
            for (node, ownerKey) in zip(fetched, owner) { links[ownerKey, default: []].append(node.id.primaryKey) }
        } else {
            var pairs: [(Int64, Int64)] = []
            do {
                try withConnection { connection in
                    try connection.forEachRow(query.sql, query.bindings) { row in
                        pairs.append((row.integer(0), row.integer(1)))
                        return true
                    }
                }
            } catch {
                throw StoreError(error, path: path, sql: query.sql)
            }
            for (owner, target) in pairs { links[owner, default: []].append(target) }
        }
        return links
    }
}

extension SQLiteStore {
    // MARK: Reading rows

    var transformers: ValueTransformerRegistry? { valueTransformers }


    /// Runs a `.rows` query of `entity` and returns its rows as nodes, stored
    /// in the row cache.
    func fetchNodes(_ query: SQLQuery, entity: Entity, extraLeadingColumns: Int = 0,
                    leading: ((SQLiteStatement) -> Void)? = nil) throws(StoreError) -> [RowNode] {
        let now = Date().timeIntervalSinceReferenceDate
        let layout = schema.rowLayout(entity)
        let base = extraLeadingColumns
        // Each entity a row may be: how its columns are read. Every node
        // starts with its to-many relationships not loaded: one shared array.
        let readers = layout.members.map { RowReader($0, base: base, externalData: externalData, transformers: valueTransformers) }
        var nodes: [RowNode] = []
        do {
            try withConnection { connection in
                try connection.forEachRow(query.sql, query.bindings) { row in
                    if let leading { leading(row) }
                    var which = 0
                    if let column = layout.entityColumn {
                        let number = row.integer(base + column)
                        guard let found = readers.firstIndex(where: { $0.member.number == number }) else {
                            // A row of an entity the model does not know: not an object of this fetch.
                            return true
                        }
                        which = found
                    }
                    nodes.append(readers[which].node(row, primaryKey: row.integer(base), version: row.integer(base + 1), now: now))
                    return true
                }
            }
        } catch {
            throw StoreError(error, path: path, sql: query.sql)
        }
        return rowCache.storeFetched(nodes)
    }

    /// Runs an `.identifiers` query of `entity`: each row's object ID, of
    /// the row's own entity.
    func fetchObjectIDs(_ query: SQLQuery, entity: Entity) throws(StoreError) -> [ObjectID] {
        let layout = schema.rowLayout(entity)
        guard layout.entityColumn != nil else {
            return try fetchIntegers(query).map { ObjectID(entity: entity, primaryKey: $0) }
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

    /// Runs a query whose first column is an integer and returns that column.
    func fetchIntegers(_ query: SQLQuery) throws(StoreError) -> [Int64] {
        var result: [Int64] = []
        do {
            try withConnection { connection in
                try connection.forEachRow(query.sql, query.bindings) { row in
                    result.append(row.integer(0))
                    return true
                }
            }
        } catch {
            throw StoreError(error, path: path, sql: query.sql)
        }
        return result
    }

    /// SQLite's query plan for a query, one line per step.
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
