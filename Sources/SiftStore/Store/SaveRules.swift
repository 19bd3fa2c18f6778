// Store stage: the delete rules of a save, worked out again by the backend
// inside the save's transaction, once the merge policy has resolved the
// conflicts — written once for every store, each backend supplying a
// `DeletionReader` over the rows as its transaction sees them.
//
// A context applies the delete rules when an object is deleted, to the
// objects it knows as it read them. Rows it read may have moved since, and
// the merge policy may keep a row the context deleted (`.storeTrump`,
// `.rollback`) or write one the store lost: so the backend, after writing
// the request's rows and before deleting any, works the deletes out again
// over what the store holds (`DeletionPlan`, as a batch delete does):
// - cascade: rows the context did not know to be related are deleted too;
//   a row the save writes or the policy kept stays, and loses its link;
// - nullify: rows that still point at a deleted row are cleared;
// - deny: a row that still holds one the save does not delete refuses it.
// Then every to-one key the save wrote is checked: one that points at a row
// no longer there (deleted by this save or by another) is cleared. A
// cleared relationship that is required fails the save with a validation
// error. So whatever the merge policy decides, no row is left pointing at a
// deleted row, but through a relationship whose inverse's rule is no action
// (kept, by design, as Core Data keeps it).

import Foundation
import Sift

extension SaveRequest {
    /// The rows that stay whatever a cascade says: those the request
    /// inserts or updates (under their permanent keys), and those the
    /// merge policy kept.
    package func keptRows(keys: [Int64: Int64]) -> Set<ObjectID> {
        var kept = self.kept
        for insert in inserts {
            kept.insert(ObjectID(entity: insert.id.entity, root: insert.id.root,
                                 primaryKey: SaveRequest.resolve(insert.id.primaryKey, keys)!))
        }
        for update in updates { kept.insert(update.id) }
        return kept
    }

    /// The delete rules of the request's deletes over the store's rows as
    /// `reader` reads them; nil when it deletes nothing.
    ///
    /// - Throws: `StoreError.validation` when a deny rule refuses, or a
    ///   required link would be cleared; the reader's error.
    package func deletionPlan(keys: [Int64: Int64], model: DataModel, reader: some DeletionReader) throws -> DeletionPlan? {
        guard !deletes.isEmpty else { return nil }
        // Each row as its own entity: an ID reached through a relationship
        // may name an ancestor, whose rules are not all of the row's.
        var start: [ObjectID] = []
        for (root, group) in Dictionary(grouping: deletes.map(\.id), by: \.root).sorted(by: { $0.key < $1.key }) {
            let entity = model.entities[root]
            guard !entity.subentities.isEmpty else {
                start += group
                continue
            }
            let entities = try reader.entities(of: group.map(\.primaryKey), in: entity)
            for id in group {
                guard let index = entities[id.primaryKey] else { continue }  // gone already
                start.append(ObjectID(entity: model.entities[index], primaryKey: id.primaryKey))
            }
        }
        return try DeletionPlan.make(deleting: start, keeping: keptRows(keys: keys), requiringLinks: true,
                                     model: model, reader: reader)
    }

