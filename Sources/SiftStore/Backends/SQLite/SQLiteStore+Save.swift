// Store stage: how the SQLite store applies a save request — one
// transaction; permanent keys after each table's largest; every UPDATE and
// DELETE checked against the version the context read (`WHERE key = ? AND
// version = ?`). A row that moved is a conflict: the transaction is rolled
// back, and the conflicts go back with the rows as the store has them. After
// a commit the row cache holds the written rows, then observers are told.

import Foundation
import Sift

/// Rolls a save's transaction back when it found conflicts.
private struct ConflictsFound: Error {
    var conflicts: [RowConflict]
}

extension SQLiteStore {
    func apply(_ request: SaveRequest) throws(StoreError) -> SaveResponse {
        if let writesRefused { throw .cannotWrite(path: path, reason: writesRefused) }
        var result = SaveResult()
        do {
            try withConnection { connection in
                try connection.transaction {
                    result = try write(request, connection)
                }
            }
        } catch let found as ConflictsFound {
            return .conflicts(found.conflicts)
        } catch {
            throw StoreError(error, path: path)
        }
        // Committed: the row cache holds what was written.
        rowCache.store(result.nodes.values)
        rowCache.remove(result.changes.deleted)
        return .committed(result)
    }

    private func write(_ request: SaveRequest, _ connection: SQLiteConnection) throws -> SaveResult {
        var result = SaveResult()
        let now = Date().timeIntervalSinceReferenceDate

        // Permanent keys for inserted objects, after each table's largest
        // (an entity and its subentities share their root's table and keys).
        var next: [Int: Int64] = [:]
        for insert in request.inserts where insert.id.primaryKey < 0 {
            let root = model.entities[insert.id.root]
            if next[root.index] == nil {
                // After the largest key handed out (Core Data's record) and the largest in the table.
                var largest: Int64 = 0
                for query in [schema.selectKeyMaximum(root), schema.selectLargestKey(root)] {
                    if case .integer(let m)? = try connection.query(query).first?.first { largest = max(largest, m) }
                }
                next[root.index] = largest
            }
            guard next[root.index]! < Int64.max else { throw StoreError.keysExhausted(entity: root.name) }
            next[root.index]! += 1
            result.keys[insert.id.primaryKey] = next[root.index]!
        }
        // The largest keys handed out, recorded as Core Data records them.
        for (index, largest) in next {
            try connection.run(schema.updateKeyMaximum(model.entities[index], to: largest))
        }
        let keys = result.keys
        func resolve(_ key: Int64?) -> Int64? { SaveRequest.resolve(key, keys) }
        func permanent(_ id: ObjectID) -> ObjectID { ObjectID(entity: id.entity, root: id.root, primaryKey: resolve(id.primaryKey)!) }

        // The entity number of each inserted row, for the to-one columns that
        // say which entity a key points at; other rows' are read when needed.
        var insertedEntities: [ObjectID: Int64] = [:]
        for insert in request.inserts {
            insertedEntities[permanent(insert.id)] = Int64(schema.entityNumber(model.entities[insert.id.entity]))
        }
        func targetEntity(of entity: Entity) -> (Int, Int64) -> Int64? {
            { slot, key in
                guard let relationship = entity.relationships.first(where: { !$0.isToMany && $0.slot == slot }),
                      let destination = self.model.entity(named: relationship.destination) else { return nil }
                let id = ObjectID(entity: destination, primaryKey: key)
                if let number = insertedEntities[id] { return number }
                if let node = self.rowCache.node(id) { return Int64(self.schema.entityNumber(self.model.entities[node.id.entity])) }
                let query = self.schema.selectEntityNumber(destination)
                if case .integer(let number)? = try? connection.query(query.sql, [.integer(key)]).first?.first { return number }
                return nil
            }
        }

        // One closure per entity, not one per row.
        var targetClosures: [Int: (Int, Int64) -> Int64?] = [:]
        func targetEntities(_ entity: Entity) -> (Int, Int64) -> Int64? {
            if let closure = targetClosures[entity.index] { return closure }
            let closure = targetEntity(of: entity)
            targetClosures[entity.index] = closure
            return closure
        }
        // Whether any value needs a value transformer: most saves need none.
        let hasTransformers = model.entities.contains { entity in
            entity.attributes.contains { $0.type == .transformable && $0.valueTransformerName != nil }
        }

        var statements: [String: SQLiteStatement] = [:]
        func statement(_ query: SQLQuery) throws -> SQLiteStatement {
            if let prepared = statements[query.sql] { return prepared }
            let prepared = try connection.statement(query.sql)
            statements[query.sql] = prepared
            return prepared
        }

        // Each statement is built once per save: one INSERT per entity, one
        // UPDATE per entity and set of changed columns.
        var rowInserts: [Int: (RowInsert, SQLiteStatement)] = [:]
        var rowUpdates: [[Int]: (RowUpdate, SQLiteStatement)] = [:]
        for insert in request.inserts {
            let entity = model.entities[insert.id.entity]
            let id = permanent(insert.id)
            if rowInserts[entity.index] == nil {
                let row = schema.insertRow(entity)
                rowInserts[entity.index] = (row, try statement(row.query))
            }
            let (row, prepared) = rowInserts[entity.index]!
            let toOne = insert.toOne.map(resolve)
            try connection.run(prepared, row.bindings(key: id.primaryKey, version: 1, values: try storedValues(insert.values, of: entity, hasTransformers),
                                                      toOne: toOne,
                                                      targetEntity: targetEntities(entity)))
            result.nodes[insert.id] = RowNode(id: id, version: 1, fetchTimestamp: now, values: insert.values, toOne: toOne,
                                              toMany: Array(repeating: nil, count: entity.toManyCount))
            result.changes.inserted.insert(id)
        }

        var conflicts: [RowConflict] = []
        for update in request.updates {
            let entity = model.entities[update.id.entity]
            let shape = [entity.index] + update.attributeSlots + [-1] + update.toOneSlots
            if rowUpdates[shape] == nil {
                let row = schema.updateRow(
                    entity, attributes: update.attributeSlots.map { entity.attributes[$0] },
                    toOne: update.toOneSlots.compactMap { slot in entity.relationships.first { !$0.isToMany && $0.slot == slot } })
                rowUpdates[shape] = (row, try statement(row.query))
            }
            let (row, prepared) = rowUpdates[shape]!
            let toOne = update.toOne.map(resolve)
            try connection.run(prepared, row.bindings(values: try storedValues(update.values, of: entity, hasTransformers), toOne: toOne,
                                                      key: update.id.primaryKey,
                                                      expectedVersion: update.expectedVersion,
                                                      targetEntity: targetEntities(entity)))
            guard connection.changes == 1 else {
                conflicts.append(RowConflict(id: update.id, current: try storeRow(update.id, connection)))
                continue
            }
            result.nodes[update.id] = RowNode(id: update.id, version: update.expectedVersion &+ 1, fetchTimestamp: now,
                                              values: update.values, toOne: toOne,
                                              toMany: Array(repeating: nil, count: entity.toManyCount))
            result.changes.updated.insert(update.id)
        }

        // Links before deletes: a deleted row takes every link to it along,
        // even one this save added.
        for change in request.links {
            let entity = model.entities[change.owner.entity]
            guard let insert = schema.insertLink(change.relationship, in: entity),
                  let remove = schema.deleteLink(change.relationship, in: entity) else { continue }
            let owner = resolve(change.owner.primaryKey)!
            for added in change.added { try connection.run(statement(insert), [.integer(owner), .integer(resolve(added)!)]) }
            for removed in change.removed { try connection.run(statement(remove), [.integer(owner), .integer(resolve(removed)!)]) }
        }
        // Order keys of ordered relationships, after every row and link is written.
        for change in request.links {
            guard let order = change.order,
                  let update = schema.updateOrderKey(change.relationship, in: model.entities[change.owner.entity]) else { continue }
            let owner = resolve(change.owner.primaryKey)!
            for (index, member) in order.enumerated() {
                try connection.run(statement(update), [.integer(SQLSchema.orderKeyValue(at: index)), .integer(resolve(member)!),
                                                       .integer(owner)])
            }
        }

        for delete in request.deletes {
            let entity = model.entities[delete.id.entity]
            let query = schema.deleteRow(entity, checkingVersion: delete.expectedVersion != nil)
            var bindings: [SQLValue] = [.integer(delete.id.primaryKey)]
            if let version = delete.expectedVersion { bindings.append(.integer(version)) }
            try connection.run(statement(query), bindings)
            if connection.changes == 0, let current = try storeRow(delete.id, connection) {
                // Still there at another version: a conflict.
                conflicts.append(RowConflict(id: delete.id, current: current))
                continue
            }
            // Its links go with it.
            for relationship in entity.relationships where relationship.isToMany {
                if let links = schema.deleteLinks(relationship, in: entity) {
                    try connection.run(statement(links), [.integer(delete.id.primaryKey)])
                }
            }
            result.changes.deleted.insert(delete.id)
        }
        guard conflicts.isEmpty else { throw ConflictsFound(conflicts: conflicts) }
        // Rows the request learnt are gone (deleted by another store): they go from the cache too.
        result.changes.deleted.formUnion(request.gone)

        return result
    }

