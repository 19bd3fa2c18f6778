// Store stage: saving a context — validation, one transaction, optimistic
// locking, conflicts and merge policies, change notifications, and merging
// other contexts' saves.
//
// Every row has a version (`Z_OPT`), incremented by each save of it. A save
// writes an updated or deleted row only if its version is still the one the
// context read; otherwise the row is a conflict, and the context's merge
// policy decides. The whole save is one SQLite transaction: all of it, or
// (on an error) none of it.

import Foundation
import Sift

/// How a save resolves rows that changed in the store since the context read them.
public enum MergePolicy: Hashable, Sendable {
    /// The save fails, listing the conflicts, and writes nothing (the default).
    case error
    /// Property by property, the store's changed values win.
    case storeTrump
    /// Property by property, the context's changed values win.
    case objectTrump
    /// The context's whole state is written over the store's.
    case overwrite
    /// The context's changes to conflicting objects are discarded for the store's state.
    case rollback
}

/// A row that changed in the store since the context read it.
public struct SaveConflict: Hashable, Sendable, CustomStringConvertible {
    public var objectID: ObjectID
    public var entity: String
    /// The version the context read.
    public var contextVersion: Int64
    /// The attribute values the context holds (its changes applied).
    public var contextValues: [String: PredicateValue]
    /// The version now in the store; nil when the row was deleted.
    public var storeVersion: Int64?
    /// The attribute values now in the store; nil when the row was deleted.
    public var storeValues: [String: PredicateValue]?

    public var description: String {
        "\(entity) \(objectID.primaryKey): context read version \(contextVersion), the store has "
            + (storeVersion.map { "version \($0)" } ?? "no such row (deleted)")
    }
}

/// What a save changed, as the store announces it to every observer.
public struct StoreChanges: Hashable, Sendable {
    public var inserted: Set<ObjectID>
    public var updated: Set<ObjectID>
    public var deleted: Set<ObjectID>

    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

extension ObjectContext {
    // MARK: Reading an object's whole state

    /// The object's current attribute values and to-one keys.
    func currentRow(_ object: ManagedObject) throws(StoreError) -> (values: [PredicateValue], toOne: [Int64?]) {
        let base = try object.values()
        var values = base.values
        for (slot, value) in object.changedValues { values[slot] = value }
        var toOne = base.toOne
        for (slot, key) in object.changedToOne { toOne[slot] = key }
        return (values, toOne)
    }

    // MARK: Validation

    /// Refuses a save that would store what the model does not allow.
    /// `rows` holds the current state of every inserted and updated object.
    func validateChanges(_ rows: [ObjectID: (values: [PredicateValue], toOne: [Int64?])]) throws(StoreError) {
        var failures = denied.filter { changed[$0.key]?.isDeleted == true }.sorted { $0.key.primaryKey < $1.key.primaryKey }
            .flatMap(\.value)
        for object in changed.values where !object.isDeleted && (object.isInserted || object.hasValueChanges) {
            guard let row = rows[object.objectID] else { continue }
            for attribute in object.entity.attributes {
                let value = row.values[attribute.slot]
                if value == .null {
                    if !attribute.isOptional {
                        failures.append(SaveValidationFailure(object: object.description, property: attribute.name,
                                                              reason: "is required but has no value"))
                    }
                } else if DataSet.convert(value, to: attribute.type) == nil {
                    failures.append(SaveValidationFailure(object: object.description, property: attribute.name,
                                                          reason: attribute.type.mismatch(value)))
                } else if case .double(let number) = value, number.isNaN {
                    // SQLite would keep it as NULL: the value would change silently.
                    failures.append(SaveValidationFailure(object: object.description, property: attribute.name,
                                                          reason: "is NaN, which no store keeps"))
                }
            }
            for relationship in object.entity.relationships where !relationship.isToMany && !relationship.isOptional {
                if row.toOne[relationship.slot] == nil {
                    failures.append(SaveValidationFailure(object: object.description, property: relationship.name,
                                                          reason: "is required but empty"))
                }
            }
        }
        if !failures.isEmpty { throw .validation(failures) }
    }

    // MARK: Save

