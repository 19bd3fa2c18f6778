// A change set as the API receives it (names, keys, temporary numbers),
// checked against the model and read into the store's `SaveRequest`: values
// converted to their attributes' types, to-one targets to keys (negative
// for objects the same change set inserts). The store applies it in one
// transaction with its own delete rules and optimistic locking.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import Sift
import SiftHTTPAPI
import SiftStore

struct SaveRequestReader {
    let model: DataModel

    func request(_ changes: Components.Schemas.ChangeSet) throws -> SaveRequest {
        var request = SaveRequest()
        let total = (changes.inserts?.count ?? 0) + (changes.updates?.count ?? 0) + (changes.deletes?.count ?? 0)
            + (changes.links?.count ?? 0)
        guard total <= 100_000 else { throw ServerFailure.tooLarge("a change set holds at most 100 000 changes") }
        var inserted = Set<Int64>()
        for insert in changes.inserts ?? [] {
            guard insert.temporaryID != 0, inserted.insert(insert.temporaryID).inserted else {
                throw ServerFailure.badRequest("temporary IDs are nonzero and each names one insert (\(insert.temporaryID))")
            }
        }
        for insert in changes.inserts ?? [] {
            let entity = try self.entity(insert.entity, concrete: true)
            request.inserts.append(SaveRequest.Insert(
                id: ObjectID(entity: entity, primaryKey: insert.temporaryID),
                values: try values(insert.values, of: entity), toOne: try toOne(insert.toOne, of: entity, inserted: inserted)))
        }
        for update in changes.updates ?? [] {
            let entity = try self.entity(update.entity, concrete: true)
            try checkKey(update.key)
            request.updates.append(SaveRequest.Update(
                id: ObjectID(entity: entity, primaryKey: update.key), expectedVersion: update.expectedVersion,
                attributeSlots: entity.attributes.map(\.slot), toOneSlots: entity.relationships.filter { !$0.isToMany }.map(\.slot),
                values: try values(update.values, of: entity), toOne: try toOne(update.toOne, of: entity, inserted: inserted)))
        }
        for delete in changes.deletes ?? [] {
            let entity = try self.entity(delete.entity, concrete: false)
            try checkKey(delete.key)
            request.deletes.append(SaveRequest.Delete(id: ObjectID(entity: entity, primaryKey: delete.key),
                                                      expectedVersion: delete.expectedVersion))
        }
        for link in changes.links ?? [] {
            let entity = try self.entity(link.entity, concrete: false)
            guard let relationship = entity.relationship(named: link.relationship), relationship.isToMany else {
                throw ServerFailure.badRequest("'\(link.relationship)' is not a to-many relationship of \(entity.name)")
            }
            var added: [Int64] = []
            for target in link.added ?? [] { added.append(try key(of: target, inserted: inserted)) }
            for key in link.removed ?? [] { try checkKey(key) }
            request.links.append(SaveRequest.LinkChange(owner: ObjectID(entity: entity, primaryKey: try key(of: link.owner, inserted: inserted)),
                                                        relationship: relationship, added: added, removed: link.removed ?? []))
        }
        for kept in changes.kept ?? [] {
            try checkKey(kept.key)
            request.kept.insert(ObjectID(entity: try self.entity(kept.entity, concrete: false), primaryKey: kept.key))
        }
        return request
    }

    func entity(_ name: String, concrete: Bool) throws(ServerFailure) -> Entity {
        guard let entity = model.entity(named: name) else { throw ServerFailure(404, "unknown_entity", "the model has no entity '\(name)'") }
        if concrete, entity.isAbstract { throw ServerFailure.badRequest("\(name) is abstract: its objects are of its subentities") }
        return entity
    }

    func checkKey(_ key: Int64) throws(ServerFailure) {
        guard key > 0 else { throw ServerFailure.badRequest("an object's key is positive (\(key))") }
    }

    func key(of target: Components.Schemas.Target, inserted: Set<Int64>) throws(ServerFailure) -> Int64 {
        switch (target.key, target.inserted) {
        case (let key?, nil):
            try checkKey(key)
            return key
        case (nil, let temporary?):
            guard inserted.contains(temporary) else { throw ServerFailure.badRequest("no insert has the temporary ID \(temporary)") }
            return temporary
        default:
            throw ServerFailure.badRequest("a target names a key or an inserted object's temporary ID, one of them")
        }
    }

    func values(_ wire: Components.Schemas.Values?, of entity: Entity) throws -> [PredicateValue] {
        var values = [PredicateValue](repeating: .null, count: entity.attributes.count)
        for (name, raw) in try WireValue.values(wire) {
            guard let attribute = entity.attribute(named: name), !attribute.isTransient else {
                throw StoreError.unknownKey(name, entity: entity.name)
            }
            guard let value = DataSet.convert(raw, to: attribute.type) else {
                throw ServerFailure.badRequest("\(entity.name).\(name) cannot hold \(raw): \(attribute.type.mismatch(raw))")
            }
            values[attribute.slot] = value
        }
        // What a context refuses before saving, refused here too: a required attribute left nil.
        let missing = entity.attributes.filter { !$0.isOptional && $0.isStored && values[$0.slot] == .null }
        if !missing.isEmpty {
            throw StoreError.validation(missing.map {
                SaveValidationFailure(object: entity.name, property: $0.name, reason: "is required but has no value")
            })
        }
        return values
    }

    func toOne(_ wire: Components.Schemas.TargetsByName?, of entity: Entity, inserted: Set<Int64>) throws -> [Int64?] {
        var keys = [Int64?](repeating: nil, count: entity.toOneCount)
        for (name, target) in wire?.additionalProperties ?? [:] {
            guard let relationship = entity.relationship(named: name), !relationship.isToMany else {
                throw ServerFailure.badRequest("'\(name)' is not a to-one relationship of \(entity.name)")
            }
            keys[relationship.slot] = try key(of: target, inserted: inserted)
        }
        return keys
    }
}
#endif
