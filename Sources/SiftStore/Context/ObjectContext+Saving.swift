// Store stage: saving a context — validation, a `SaveRequest` handed to the
// store, the merge policy applied to the conflicts it reports, and the
// bookkeeping once it has committed.
//
// Every row has a version, incremented by each save of it. A save writes an
// updated or deleted row only if its version is still the one the context
// read; otherwise the store writes nothing and reports the conflicts, the
// merge policy resolves them (or the save fails), and the request goes again
// with the resolutions. The store works the delete rules out again over its
// rows, consistently with what the policy kept (SaveRules.swift), and says
// what they changed beyond the request. Until the store commits, the
// context is not touched: a save that fails for any reason leaves it
// exactly as it was.

import Foundation
import Sift

extension ObjectContext {
    /// How many times a save is tried when conflicts keep appearing (other
    /// saves landing between the tries).
    static let maximumSaveAttempts = 8

    /// Saves every change in one transaction, with optimistic locking.
    ///
    /// - Throws: `StoreError`, the context left as it was: `.validation` when a change breaks the model's rules
    ///   (a required value missing, a value of the wrong type, a deny rule, …); `.objectNotFound` when a
    ///   changed object's row is gone before its fault fires; `.conflicts` when other saves changed the same
    ///   rows and the merge policy does not resolve them; `.cannotWrite` when the store refuses writes;
    ///   `.keysExhausted`, `.locked`, `.readOnly`, `.full` or `.sqlite` when writing fails; the first value a
    ///   ``Managed`` property refused since the last save, nothing written (the refusals are then forgotten).
    public func save() throws(StoreError) {
        if let refused = refusedChanges.first {
            refusedChanges = []
            throw refused
        }
        // The changed objects sorted out in one pass, each kind in the order saves write in.
        var inserted: [ManagedObject] = []
        var updated: [ManagedObject] = []
        var deleted: [ManagedObject] = []
        var locked: [ManagedObject] = []
        for object in changed.objects {
            if object.isInserted {
                inserted.append(object)
            } else if object.isDeleted {
                deleted.append(object)
            } else if object.hasValueChanges {
                updated.append(object)
            } else if object.isLocked {
                locked.append(object)
            }
        }
        guard !inserted.isEmpty || !updated.isEmpty || !deleted.isEmpty || !locked.isEmpty else { return }
        inserted = Self.ordered(inserted)
        // An object marked for conflict detection is saved as an update that writes its values as read.
        updated = Self.ordered(updated) + Self.ordered(locked)
        deleted = Self.ordered(deleted)
        // The current state of every written object, read before the
        // transaction, in the objects' order (by ID only when rows conflict:
        // the merge policy looks them up then). One pass over each kind (the
        // objects of a large save are far apart in memory) reads each row,
        // checks it against the model and notes whether the object changed a
        // to-many relationship; the inserts go into every try's request as they are.
        var failures = deniedFailures()
        var linked: [ManagedObject] = []
        var inserts: [SaveRequest.Insert] = []
        inserts.reserveCapacity(inserted.count)
        var updatedRows: [(values: [PredicateValue], toOne: [Int64?])] = []
        updatedRows.reserveCapacity(updated.count)
        for (kind, isInserted) in [(inserted, true), (updated, false)] {
            for object in kind {
                let row = try currentRow(object)
                if !object.isDeleted { validate(object, row, into: &failures) }
                if object.hasToManyChanges { linked.append(object) }
                if isInserted {
                    inserts.append(SaveRequest.Insert(id: object.objectID, values: row.values, toOne: row.toOne))
                } else {
                    updatedRows.append(row)
                }
            }
        }
        if !failures.isEmpty { throw .validation(failures) }
        // The members of each changed ordered relationship, in order: the store keeps their order keys.
        var orders: [ObjectID: [Int: [Int64]]] = [:]
        for object in linked {
            for relationship in object.description_.toMany where relationship.isOrdered
                && (object.addedToMany[relationship.slot]?.isEmpty == false || object.removedToMany[relationship.slot]?.isEmpty == false) {
                orders[object.objectID, default: [:]][relationship.slot] = try object.toManyKeys(relationship)
            }
        }
        var resolutions: [ObjectID: ConflictResolution] = [:]
        var records: [SaveConflict] = []
        var rows: [ObjectID: (values: [PredicateValue], toOne: [Int64?])] = [:]
        for _ in 0..<Self.maximumSaveAttempts {
            let request = saveRequest(inserts: inserts, updated: updated, updatedRows: updatedRows,
                                      deleted: deleted, linked: linked, orders: orders, resolutions: resolutions)
            switch try writing({ () throws(StoreError) in try store.apply(request) }) {
            case .committed(let result):
                finish(result, of: request, inserted: inserted, updated: updated, deleted: deleted, resolutions: resolutions)
                resultsDidChange(result.changes)
                // Nothing above can fail: observers hear of every save that
                // committed, once the saving context holds its objects
                // under their permanent IDs.
                announceOwn(result.changes)
                return
            case .conflicts(let conflicts):
                if rows.isEmpty { rows = Dictionary(zip(updated.map(\.objectID), updatedRows)) { first, _ in first } }
                records = conflicts.map { conflictRecord($0, rows: rows) }
                for conflict in conflicts {
                    guard let object = objects[conflict.id],
                          let resolution = mergePolicy.resolve(conflict, object, row: rows[conflict.id])
                    else { throw .conflicts(records) }
                    resolutions[conflict.id] = resolution
                }
            }
        }
        throw .conflicts(records)
    }