    /// Saves every change in one transaction, with optimistic locking.
    public func save() throws(StoreError) {
        guard hasChanges else { return }
        let inserted = insertedObjects
        let updated = updatedObjects
        let deleted = deletedObjects
        // The current state of every written object, read before the transaction.
        var rows: [ObjectID: (values: [PredicateValue], toOne: [Int64?])] = [:]
        rows.reserveCapacity(inserted.count + updated.count)
        for object in inserted + updated { rows[object.objectID] = try currentRow(object) }
        try validateChanges(rows)
        let outcome = try store.commit(self, inserted: inserted, updated: updated, deleted: deleted, rows: rows)
        try finish(outcome, inserted: inserted, updated: updated, deleted: deleted, rows: rows)
    }

    /// What a save did, for the bookkeeping after it commits.
    struct SaveOutcome {
        var keys: [Int64: Int64] = [:]
        /// Objects whose rows were written (updated): their new versions.
        var versions: [ObjectID: Int64] = [:]
        /// Objects whose conflict resolution means rereading them from the store.
        var reread: Set<ObjectID> = []
        /// Objects the store no longer has (deleted elsewhere, and the policy agreed).
        var gone: Set<ObjectID> = []
        /// Objects whose changes the policy discarded.
        var discarded: Set<ObjectID> = []
    }

