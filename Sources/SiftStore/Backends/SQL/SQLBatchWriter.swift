// Store stage: batch changes in SQL, written once for every SQL store. A
// batch update is the one UPDATE the SQL stage writes (`updateRows`); the
// rows it returns are checked (a required attribute left nil, an integer
// outside its attribute's range roll the transaction back). A batch delete
// reads the rows its predicate selects, works out its delete rules by
// reading relationships (`DeletionPlan`), then deletes each table's rows
// and their join-table links and clears the to-one keys nullify rules name
// — in one transaction, without loading any object. A predicate or value
// that needs memory sends the change to the memory path.

import Foundation
import Sift

/// Reads relationships with SQL, inside a batch delete's transaction.
struct SQLDeletionReader: DeletionReader {
    let executor: any SQLExecutor
    let schema: SQLSchema

    private func integerPairs(_ query: SQLQuery) throws -> [(Int64, Int64)] {
        try executor.rows(query.sql, query.bindings).compactMap { row in
            guard row.count >= 2, case .integer(let a) = row[0], case .integer(let b) = row[1] else { return nil }
            return (a, b)
        }
    }

    func pairs(_ relationship: Relationship, of entity: Entity, owners: [Int64]) throws -> [(owner: Int64, member: Int64)] {
        let query = relationship.isToMany
            ? schema.selectLinks(relationship, in: entity, owners: owners, withRows: false)
            : schema.selectToOneKeys(relationship, of: entity, keys: owners)
        guard let query else { return [] }
        return try integerPairs(query).map { (owner: $0.0, member: $0.1) }
    }

    func entities(of keys: [Int64], in entity: Entity) throws -> [Int64: Int] {
        var result: [Int64: Int] = [:]
        for (key, number) in try integerPairs(schema.selectEntityNumbers(entity, keys: keys)) {
            result[key] = schema.entity(number: number)?.index
        }
        return result
    }
}

extension DeletionPlan {
    /// Runs the plan in SQL: each table's rows deleted by one statement
    /// (but those in `done`, deleted already), with their join-table links,
    /// then the to-one keys it clears.
    ///
    /// - Returns: What it changed: the rows deleted, those cleared and those
    ///   whose to-many relationships lost members.
    func run(_ executor: any SQLExecutor, schema: SQLSchema, model: DataModel, except done: Set<ObjectID> = []) throws
        -> StoreChanges
    {
        let deleted = self.deleted.filter { !done.contains($0) }
        var changes = StoreChanges(deleted: Set(deleted))
        try executor.history?.willDelete(deleted, executor)
        for (root, ids) in Dictionary(grouping: deleted, by: \.root).sorted(by: { $0.key < $1.key }) {
            let query = schema.deleteRows(model.entities[root], keys: ids.map(\.primaryKey))
            _ = try executor.rows(query.sql, query.bindings)
        }
        for (index, ids) in Dictionary(grouping: deleted, by: \.entity).sorted(by: { $0.key < $1.key }) {
            let deletedEntity = model.entities[index]
            for relationship in deletedEntity.relationships where relationship.isToMany {
                if let query = schema.deleteLinks(relationship, in: deletedEntity, owners: ids.map(\.primaryKey)) {
                    _ = try executor.rows(query.sql, query.bindings)
                }
            }
        }
        changes.updated = try Self.clear(cleared, executor, schema: schema)
        changes.updated.formUnion(touched.filter { !self.deleted.contains($0) })
        if let history = executor.history {
            for id in deleted { history.deleted(id) }
            // A row that lost members of a to-many relationship: the relationships to the entities deleted from.
            var deletedEntities: Set<String> = []
            for index in Set(deleted.map(\.entity)) {
                var entity: Entity? = model.entities[index]
                while let current = entity {
                    deletedEntities.insert(current.name)
                    entity = current.superentity.flatMap { model.entity(named: $0) }
                }
            }
            for id in touched where !self.deleted.contains(id) {
                history.updated(id, model.entities[id.entity].relationships.filter {
                    $0.isToMany && deletedEntities.contains($0.destination)
                }.map(\.name))
            }
        }
        return changes
    }

    /// Clears to-one keys in SQL, each row's version incremented.
    ///
    /// - Returns: The rows changed.
    static func clear(_ cleared: [(entity: Entity, relationship: Relationship, rows: [ObjectID], targets: [Int64])],
                      _ executor: any SQLExecutor, schema: SQLSchema) throws -> Set<ObjectID> {
        var changed: Set<ObjectID> = []
        for clear in cleared {
            let byKey = Dictionary(clear.rows.map { ($0.primaryKey, $0) }, uniquingKeysWith: { a, _ in a })
            let query = schema.clearToOne(clear.relationship, of: clear.entity, keys: Array(byKey.keys).sorted(),
                                          pointingAt: clear.targets)
            for row in try executor.rows(query.sql, query.bindings) {
                if case .integer(let key)? = row.first, let id = byKey[key] {
                    changed.insert(id)
                    executor.history?.updated(id, [clear.relationship.name])
                }
            }
        }
        return changed
    }
}

