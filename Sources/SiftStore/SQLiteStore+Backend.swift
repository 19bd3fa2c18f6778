// Store stage: how the SQLite store answers a context — SQL for what SQL can
// run, memory for a plan's residual, and one transaction per save.

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
        return try fetchNodes(try sqlQuery(for: request, plan: plan, columns: .rows), entity: entity)
    }

    func keys(for request: FetchRequest) throws(StoreError) -> [Int64] {
        let entity = try self.entity(request.entityName)
        let plan = try self.plan(request)
        if plan.residual != nil { return try rowsWithResidual(request, plan, entity).map(\.id.primaryKey) }
        return try fetchIntegers(try sqlQuery(for: request, plan: plan, columns: .identifiers))
    }

    func count(for request: FetchRequest) throws(StoreError) -> Int {
        let entity = try self.entity(request.entityName)
        var countRequest = request
        countRequest.sortDescriptors = []
        let plan = try self.plan(countRequest)
        if plan.residual != nil { return try rowsWithResidual(countRequest, plan, entity).count }
        let whole = request.fetchLimit == nil && request.fetchOffset == 0
        let query = try sqlQuery(for: countRequest, plan: plan, columns: whole ? .count : .identifiers)
        if whole { return Int(try fetchIntegers(query).first ?? 0) }
        return try fetchIntegers(query).count
    }

    /// Runs a plan with a residual: SQL returns the candidate rows in order,
    /// the relationships the residual follows are loaded (one statement per
    /// key path), memory filters, then offset and limit apply.
    func rowsWithResidual(_ request: FetchRequest, _ plan: FetchPlan, _ entity: Entity) throws(StoreError) -> [RowNode] {
        guard let residual = plan.residual else { return [] }
        let candidates = try fetchNodes(try sqlQuery(for: request, plan: plan, columns: .rows), entity: entity)
        for path in RelationshipPaths.of(residual).sorted() {
            try loadPath(path, from: candidates, entity: entity)
        }
        let domain = RowNodeDomain(cache: rowCache)
        let filter = MemoryPredicate(residual, domain: domain)
        let current = candidates.compactMap { domain.snapshot.node(entity: entity.index, primaryKey: $0.id.primaryKey) }
        var matching = try StoreError.evaluating { () throws(EvaluationError) in try filter.filter(current) }
        if request.fetchOffset > 0 { matching = Array(matching.dropFirst(request.fetchOffset)) }
        if let limit = request.fetchLimit { matching = Array(matching.prefix(limit)) }
        return matching
    }

    func rows(_ entity: Entity, keys: [Int64]) throws(StoreError) -> [RowNode] {
        let references = keys.map { PredicateValue.object(ObjectReference(entity: entity.name, id: $0)) }
        let predicate = BoundPredicate.comparison(BoundComparison(
            BoundExpression(.evaluatedObject, type: .object(entity.name)), .in,
            .constant(.array(references), type: .collection(.object(entity.name)))))
        let query: SQLQuery
        do {
            query = try lowering.select(entity.name, where: predicate)
        } catch {
            throw .notExpressibleInSQL(error, range: nil, text: nil)
        }
        return try fetchNodes(query, entity: entity)
    }

    func links(_ relationship: Relationship, of owners: [Int64], entity: Entity,
               loadingRows: Bool) throws(StoreError) -> [Int64: [Int64]] {
        let q = SQLSchema.quote
        let destination = model.entity(named: relationship.destination)!
        let json = SQLValue.text("[" + owners.map(String.init).joined(separator: ",") + "]")
        var links: [Int64: [Int64]] = [:]
        for owner in owners { links[owner] = [] }
        func rowsSQL(owner: String, from: String, where column: String) -> String {
            let toOne = destination.relationships.filter { !$0.isToMany }.sorted { $0.slot < $1.slot }.map(\.name)
            let columns = ([SQLSchema.primaryKey, SQLSchema.version] + destination.attributes.map(\.name) + toOne)
                .map { "t0.\(q($0))" }
            return "SELECT \(owner), \(columns.joined(separator: ", ")) FROM \(from) WHERE \(column) IN (SELECT value FROM json_each(?1)) ORDER BY t0.\"Z_PK\""
        }
        let sql: String
        switch schema.storage(of: relationship, in: entity) {
        case .inverseForeignKey(let table, let column):
            sql = loadingRows
                ? rowsSQL(owner: "t0.\(q(column))", from: "\(q(table)) AS t0", where: "t0.\(q(column))")
                : "SELECT t0.\(q(column)), t0.\"Z_PK\" FROM \(q(table)) AS t0 WHERE t0.\(q(column)) IN (SELECT value FROM json_each(?1)) ORDER BY t0.\"Z_PK\""
        case .joinTable(let table, let source, let target):
            sql = loadingRows
                ? rowsSQL(owner: "j.\(q(source))",
                          from: "\(q(table)) AS j JOIN \(q(schema.table(destination))) AS t0 ON t0.\"Z_PK\" = j.\(q(target))",
                          where: "j.\(q(source))")
                : "SELECT j.\(q(source)), j.\(q(target)) FROM \(q(table)) AS j WHERE j.\(q(source)) IN (SELECT value FROM json_each(?1)) ORDER BY j.\(q(target))"
        case .foreignKey:
            throw .unknownRelationship(relationship.name, entity: entity.name)
        }
        if loadingRows {
            var owner: [Int64] = []
            let fetched = try fetchNodes(SQLQuery(sql: sql, bindings: [json]), entity: destination,
                                         extraLeadingColumns: 1) { row in owner.append(row.integer(0)) }
            for (node, ownerKey) in zip(fetched, owner) { links[ownerKey, default: []].append(node.id.primaryKey) }
        } else {
            var pairs: [(Int64, Int64)] = []
            do {
                try withConnection { connection in
                    try connection.forEachRow(sql, [json]) { row in
                        pairs.append((row.integer(0), row.integer(1)))
                        return true
                    }
                }
            } catch {
                throw StoreError(error, path: path, sql: sql)
            }
            for (owner, target) in pairs { links[owner, default: []].append(target) }
        }
        return links
    }

    func commit(_ context: ObjectContext, inserted: [ManagedObject], updated: [ManagedObject], deleted: [ManagedObject],
                rows: [ObjectID: (values: [PredicateValue], toOne: [Int64?])]) throws(StoreError) -> ObjectContext.SaveOutcome {
        do {
            return try withConnection { connection in
                try connection.transaction {
                    try context.write(connection, self, inserted: inserted, updated: updated, deleted: deleted, rows: rows)
                }
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }
}