    /// The to-one relationships the request writes, with the rows written
    /// (their keys as the request has them, temporary ones not resolved; in
    /// the request's order, a row more than once when the request writes
    /// it so) and the keys they point at (resolved): every to-one of an insert, the
    /// to-one slots of an update; by the row's entity and relationship. Relationships whose inverse's rule is
    /// no action are left out (a key through them may point at a deleted
    /// row, by design).
    package func writtenLinks(keys: [Int64: Int64], model: DataModel)
        -> [(entity: Entity, relationship: Relationship, rows: [Int64], targets: [Int64])]
    {
        struct Slot: Equatable { var entity: Int, slot: Int }
        struct Written { var owners: [Int64] = [], targets = Set<Int64>() }
        // The few slots a save writes links of, found by a scan that starts
        // at the last one used (rows come by entity, each with the same
        // slots): no slot hashed for each link.
        var rows: [(key: Slot, value: Written)] = []
        var last = 0
        func place(of slot: Slot) -> Int {
            if last < rows.count, rows[last].key == slot { return last }
            if let found = rows.firstIndex(where: { $0.key == slot }) {
                last = found
            } else {
                rows.append((slot, Written()))
                last = rows.count - 1
            }
            return last
        }
        func note(_ id: ObjectID, _ slots: some Sequence<Int>, _ toOne: [Int64?]) {
            for slot in slots where slot < toOne.count {
                guard let target = SaveRequest.resolve(toOne[slot], keys) else { continue }
                let index = place(of: Slot(entity: id.entity, slot: slot))
                // (The owner's key as the request has it: resolved by the
                // caller, and only when a link must be read.)
                rows[index].value.owners.append(id.primaryKey)
                rows[index].value.targets.insert(target)
            }
        }
        // (Read in place, by index: a loop over the arrays copies each row out, its arrays retained.)
        inserts.withUnsafeBufferPointer { inserts in
            for index in inserts.indices { note(inserts[index].id, inserts[index].toOne.indices, inserts[index].toOne) }
        }
        updates.withUnsafeBufferPointer { updates in
            for index in updates.indices { note(updates[index].id, updates[index].toOneSlots, updates[index].toOne) }
        }
        var result: [(entity: Entity, relationship: Relationship, rows: [Int64], targets: [Int64])] = []
        for (key, written) in rows.sorted(by: { ($0.key.entity, $0.key.slot) < ($1.key.entity, $1.key.slot) }) {
            let entity = model.entities[key.entity]
            guard let relationship = entity.relationships.first(where: { !$0.isToMany && $0.slot == key.slot }),
                  !relationship.isTransient, let destination = model.entity(named: relationship.destination) else { continue }
            let inverse = relationship.inverse.flatMap { destination.relationship(named: $0) }
            if inverse?.deleteRule == .noAction { continue }
            result.append((entity, relationship, written.owners, written.targets.sorted()))
        }
        return result
    }

    /// The links the request wrote that point at rows no longer there
    /// (deleted by this save or another), read after the deletes: what to
    /// clear, as `DeletionPlan.cleared` lists it.
    ///
    /// - Throws: `StoreError.validation` when such a link is required; the
    ///   reader's error.
    package func danglingLinks(keys: [Int64: Int64], model: DataModel, reader: some DeletionReader) throws
        -> [(entity: Entity, relationship: Relationship, rows: [ObjectID], targets: [Int64])]
    {
        var cleared: [(entity: Entity, relationship: Relationship, rows: [ObjectID], targets: [Int64])] = []
        var failures: [SaveValidationFailure] = []
        for (entity, relationship, owners, targets) in writtenLinks(keys: keys, model: model) {
            guard let destination = model.entity(named: relationship.destination) else { continue }
            // The links as they are now point at targets the request wrote
            // (the delete rules only clear links), so when each of those is
            // still there, none dangles: the owners' links are read only
            // when one is gone (a save of many rows linked to a few reads
            // the few).
            let found = try reader.entities(of: targets, in: destination)
            let gone = Set(targets.filter { found[$0].map { !model.isEntity(at: $0, kindOf: destination.index) } ?? true })
            guard !gone.isEmpty else { continue }
            let resolved = owners.map { SaveRequest.resolve($0, keys)! }
            let dangling = try reader.pairs(relationship, of: entity, owners: Array(Set(resolved)).sorted())
                .filter { gone.contains($0.member) }
            guard !dangling.isEmpty else { continue }
            if !relationship.isOptional {
                for pair in dangling {
                    failures.append(SaveValidationFailure(
                        object: "<\(entity.name) \(pair.owner)>", property: relationship.name,
                        reason: "is required, but <\(destination.name) \(pair.member)>, which it points at, is deleted"))
                }
            }
            cleared.append((entity, relationship, dangling.map { ObjectID(entity: entity, primaryKey: $0.owner) },
                            Array(Set(dangling.map(\.member))).sorted()))
        }
        guard failures.isEmpty else { throw StoreError.validation(failures) }
        return cleared
    }
}