    func write(_ connection: SQLiteConnection, _ store: SQLiteStore, inserted: [ManagedObject], updated: [ManagedObject],
               deleted: [ManagedObject], rows: [ObjectID: (values: [PredicateValue], toOne: [Int64?])]) throws -> SaveOutcome {
        let q = SQLSchema.quote
        let schema = store.schema
        var outcome = SaveOutcome()

        // Permanent keys for inserted objects, after each table's largest.
        var next: [Int: Int64] = [:]
        for object in inserted {
            let entity = object.entity
            if next[entity.index] == nil {
                let max = try connection.query("SELECT COALESCE(MAX(\(q(SQLSchema.primaryKey))), 0) FROM \(q(schema.table(entity)))")
                if case .integer(let m)? = max.first?.first { next[entity.index] = m + 1 } else { next[entity.index] = 1 }
            }
            outcome.keys[object.objectID.primaryKey] = next[entity.index]!
            next[entity.index]! += 1
        }
        func resolve(_ key: Int64?) -> Int64? { key.map { $0 < 0 ? outcome.keys[$0] ?? $0 : $0 } }
        func key(_ object: ManagedObject) -> Int64 { resolve(object.objectID.primaryKey)! }

        // One INSERT statement per entity, prepared once for the whole save.
        var insertStatements: [Int: SQLiteStatement] = [:]
        func insertStatement(_ entity: Entity) throws -> SQLiteStatement {
            if let statement = insertStatements[entity.index] { return statement }
            var columns = [SQLSchema.primaryKey, SQLSchema.version]
            for attribute in entity.attributes { columns += [schema.column(attribute)] + companionColumns(attribute) }
            for relationship in entity.relationships where !relationship.isToMany { columns.append(relationship.name) }
            let sql = "INSERT INTO \(q(schema.table(entity))) (\(columns.map(q).joined(separator: ", "))) VALUES ("
                + (1...columns.count).map { "?\($0)" }.joined(separator: ", ") + ")"
            let statement = try connection.statement(sql)
            insertStatements[entity.index] = statement
            return statement
        }

        func insertRow(_ object: ManagedObject, version: Int64) throws {
            let entity = object.entity
            let row = rows[object.objectID]!
            var values: [SQLValue] = [.integer(key(object)), .integer(version)]
            values.reserveCapacity(2 + entity.attributes.count * 3 + entity.relationships.count)
            for attribute in entity.attributes {
                values.append(SQLLowering.sqlValue(row.values[attribute.slot]))
                if attribute.isCanonical { values += companionValues(attribute, row.values[attribute.slot]) }
            }
            for relationship in entity.relationships where !relationship.isToMany {
                values.append(resolve(row.toOne[relationship.slot]).map(SQLValue.integer) ?? .null)
            }
            try connection.forEachRow(insertStatement(entity), values)
        }

        // One UPDATE statement per entity and set of changed columns.
        var updateStatements: [[Int]: SQLiteStatement] = [:]
        /// Writes an object's changed columns if its version is `expected`;
        /// returns whether the row was there at that version.
        func updateRow(_ object: ManagedObject, expected: Int64, everything: Bool) throws -> Bool {
            let entity = object.entity
            let row = rows[object.objectID]!
            let attributes = entity.attributes.filter { everything || object.changedValues[$0.slot] != nil }
            let toOne = entity.relationships.filter { !$0.isToMany && (everything || object.changedToOne[$0.slot] != nil) }
            var values: [SQLValue] = []
            for attribute in attributes {
                values.append(SQLLowering.sqlValue(row.values[attribute.slot]))
                if attribute.isCanonical { values += companionValues(attribute, row.values[attribute.slot]) }
            }
            for relationship in toOne {
                values.append(resolve(row.toOne[relationship.slot]).map(SQLValue.integer) ?? .null)
            }
            values += [.integer(key(object)), .integer(expected)]
            let shape = [entity.index] + attributes.map(\.slot) + [-1] + toOne.map(\.slot)
            let statement: SQLiteStatement
            if let prepared = updateStatements[shape] {
                statement = prepared
            } else {
                let columns = attributes.flatMap { [schema.column($0)] + companionColumns($0) } + toOne.map(\.name)
                let assignments = columns.enumerated().map { "\(q($1)) = ?\($0 + 1)" }
                    + ["\(q(SQLSchema.version)) = \(q(SQLSchema.version)) + 1"]
                let sql = "UPDATE \(q(schema.table(entity))) SET \(assignments.joined(separator: ", ")) WHERE "
                    + "\(q(SQLSchema.primaryKey)) = ?\(columns.count + 1) AND \(q(SQLSchema.version)) = ?\(columns.count + 2)"
                statement = try connection.statement(sql)
                updateStatements[shape] = statement
            }
            try connection.forEachRow(statement, values)
            return connection.changes == 1
        }

        func writeLinks(_ object: ManagedObject) throws {
            for relationship in object.entity.relationships where relationship.isToMany
                && (object.addedToMany[relationship.slot] != nil || object.removedToMany[relationship.slot] != nil) {
                guard case .joinTable(let table, let source, let target) = schema.storage(of: relationship, in: object.entity)
                else { continue }
                for added in object.addedToMany[relationship.slot] ?? [] {
                    try connection.forEachRow("INSERT OR IGNORE INTO \(q(table)) (\(q(source)), \(q(target))) VALUES (?1, ?2)",
                                              [.integer(key(object)), .integer(resolve(added)!)])
                }
                for removed in object.removedToMany[relationship.slot] ?? [] {
                    try connection.forEachRow("DELETE FROM \(q(table)) WHERE \(q(source)) = ?1 AND \(q(target)) = ?2",
                                              [.integer(key(object)), .integer(resolve(removed)!)])
                }
            }
        }

        for object in inserted { try insertRow(object, version: 1) }
        for object in inserted { try writeLinks(object) }

        var conflicts: [ManagedObject] = []
        for object in updated {
            let version = object.node?.version ?? 0
            if try updateRow(object, expected: version, everything: false) {
                outcome.versions[object.objectID] = version + 1
                try writeLinks(object)
            } else {
                conflicts.append(object)
            }
        }
        for object in deleted {
            let entity = object.entity
            let version = object.node?.version ?? 0
            try connection.forEachRow("DELETE FROM \(q(schema.table(entity))) WHERE \(q(SQLSchema.primaryKey)) = ?1 AND \(q(SQLSchema.version)) = ?2",
                                      [.integer(key(object)), .integer(version)])
            if connection.changes == 0, try storeRow(connection, store, object) != nil {
                conflicts.append(object)
                continue
            }
            // Its links go with it.
            for relationship in entity.relationships where relationship.isToMany {
                if case .joinTable(let table, let source, _) = schema.storage(of: relationship, in: entity) {
                    try connection.forEachRow("DELETE FROM \(q(table)) WHERE \(q(source)) = ?1", [.integer(key(object))])
                }
            }
        }

        guard !conflicts.isEmpty else { return outcome }
        var records: [SaveConflict] = []
        for object in conflicts {
            let current = try storeRow(connection, store, object)
            var contextValues: [String: PredicateValue] = [:]
            if let row = rows[object.objectID] {
                for a in object.entity.attributes { contextValues[a.name] = row.values[a.slot] }
            }
            records.append(SaveConflict(objectID: object.objectID, entity: object.entity.name,
                                        contextVersion: object.node?.version ?? 0, contextValues: contextValues,
                                        storeVersion: current?.version, storeValues: current?.values))
        }
        switch mergePolicy {
        case .error:
            throw StoreError.conflicts(records)
        case .rollback:
            for (object, record) in zip(conflicts, records) {
                if record.storeVersion == nil {
                    // Deleted in the store: the store's state is that it is gone.
                    outcome.gone.insert(object.objectID)
                } else {
                    outcome.discarded.insert(object.objectID)
                    outcome.reread.insert(object.objectID)
                }
            }
        case .storeTrump, .objectTrump, .overwrite:
            for (object, record) in zip(conflicts, records) {
                guard let storeVersion = record.storeVersion, let storeValues = record.storeValues else {
                    // Deleted in the store.
                    if object.isDeleted || mergePolicy == .storeTrump {
                        outcome.gone.insert(object.objectID)
                    } else {
                        try insertRow(object, version: 1)
                        try writeLinks(object)
                        outcome.reread.insert(object.objectID)
                    }
                    continue
                }
                if object.isDeleted {
                    if mergePolicy == .storeTrump {
                        // The store changed the row: it stays.
                        outcome.discarded.insert(object.objectID)
                        outcome.reread.insert(object.objectID)
                    } else {
                        try connection.forEachRow("DELETE FROM \(q(schema.table(object.entity))) WHERE \(q(SQLSchema.primaryKey)) = ?1",
                                                  [.integer(key(object))])
                        outcome.gone.insert(object.objectID)
                    }
                    continue
                }
                if mergePolicy == .storeTrump, let snapshot = object.node {
                    // Keep only the changes to properties the store left as the context read them.
                    for attribute in object.entity.attributes where object.changedValues[attribute.slot] != nil {
                        if storeValues[attribute.name] != snapshot.values[attribute.slot] {
                            object.changedValues[attribute.slot] = nil
                        }
                    }
                }
                _ = try updateRow(object, expected: storeVersion, everything: mergePolicy == .overwrite)
                try writeLinks(object)
                outcome.reread.insert(object.objectID)
            }
        }
        return outcome
    }