extension SQLStoreBackend {
    /// A batch update as one UPDATE, when SQL can run its predicate and
    /// every value; in memory otherwise.
    public func batchUpdate(_ update: BoundBatchUpdate) throws(StoreError) -> BatchResult {
        let plan = try self.plan(for: update.fetch)
        guard plan.residual == nil,
              let query = try? lowering.updateRows(update.entity.name, setting: update.assignments, where: update.fetch.predicate)
        else { return try batchUpdateInMemory(update) }
        let schema = self.schema
        var changes = StoreChanges()
        let ids: [ObjectID] = try writeTransaction { executor in
            var ids: [ObjectID] = []
            var failures: [SaveValidationFailure] = []
            // Rows that would set a required attribute to nil: refused before the database refuses them.
            if let check = query.nilCheck {
                let all = Array(update.assignments.indices)
                for row in try executor.rows(check.sql, check.bindings) {
                    guard row.count == all.count + 2, case .integer(let key) = row[0],
                          case .integer(let number) = row[1], let entity = schema.entity(number: number) else { continue }
                    failures += checkAssigned(row.dropFirst(2).map(Self.checkedValue), all,
                                              of: ObjectID(entity: entity, primaryKey: key), update)
                }
                guard failures.isEmpty else { throw StoreError.validation(Array(failures.prefix(20))) }
            }
            let rows = try executor.rows(query.update.sql, query.update.bindings)
            ids.reserveCapacity(rows.count)
            let first = query.returnsEntity ? 2 : 1
            for row in rows {
                guard row.count == query.returned.count + first, case .integer(let key) = row[0] else { continue }
                var entity = update.entity
                if query.returnsEntity {
                    guard case .integer(let number) = row[1], let numbered = schema.entity(number: number) else { continue }
                    entity = numbered
                }
                let id = ObjectID(entity: entity, primaryKey: key)
                if !query.returned.isEmpty {
                    failures += checkAssigned(row.dropFirst(first).map(Self.checkedValue), query.returned, of: id, update)
                }
                ids.append(id)
            }
            guard failures.isEmpty else { throw StoreError.validation(Array(failures.prefix(20))) }
            ids.sort { $0.primaryKey < $1.primaryKey }
            if let history = executor.history {
                let names = update.assignments.map(\.attribute.name)
                for id in ids { history.updated(id, names) }
            }
            changes = StoreChanges(updated: Set(ids))
            return (ids, changes)
        }
        rowCache.remove(ids)
        return BatchResult(objectIDs: ids, changes: changes, ranInSQL: true)
    }

    /// A value an UPDATE returned, as far as `checkAssigned` looks at it.
    private static func checkedValue(_ value: SQLValue) -> PredicateValue {
        switch value {
        case .null: .null
        case .integer(let integer): .int(integer)
        case .real(let real): .double(real)
        case .text(let text): .string(text)
        case .blob(let data): .data(data)
        case .array: .null
        }
    }

    /// A batch delete in SQL, when SQL can run its predicate; in memory
    /// otherwise.
    public func batchDelete(_ request: BatchDeleteRequest, entity: Entity) throws(StoreError) -> BatchResult {
        var selection: SQLQuery?
        if let ids = request.objectIDs {
            try checkObjectIDs(ids, of: entity)
        } else {
            var fetch = FetchRequest(entityName: entity.name)
            fetch.predicate = request.predicate
            let compiled = try compile(fetch)
            guard !(try plan(for: compiled)).needsMemory else { return try batchDeleteInMemory(request, entity: entity) }
            selection = try statement(compiled, columns: .identifiers)
        }
        let schema = self.schema
        let model = self.model
        let result: BatchResult = try writeTransaction { executor in
            let reader = SQLDeletionReader(executor: executor, schema: schema)
            var start: [ObjectID] = []
            if let selection {
                for row in try executor.rows(selection.sql, selection.bindings) {
                    guard case .integer(let key)? = row.first else { continue }
                    var member = entity
                    if row.count > 1, case .integer(let number) = row[1], let numbered = schema.entity(number: number) { member = numbered }
                    start.append(ObjectID(entity: member, primaryKey: key))
                }
            } else {
                for (root, group) in Dictionary(grouping: request.objectIDs ?? [], by: \.root).sorted(by: { $0.key < $1.key }) {
                    for (key, index) in try reader.entities(of: group.map(\.primaryKey), in: model.entities[root])
                    where model.isEntity(at: index, kindOf: entity.index) {
                        start.append(ObjectID(entity: model.entities[index], primaryKey: key))
                    }
                }
            }
            let plan = try DeletionPlan.make(deleting: start, model: model, reader: reader)
            let changes = try plan.run(executor, schema: schema, model: model)
            let selected = start.sorted { $0.primaryKey < $1.primaryKey }
            return (BatchResult(objectIDs: selected, changes: changes, ranInSQL: true), changes)
        }
        rowCache.remove(result.changes.deleted)
        rowCache.remove(result.changes.updated)
        return result
    }
}