    /// The request for the context's changes (`inserts`: the inserted
    /// objects' rows, in order), with the resolutions of conflicts found so
    /// far; `linked` are the inserted and updated objects that changed a
    /// to-many relationship, in that order.
    func saveRequest(inserts: [SaveRequest.Insert], updated: [ManagedObject],
                     updatedRows: [(values: [PredicateValue], toOne: [Int64?])], deleted: [ManagedObject],
                     linked: [ManagedObject], orders: [ObjectID: [Int: [Int64]]] = [:],
                     resolutions: [ObjectID: ConflictResolution]) -> SaveRequest {
        var request = SaveRequest()
        request.mergePolicy = mergePolicy
        request.inserts = inserts
        request.updates.reserveCapacity(updated.count)
        for (object, row) in zip(updated, updatedRows) {
            switch resolutions.isEmpty ? nil : resolutions[object.objectID] {
            case nil:
                request.updates.append(SaveRequest.Update(
                    id: object.objectID, expectedVersion: object.node?.version ?? 0,
                    attributeSlots: object.changedValues.keys.sorted(), toOneSlots: object.changedToOne.keys.sorted(),
                    values: row.values, toOne: row.toOne))
            case .write(let version, let attributeSlots, let toOneSlots, let values, let toOne):
                request.updates.append(SaveRequest.Update(
                    id: object.objectID, expectedVersion: version, attributeSlots: attributeSlots, toOneSlots: toOneSlots,
                    values: values, toOne: toOne))
            case .reinsert:
                request.inserts.append(SaveRequest.Insert(id: object.objectID, values: row.values, toOne: row.toOne))
            case .discard, .gone, .delete:
                continue
            }
        }
        request.gone = resolutions.compactMap { id, resolution in
            if case .gone = resolution { return id }
            return nil
        }.sorted { ($0.entity, $0.primaryKey) < ($1.entity, $1.primaryKey) }
        // What the policy kept as the store has it: the store's delete rules
        // leave these rows, clearing their links to rows this save deletes.
        request.kept = Set(resolutions.compactMap { id, resolution in
            if case .discard = resolution { return id }
            return nil
        })
        for object in deleted {
            switch resolutions.isEmpty ? nil : resolutions[object.objectID] {
            case nil: request.deletes.append(SaveRequest.Delete(id: object.objectID, expectedVersion: object.node?.version ?? 0))
            case .delete: request.deletes.append(SaveRequest.Delete(id: object.objectID, expectedVersion: nil))
            default: continue
            }
        }
        for object in linked {
            // (An updated object the policy discards, finds gone or deletes writes no links.)
            switch resolutions.isEmpty ? nil : resolutions[object.objectID] {
            case .discard?, .gone?, .delete?: continue
            default: break
            }
            for relationship in object.description_.toMany {
                let added = object.addedToMany[relationship.slot]?.elements ?? []
                let removed = object.removedToMany[relationship.slot].map(Array.init) ?? []
                guard !added.isEmpty || !removed.isEmpty else { continue }
                request.links.append(SaveRequest.LinkChange(owner: object.objectID, relationship: relationship,
                                                            added: added, removed: removed.sorted(),
                                                            order: orders[object.objectID]?[relationship.slot]))
            }
        }
        return request
    }