    /// The row of `object` as the store has it now: version and attribute values.
    func storeRow(_ connection: SQLiteConnection, _ store: SQLiteStore, _ object: ManagedObject) throws
        -> (version: Int64, values: [String: PredicateValue])?
    {
        let q = SQLSchema.quote
        let entity = object.entity
        let columns = [SQLSchema.version] + entity.attributes.map(\.name)
        let rows = try connection.query("SELECT \(columns.map(q).joined(separator: ", ")) FROM \(q(store.schema.table(entity))) WHERE \(q(SQLSchema.primaryKey)) = ?1",
                                        [.integer(object.objectID.primaryKey)])
        guard let row = rows.first, case .integer(let version) = row[0] else { return nil }
        var values: [String: PredicateValue] = [:]
        for attribute in entity.attributes {
            values[attribute.name] = PredicateValue(sqlValue: row[1 + attribute.slot], type: attribute.type)
        }
        return (version, values)
    }

    func companionColumns(_ attribute: Attribute) -> [String] {
        Self.companionColumns(attribute)
    }

    static func companionColumns(_ attribute: Attribute) -> [String] {
        attribute.isCanonical ? SQLSchema.companionFlags.map { SQLSchema.companionColumn(attribute.name, flags: $0) } : []
    }

    func companionValues(_ attribute: Attribute, _ value: PredicateValue) -> [SQLValue] {
        guard attribute.isCanonical else { return [] }
        return SQLSchema.companionFlags.map { flags in
            guard case .string(let text) = value else { return .null }
            return .text(StringFolding.fold(text, ComparisonOptions(foldingFlags: flags)))
        }
    }

