// Store stage: what a batch delete reaches through the delete rules, worked
// out before anything is deleted — the same for every backend, reading
// relationships through a `DeletionReader` (SQL inside the delete's
// transaction, or the store's rows in memory):
// - cascade: the related objects are deleted too, and their rules apply in
//   turn (each object once, so cycles end);
// - deny: the delete fails if the relationship holds an object the batch
//   does not delete (checked once every cascade is known);
// - nullify: each related object that stays forgets the deleted one — a
//   to-one inverse is cleared (its row's version incremented), a to-many
//   inverse loses it (with the deleted row's links);
// - no action: nothing.
//
// A save works its deletes out again the same way, inside its transaction
// and after the merge policy has resolved its conflicts (`SaveRules`): the
// rows the policy kept, and those the save writes, are never deleted by a
// cascade — their link to the deleted row is cleared instead, as a nullify
// rule would clear it.

import Foundation
import Sift

/// How a batch delete reads relationships of rows it has not loaded.
package protocol DeletionReader {
    /// The (owner key, member key) pairs of `relationship` of `entity` for
    /// these owners.
    func pairs(_ relationship: Relationship, of entity: Entity, owners: [Int64]) throws -> [(owner: Int64, member: Int64)]
    /// The entity index of each row of `entity`'s table with one of these
    /// keys (rows that are gone are left out).
    func entities(of keys: [Int64], in entity: Entity) throws -> [Int64: Int]
}

/// The rows a batch delete deletes and changes.
package struct DeletionPlan {
    /// Every row deleted: those the request selected, then those cascade
    /// rules reached.
    package var deleted: [ObjectID] = []
    /// To-one keys cleared by nullify rules: rows of `entity` whose
    /// `relationship` points at one of `targets`.
    package var cleared: [(entity: Entity, relationship: Relationship, rows: [ObjectID], targets: [Int64])] = []
    /// Rows whose to-many relationships lose deleted members (announced as
    /// updated: their cached links are stale).
    package var touched: Set<ObjectID> = []

    /// Works out what deleting `start` reaches; throws a validation error
    /// when a deny rule refuses.
    ///
    /// - Parameters:
    ///   - start: The rows deleted first.
    ///   - kept: Rows that stay whatever the rules say (a save's written
    ///     rows, and those its merge policy kept): a cascade that reaches one
    ///     clears its link to the deleted row instead, and a deny rule that
    ///     holds one refuses.
    ///   - requiringLinks: Whether clearing a required to-one relationship
    ///     is a validation failure (a save's rule; a batch delete, like Core
    ///     Data's, checks no validation rules).
    ///   - model: The store's model.
    ///   - reader: How the relationships of rows are read.
    /// - Returns: The rows deleted, and the links cleared.
    /// - Throws: `StoreError.validation` when a deny rule refuses, or a link
    ///   to clear is required; the reader's error when reading fails.
    package static func make(deleting start: [ObjectID], keeping kept: Set<ObjectID> = [], requiringLinks: Bool = false,
                             model: DataModel, reader: some DeletionReader) throws -> DeletionPlan {
        var plan = DeletionPlan()
        var deleted: Set<ObjectID> = []
        for id in start where deleted.insert(id).inserted { plan.deleted.append(id) }
        var frontier = plan.deleted
        var denials: [(owner: ObjectID, relationship: Relationship, members: [ObjectID])] = []
        var nullified: [(relationship: Relationship, inverse: Relationship, destination: Entity, pairs: [(Int64, ObjectID)])] = []
        while !frontier.isEmpty {
            let groups = Dictionary(grouping: frontier, by: \.entity)
            frontier = []
            for (index, ids) in groups.sorted(by: { $0.key < $1.key }) {
                let entity = model.entities[index]
                let keys = ids.map(\.primaryKey)
                for relationship in entity.relationships where !relationship.isTransient {
                    guard let destination = model.entity(named: relationship.destination) else { continue }
                    let inverse = relationship.inverse.flatMap { destination.relationship(named: $0) }
                    switch relationship.deleteRule {
                    case .noAction: continue
                    case .nullify where inverse == nil: continue
                    default: break
                    }
                    let pairs = try reader.pairs(relationship, of: entity, owners: keys)
                    guard !pairs.isEmpty else { continue }
                    let members = try memberIDs(pairs.map(\.member), of: destination, model: model, reader: reader)
                    let resolved = pairs.compactMap { pair in members[pair.member].map { (pair.owner, $0) } }
                    switch relationship.deleteRule {
                    case .cascade:
                        var spared: [(Int64, ObjectID)] = []
                        for (owner, member) in resolved {
                            if kept.contains(member) {
                                spared.append((owner, member))
                            } else if deleted.insert(member).inserted {
                                plan.deleted.append(member)
                                frontier.append(member)
                            }
                        }
                        // A row that stays loses its link, as a nullify rule would clear it.
                        if let inverse, !spared.isEmpty { nullified.append((relationship, inverse, destination, spared)) }
                    case .deny:
                        for (owner, member) in resolved {
                            denials.append((ObjectID(entity: entity, primaryKey: owner), relationship, [member]))
                        }
                    case .nullify:
                        nullified.append((relationship, inverse!, destination, resolved))
                    case .noAction:
                        break
                    }
                }
            }
        }
        // A deny rule refuses only what stays: a cascade may delete it too.
        var failures: [SaveValidationFailure] = []
        var reported: Set<String> = []
        for denial in denials where denial.members.contains(where: { !deleted.contains($0) }) {
            let object = "<\(model.entities[denial.owner.entity].name) \(denial.owner.primaryKey)>"
            guard reported.insert(object + denial.relationship.name).inserted else { continue }
            failures.append(SaveValidationFailure(object: object, property: denial.relationship.name,
                                                  reason: "cannot be deleted while '\(denial.relationship.name)' is not empty (deny rule)"))
        }
        for (_, inverse, destination, pairs) in nullified {
            let staying = pairs.filter { !deleted.contains($0.1) }
            guard !staying.isEmpty else { continue }
            if inverse.isToMany {
                plan.touched.formUnion(staying.map(\.1))
            } else {
                if requiringLinks && !inverse.isOptional {
                    for (owner, member) in staying where reported.insert("\(member)\(inverse.name)").inserted {
                        failures.append(SaveValidationFailure(
                            object: "<\(model.entities[member.entity].name) \(member.primaryKey)>", property: inverse.name,
                            reason: "is required, but <\(inverse.destination) \(owner)>, which it points at, is deleted"))
                    }
                }
                plan.cleared.append((destination, inverse, staying.map(\.1), Array(Set(staying.map(\.0))).sorted()))
            }
        }
        guard failures.isEmpty else { throw StoreError.validation(failures) }
        return plan
    }

    /// The object IDs of these keys of `destination`'s table, each of its
    /// row's own entity.
    private static func memberIDs(_ keys: [Int64], of destination: Entity, model: DataModel,
                                  reader: some DeletionReader) throws -> [Int64: ObjectID] {
        let unique = Array(Set(keys)).sorted()
        guard !destination.subentities.isEmpty else {
            return Dictionary(uniqueKeysWithValues: unique.map { ($0, ObjectID(entity: destination, primaryKey: $0)) })
        }
        let entities = try reader.entities(of: unique, in: destination)
        var ids: [Int64: ObjectID] = [:]
        for key in unique {
            guard let index = entities[key], model.isEntity(at: index, kindOf: destination.index) else { continue }
            ids[key] = ObjectID(entity: model.entities[index], primaryKey: key)
        }
        return ids
    }
}