    /// A conflict as the error reports it.
    func conflictRecord(_ conflict: RowConflict, rows: [ObjectID: (values: [PredicateValue], toOne: [Int64?])]) -> SaveConflict {
        let entity = store.model.entities[conflict.id.entity]
        let object = objects[conflict.id]
        var contextValues: [String: PredicateValue] = [:]
        if let row = rows[conflict.id] {
            for a in entity.attributes { contextValues[a.name] = row.values[a.slot] }
        }
        return SaveConflict(
            objectID: conflict.id, entity: entity.name, contextVersion: object?.node?.version ?? 0,
            contextValues: contextValues, storeVersion: conflict.current?.version,
            storeValues: conflict.current.map { node in
                Dictionary(uniqueKeysWithValues: entity.attributes.map { ($0.name, node.value(at: $0.slot)) })
            })
    }

    /// After the store committed: permanent IDs, the new snapshots, changes
    /// cleared. Nothing here can fail.
    func finish(_ result: SaveResult, of request: SaveRequest, inserted: [ManagedObject], updated: [ManagedObject],
                deleted: [ManagedObject], resolutions: [ObjectID: ConflictResolution]) {
        // The request's first inserts are `inserted`, in order, and with no
        // resolution its updates are `updated`, in order: the store's arrays
        // by place are read with no lookup. Otherwise (a store that gives
        // tables by ID, or conflicts resolved) the nodes are found by ID.
        let keysByPlace = result.insertedKeys.count == request.inserts.count
        let insertsByPlace = result.insertedNodes.count == request.inserts.count
        let updatesByPlace = result.updatedNodes.count == request.updates.count
        let byPlace = insertsByPlace && updatesByPlace && resolutions.isEmpty
        var nodesByID = result.nodes
        if !byPlace {
            if insertsByPlace { for (place, insert) in request.inserts.enumerated() { nodesByID[insert.id] = result.insertedNodes[place] } }
            if updatesByPlace { for (place, update) in request.updates.enumerated() { nodesByID[update.id] = result.updatedNodes[place] } }
        }
        var registered: [ObjectID] = []
        registered.reserveCapacity(inserted.count)
        // The temporary IDs go first; the permanent ones are keys the store
        // has just given, which no object here can have: the objects join
        // the table without a hashed operation each (hashed when first looked up).
        for object in inserted { objects[object.objectID] = nil }
        // Added by runs of one root (the objects come by entity), not by a table lookup each.
        var run: (root: Int, objects: [ManagedObject]) = (-1, [])
        for (place, object) in inserted.enumerated() {
            let temporary = object.objectID
            let key = keysByPlace ? result.insertedKeys[place] : result.keys[temporary.primaryKey] ?? temporary.primaryKey
            object.objectID = ObjectID(entity: temporary.entity, root: temporary.root, primaryKey: key)
            object.isInserted = false
            if run.root != temporary.root {
                objects.addUnhashed(run.objects, root: run.root)
                run = (temporary.root, [])
                run.objects.reserveCapacity(inserted.count - place)
            }
            run.objects.append(object)
            object.node = byPlace ? result.insertedNodes[place] : nodesByID[temporary]
            if object.holdsRegistration { registered.append(object.objectID) }
            object.discardChanges()
        }
        objects.addUnhashed(run.objects, root: run.root)
        rowCache.register(registered)
        // (No resolutions, the usual case: no lookup by ID for each object.)
        for (place, object) in updated.enumerated() {
            switch resolutions.isEmpty ? nil : resolutions[object.objectID] {
            case .discard:
                object.discardChanges()
                makeFault(object)
                // The store's row is newer than any cached node: read it afresh.
                rowCache.remove([object.objectID])
            case .gone:
                object.isDeleted = true
                unregisterObject(object)
                rowCache.remove([object.objectID])
            default:
                if let node = byPlace ? result.updatedNodes[place] : nodesByID[object.objectID] {
                    if !object.holdsRegistration { rowCache.register(object.objectID) }
                    object.node = node
                } else {
                    makeFault(object)
                }
                object.discardChanges()
            }
        }
        for object in deleted {
            switch resolutions.isEmpty ? nil : resolutions[object.objectID] {
            case .discard:
                object.isDeleted = false
                object.discardChanges()
                makeFault(object)
                rowCache.remove([object.objectID])
            case .gone:
                unregisterObject(object)
                rowCache.remove([object.objectID])
            default:
                unregisterObject(object)
            }
        }
        // Rows the store's delete rules changed beyond the request (a
        // cascade to rows this context did not know were related, links
        // cleared): their objects here are dropped, or read afresh.
        for id in result.ruleChanges.deleted {
            rowCache.remove([id])
            guard let object = objects[id] else { continue }
            object.isDeleted = true
            object.discardChanges()
            unregisterObject(object)
        }
        for id in result.ruleChanges.updated {
            if let object = objects[id] { makeFault(object) }
            rowCache.remove([id])
        }
        changed.removeAll()
        denied = [:]
    }

