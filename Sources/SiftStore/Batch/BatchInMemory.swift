// Store stage: batch changes evaluated in memory — what the atomic store
// always does, and a SQL store when the predicate (or an assigned value)
// needs memory. The rows are read, the new values computed by the memory
// lowering (each on the row as it was), the delete rules worked out over
// the store's rows, and the result saved as one `SaveRequest`: the same
// transaction, versions and announcements as a context's save. Rows that
// change between the read and the save are read again.

import Foundation
import Sift

/// Reads relationships through the store's own row reads.
struct StoreDeletionReader<Store: PersistentStore>: DeletionReader {
    let store: Store

    func pairs(_ relationship: Relationship, of entity: Entity, owners: [Int64]) throws -> [(owner: Int64, member: Int64)] {
        if relationship.isToMany {
            let links = try store.links(relationship, of: owners, entity: entity, loadingRows: false)
            return owners.flatMap { owner in (links[owner] ?? []).map { (owner, $0) } }
        }
        return try store.rows(entity, keys: owners).compactMap { node in
            node.toOneKey(at: relationship.slot).map { (node.id.primaryKey, $0) }
        }
    }

    func entities(of keys: [Int64], in entity: Entity) throws -> [Int64: Int] {
        Dictionary(try store.rows(entity, keys: keys).map { ($0.id.primaryKey, $0.id.entity) }, uniquingKeysWith: { a, _ in a })
    }
}

extension PersistentStore {
    /// The new values of a batch update's attributes, computed in memory
    /// on the row as it is; an integer becomes a double for a double
    /// attribute, as SQL's CAST makes it.
    private func assignedValues(_ update: BoundBatchUpdate, of node: RowNode,
                                _ expressions: [MemoryExpression<RowNodeDomain>]) throws(StoreError) -> [PredicateValue] {
        var values: [PredicateValue] = []
        for (assignment, expression) in zip(update.assignments, expressions) {
            var value = try StoreError.evaluating { () throws(EvaluationError) in try expression.evaluate(node) }
            let type = assignment.attribute.type
            if type.isNumeric, !type.isInteger, case .int(let integer) = value { value = .double(Double(integer)) }
            values.append(value)
        }
        return values
    }

    package func batchUpdateInMemory(_ update: BoundBatchUpdate) throws(StoreError) -> BatchResult {
        var conflicts: [RowConflict] = []
        for _ in 0..<ObjectContext.maximumSaveAttempts {
            let nodes = try rows(for: update.fetch)
            var paths: Set<String> = []
            for assignment in update.assignments { paths.formUnion(RelationshipPaths.of(assignment.value, [:])) }
            for path in paths.sorted() { try loadPath(path, from: nodes, entity: update.entity) }
            let domain = RowNodeDomain(cache: rowCache)
            let expressions = update.assignments.map { MemoryExpression($0.value, domain: domain) }
            let slots = update.assignments.map(\.attribute.slot)
            var request = SaveRequest()
            var failures: [SaveValidationFailure] = []
            for fetched in nodes {
                let node = domain.snapshot.node(entity: fetched.id.entity, primaryKey: fetched.id.primaryKey) ?? fetched
                let assigned = try assignedValues(update, of: node, expressions)
                failures += checkAssigned(assigned, Array(update.assignments.indices), of: node.id, update)
                var values = node.values
                for (slot, value) in zip(slots, assigned) { values[slot] = value }
                request.updates.append(SaveRequest.Update(id: node.id, expectedVersion: node.version, attributeSlots: slots,
                                                          toOneSlots: [], values: values, toOne: node.toOne))
            }
            guard failures.isEmpty else { throw .validation(Array(failures.prefix(20))) }
            switch try apply(request) {
            case .committed(let result):
                let ids = nodes.map(\.id).sorted { $0.primaryKey < $1.primaryKey }
                return BatchResult(objectIDs: ids, changes: result.changes, ranInSQL: false)
            case .conflicts(let found):
                conflicts = found
            }
        }
        throw .conflicts(conflicts.map { batchConflict($0) })
    }