    /// An object's values as the store keeps them: transformable attributes
    /// as the bytes their registered transformers make.
    private func storedValues(_ values: [PredicateValue], of entity: Entity, _ needed: Bool) throws -> [PredicateValue] {
        guard needed else { return values }
        var result = values
        for attribute in entity.attributes where attribute.type == .transformable && attribute.valueTransformerName != nil {
            do {
                result[attribute.slot] = try valueTransformers.storedValue(values[attribute.slot], of: attribute)
            } catch {
                throw StoreError.validation([SaveValidationFailure(
                    object: "<\(entity.name)>", property: attribute.name,
                    reason: "its value transformer '\(attribute.valueTransformerName!)' cannot store \(values[attribute.slot]): \(error)")])
            }
        }
        return result
    }

    /// The row with `id` as the store has it now, or nil when it is gone.
    private func storeRow(_ id: ObjectID, _ connection: SQLiteConnection) throws -> RowNode? {
        let entity = model.entities[id.entity]
        let query = schema.selectRow(entity)
        let layout = schema.rowLayout(entity)
        var node: RowNode?
        try connection.forEachRow(query.sql, [.integer(id.primaryKey)]) { row in
            let member = layout.entityColumn.flatMap { layout.member(number: row.integer($0)) } ?? layout.members[0]
            node = RowReader(member, base: 0, externalData: externalData, transformers: valueTransformers).node(row, primaryKey: id.primaryKey, version: row.integer(1),
                                                   now: Date().timeIntervalSinceReferenceDate)
            return false
        }
        return node
    }
}