    /// Turns an object into a fault that reads the store's row when next used.
    func makeFault(_ object: ManagedObject) {
        forgetFaultBatch(of: object)
        guard object.holdsRegistration else { return }
        object.node = nil
        rowCache.unregister(object.objectID)
    }

    // MARK: Reading an object's whole state

    /// The object's current attribute values and to-one keys.
    func currentRow(_ object: ManagedObject) throws(StoreError) -> (values: [PredicateValue], toOne: [Int64?]) {
        if object.isInserted, object.node == nil {
            // No snapshot: an inserted object's changes are laid out as its
            // row already (every attribute set, every to-one in place), taken
            // with no copy; else defaults, then what was set.
            let description = object.description_
            let changes = object.makeChanges()
            let values: [PredicateValue]
            if changes.values.setsEvery(description.defaultValues.count) {
                values = changes.values.values
            } else {
                var merged = description.defaultValues
                for (slot, value) in changes.values { merged[slot] = value }
                values = merged
            }
            if changes.toOne.values.count == description.toOneCount { return (values, changes.toOne.values) }
            var toOne = [Int64?](repeating: nil, count: description.toOneCount)
            for (slot, key) in changes.toOne { toOne[slot] = key }
            return (values, toOne)
        }
        let base = try object.values()
        var values = base.values
        for (slot, value) in object.changedValues { values[slot] = value }
        var toOne = base.toOne
        for (slot, key) in object.changedToOne { toOne[slot] = key }
        return (values, toOne)
    }

    // MARK: Validation

    /// What a deny rule refused among the objects this save deletes: the
    /// first failures a save reports.
    func deniedFailures() -> [SaveValidationFailure] {
        denied.filter { id, _ in objects[id].map { changed.contains($0) && $0.isDeleted } == true }
            .sorted { $0.key.primaryKey < $1.key.primaryKey }
            .flatMap(\.value)
    }

    /// Adds to `failures` what the model refuses in an object's current state.
    private func validate(_ object: ManagedObject, _ row: (values: [PredicateValue], toOne: [Int64?]),
                          into failures: inout [SaveValidationFailure]) {
        let description = object.description_
        // (Each check's name read only when it fails: copied out, every check's string was retained.)
        for index in description.checks.indices {
            if Self.isStoredAsIs(row.values[description.checks[index].slot], description.checks[index].type) { continue }
            let check = description.checks[index]
            let value = row.values[check.slot]
            if value == .null {
                // A transient attribute is not stored: nothing to protect.
                if check.required {
                    failures.append(SaveValidationFailure(object: object.description, property: check.name,
                                                          reason: "is required but has no value"))
                }
            } else if check.type.convert(value) == nil
                        && store.transformers?.transformer(of: description.entity.attributes[check.slot]) == nil {
                // (A value a registered transformer stores may be of any type.)
                failures.append(SaveValidationFailure(object: object.description, property: check.name,
                                                      reason: check.type.mismatch(value)))
            } else if case .double(let number) = value, number.isNaN {
                // SQLite would keep it as NULL: the value would change silently.
                failures.append(SaveValidationFailure(object: object.description, property: check.name,
                                                      reason: "is NaN, which no store keeps"))
            }
        }
        for (slot, name) in description.requiredToOne where row.toOne[slot] == nil {
            failures.append(SaveValidationFailure(object: object.description, property: name,
                                                  reason: "is required but empty"))
        }
    }

    /// Whether a value is of exactly the kind an attribute of `type` stores,
    /// with nothing to check (a number, string, Boolean or date of the
    /// attribute's own type, a double not NaN): most values of a save, which
    /// then skip the conversion `validateChanges` would otherwise try.
    @inline(__always)
    static func isStoredAsIs(_ value: PredicateValue, _ type: AttributeType) -> Bool {
        switch (value, type) {
        case (.int, .integer64), (.string, .string), (.bool, .boolean), (.date, .date): return true
        case (.double(let number), .double): return !number.isNaN
        default: return false
        }
    }
}