    /// After a commit: permanent IDs, new snapshots in the row cache, changes
    /// cleared, and the store's observers told.
    func finish(_ outcome: SaveOutcome, inserted: [ManagedObject], updated: [ManagedObject], deleted: [ManagedObject],
                rows: [ObjectID: (values: [PredicateValue], toOne: [Int64?])]) throws(StoreError) {
        func resolve(_ key: Int64?) -> Int64? { key.map { $0 < 0 ? outcome.keys[$0] ?? $0 : $0 } }
        var changes = StoreChanges(inserted: [], updated: [], deleted: [])
        changes.inserted.reserveCapacity(inserted.count)
        changes.updated.reserveCapacity(updated.count)
        let now = Date().timeIntervalSinceReferenceDate
        var fresh: [RowNode] = []
        fresh.reserveCapacity(inserted.count + updated.count)
        for object in inserted {
            let row = rows[object.objectID]!
            objects[object.objectID] = nil
            object.objectID = ObjectID(entity: object.entity.index, primaryKey: outcome.keys[object.objectID.primaryKey]!)
            object.isInserted = false
            objects[object.objectID] = object
            let node = RowNode(id: object.objectID, version: 1, fetchTimestamp: now, values: row.values,
                               toOne: row.toOne.map(resolve), toMany: Array(repeating: nil, count: object.entity.toManyCount))
            fresh.append(node)
            object.node = node
            changes.inserted.insert(object.objectID)
        }
        store.rowCache.register(changes.inserted)
        for object in updated where outcome.versions[object.objectID] != nil {
            let row = rows[object.objectID]!
            let node = RowNode(id: object.objectID, version: outcome.versions[object.objectID]!, fetchTimestamp: now,
                               values: row.values, toOne: row.toOne.map(resolve),
                               toMany: Array(repeating: nil, count: object.entity.toManyCount))
            fresh.append(node)
            object.node = node
            changes.updated.insert(object.objectID)
        }
        store.rowCache.store(fresh)
        for object in inserted + updated { object.discardChanges() }
        for object in deleted where !outcome.discarded.contains(object.objectID) {
            changes.deleted.insert(object.objectID)
            unregisterObject(object)
            store.rowCache.remove([object.objectID])
        }
        for id in outcome.gone {
            guard let object = objects[id] else { continue }
            object.isDeleted = true
            changes.deleted.insert(id)
            unregisterObject(object)
            store.rowCache.remove([id])
        }
        // Conflicts the policy resolved: read them again as the store has them now.
        var reread: [ManagedObject] = []
        for id in outcome.reread where !outcome.gone.contains(id) {
            guard let object = objects[id] else { continue }
            if outcome.discarded.contains(id) { object.isDeleted = false } else { changes.updated.insert(id) }
            object.discardChanges()
            if object.node != nil {
                object.node = nil
                store.rowCache.unregister(id)
            }
            store.rowCache.remove([id])
            reread.append(object)
        }
        changed = [:]
        denied = [:]
        if !reread.isEmpty { try fireFaults(reread) }
        store.announce(changes)
    }

    // MARK: Merging other contexts' saves

    /// Brings in what another context saved: objects it updated that this
    /// context holds are refreshed, deleted ones dropped. Unsaved edits of
    /// this context are kept as the merge policy says: `.error` leaves them
    /// to conflict at save, `.storeTrump` drops the edits to properties the
    /// other save changed, `.objectTrump` and `.overwrite` keep them over the
    /// new values, `.rollback` discards them.
    public func mergeChanges(from changes: StoreChanges) throws(StoreError) {
        var refreshed: [ManagedObject] = []
        for id in changes.updated {
            guard let object = objects[id], !object.isInserted else { continue }
            guard object.hasValueChanges || object.isDeleted else {
                refresh(object)
                continue
            }
            let old = object.node
            switch mergePolicy {
            case .error:
                continue
            case .rollback:
                object.discardChanges()
                object.isDeleted = false
                changed[id] = nil
            case .storeTrump, .objectTrump, .overwrite:
                break
            }
            // Read the new snapshot, keeping the edits.
            let edits = (object.changedValues, object.changedToOne, object.addedToMany, object.removedToMany)
            refresh(object, keepingChanges: true)
            refreshed.append(object)
            try fireFaults([object])
            (object.changedValues, object.changedToOne, object.addedToMany, object.removedToMany) = edits
            if mergePolicy == .storeTrump, let old, let new = object.node {
                for (slot, _) in object.changedValues where new.values[slot] != old.values[slot] {
                    object.changedValues[slot] = nil
                }
            }
            if !object.hasChanges { changed[id] = nil }
        }
        for id in changes.deleted {
            guard let object = objects[id], !object.hasValueChanges else { continue }
            object.isDeleted = true
            changed[id] = nil
            unregisterObject(object)
        }
        _ = refreshed
    }
}

