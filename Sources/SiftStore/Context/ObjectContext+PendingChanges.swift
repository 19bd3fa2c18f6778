// Store stage: fetches that see the context's unsaved changes.
//
// The store answers for what is saved; then inserted and changed objects of
// the entity are tested in memory with their unsaved values, deleted ones
// drop out, and sort, offset and limit apply to the result — the answers the
// same fetch would give after a save. (As in Core Data, an unchanged object
// is not re-tested because an object it relates to changed.)

import Foundation
import Sift

/// Evaluates against a context's objects, unsaved changes included.
struct ContextDomain: EvaluationDomain {
    typealias Object = ManagedObject
    unowned let context: ObjectContext

    func handle(for attribute: AttributeReference) -> String { attribute.name }
    func handle(for relationship: RelationshipReference) -> String { relationship.name }

    func value(_ key: String, of object: ManagedObject) -> PredicateValue {
        (try? object.value(forKey: key)) ?? .null
    }

    func object(_ key: String, of object: ManagedObject) -> ManagedObject? {
        (try? object.object(forKey: key)) ?? nil
    }

    func objects(_ key: String, of object: ManagedObject) -> [ManagedObject] {
        (try? object.objects(forKey: key)) ?? []
    }

    func reference(to object: ManagedObject) -> PredicateValue {
        .object(object.reference)
    }
}

extension ObjectContext {
    /// Whether a fetch of `request` must look at unsaved changes.
    func needsPendingChanges(_ request: FetchRequest, _ entity: Entity) -> Bool {
        request.includesPendingChanges && changed.contains { $0.objectID.entity == entity.index && $0.hasChanges }
    }

    /// The objects a compiled request selects, unsaved changes included.
    func fetchIncludingChanges(_ fetch: CompiledFetch) throws(StoreError) -> [ManagedObject] {
        let request = fetch.request
        let entity = fetch.entity
        // Compiled once: the store's fetch and the test of unsaved objects share it.
        // What the store has, before offset and limit.
        let unlimited = fetch.with {
            $0.fetchLimit = nil
            $0.fetchOffset = 0
            $0.fetchBatchSize = 0
            $0.includesPendingChanges = false
            $0.relationshipKeyPathsForPrefetching = []
        }
        var result = try fetchSaved(unlimited)
        let filter = fetch.predicate.map { MemoryPredicate($0, domain: ContextDomain(context: self)) }
        let pending = changed.objects.filter { $0.objectID.entity == entity.index && $0.hasChanges }
        let pendingIDs = Set(pending.map(\.objectID))
        result.removeAll { pendingIDs.contains($0.objectID) || $0.isDeleted }
        for object in pending where !object.isDeleted {
            if try StoreError.evaluating({ () throws(EvaluationError) in try filter?.evaluate(object) ?? true }) {
                result.append(object)
            }
        }
        result = try sorted(result, by: fetch.sortKeys)
        result = request.page(result)
        for keyPath in request.relationshipKeyPathsForPrefetching {
            try prefetch(keyPath, from: result.compactMap(\.node), entity: entity)
        }
        return result
    }

    /// Sorts objects as the store would: by each sort key (nil first, `[c]`
    /// folding when asked), then by primary key (unsaved objects last).
    func sorted(_ objects: [ManagedObject], by keys: [SQLSortKey]) throws(StoreError) -> [ManagedObject] {
        try sortedInMemory(objects, by: keys, domain: ContextDomain(context: self)) { a, b in
            let (p, q) = (a.objectID.primaryKey, b.objectID.primaryKey)
            if (p < 0) != (q < 0) { return q < 0 }
            return p.magnitude < q.magnitude
        }
    }
}