    package func batchDeleteInMemory(_ request: BatchDeleteRequest, entity: Entity) throws(StoreError) -> BatchResult {
        var conflicts: [RowConflict] = []
        for _ in 0..<ObjectContext.maximumSaveAttempts {
            let start: [ObjectID]
            if let ids = request.objectIDs {
                start = try existingObjects(ids, of: entity)
            } else {
                var fetch = FetchRequest(entityName: entity.name)
                fetch.predicate = request.predicate
                start = try keys(for: try compile(fetch))
            }
            let plan: DeletionPlan
            do {
                plan = try DeletionPlan.make(deleting: start, model: model, reader: StoreDeletionReader(store: self))
            } catch {
                throw StoreError(error)
            }
            var save = SaveRequest()
            save.deletes = plan.deleted.map { SaveRequest.Delete(id: $0, expectedVersion: nil) }
            // Each row a nullify rule clears, once, with every slot cleared.
            var updates: [ObjectID: SaveRequest.Update] = [:]
            for clear in plan.cleared {
                let targets = Set(clear.targets)
                for node in try rows(clear.entity, keys: clear.rows.map(\.primaryKey)) {
                    let slot = clear.relationship.slot
                    guard let target = node.toOneKey(at: slot), targets.contains(target) else { continue }
                    var update = updates[node.id] ?? SaveRequest.Update(
                        id: node.id, expectedVersion: node.version, attributeSlots: [], toOneSlots: [], values: node.values,
                        toOne: node.toOne)
                    update.toOne[slot] = nil
                    update.toOneSlots.append(slot)
                    updates[node.id] = update
                }
            }
            save.updates = updates.values.sorted { ($0.id.root, $0.id.primaryKey) < ($1.id.root, $1.id.primaryKey) }
            switch try apply(save) {
            case .committed(var result):
                result.changes.updated.formUnion(plan.touched)
                rowCache.remove(plan.touched)
                return BatchResult(objectIDs: start.sorted { $0.primaryKey < $1.primaryKey }, changes: result.changes,
                                   ranInSQL: false)
            case .conflicts(let found):
                conflicts = found
            }
        }
        throw .conflicts(conflicts.map { batchConflict($0) })
    }

    /// Checks that a batch delete names objects of its entity (or of an
    /// entity the object may turn out to be one of).
    package func checkObjectIDs(_ ids: [ObjectID], of entity: Entity) throws(StoreError) {
        for id in ids where !model.isEntity(at: id.entity, kindOf: entity.index) && !model.isEntity(at: entity.index, kindOf: id.entity) {
            throw .invalidRequest(.objectOfAnotherEntity(ObjectReference(entity: model.entities[id.entity].name, id: id.primaryKey), entity: entity.name))
        }
    }

    /// The IDs of a batch delete's objects whose rows are still there,
    /// each of its row's own entity.
    package func existingObjects(_ ids: [ObjectID], of entity: Entity) throws(StoreError) -> [ObjectID] {
        try checkObjectIDs(ids, of: entity)
        var found: [ObjectID] = []
        for (root, group) in Dictionary(grouping: ids, by: \.root).sorted(by: { $0.key < $1.key }) {
            let nodes = try rows(model.entities[root], keys: Array(Set(group.map(\.primaryKey))).sorted())
            found += nodes.map(\.id).filter { model.isEntity(at: $0.entity, kindOf: entity.index) }
        }
        return found
    }

    /// A row a batch change found changed, as a save conflict reports it.
    private func batchConflict(_ conflict: RowConflict) -> SaveConflict {
        SaveConflict(objectID: conflict.id, entity: model.entities[conflict.id.entity].name, contextVersion: 0, contextValues: [:],
                     storeVersion: conflict.current?.version, storeValues: nil)
    }
}
