// Store stage: merge policies — how a context resolves rows that changed in
// the store since it read them. The one place they are written: a context
// applies them to the conflicts any backend reports (`resolve`), and to
// other contexts' saves it merges (ObjectContext+Merging.swift).

import Foundation
import Sift

/// How a save resolves rows that changed in the store since the context read them.
///
/// ```swift
/// context.mergePolicy = .objectTrump      // this context's changed properties win
/// try context.save()
/// ```
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
///
/// ```swift
/// try ann.setValue(.string("Annie"), forKey: "name")     // another context saved Ann since `context` read her
/// do {
///     try context.save()                                 // with the default merge policy, .error
/// } catch {
///     guard case .conflicts(let conflicts) = error else { throw error }
///     for conflict in conflicts {                        // nothing was written
///         print(conflict)                                // Employee 1: context read version 1, the store has version 2
///         print(conflict.storeValues?["age"] ?? .null)   // 42, the other save's (storeValues is nil for a deleted row)
///     }
///     context.mergePolicy = .storeTrump                  // the store's changed values win, the rest is ours
///     try context.save()
/// }
/// ```
public struct SaveConflict: Hashable, Sendable, CustomStringConvertible {
    /// The object whose row changed.
    public var objectID: ObjectID
    /// The name of the object's entity.
    public var entity: String
    /// The version the context read.
    public var contextVersion: Int64
    /// The attribute values the context holds (its changes applied).
    public var contextValues: [String: PredicateValue]
    /// The version now in the store; nil when the row was deleted.
    public var storeVersion: Int64?
    /// The attribute values now in the store; nil when the row was deleted.
    public var storeValues: [String: PredicateValue]?

    /// A conflict as a save reports it (a context's, or one sent later from a remote store's queue).
    package init(objectID: ObjectID, entity: String, contextVersion: Int64, contextValues: [String: PredicateValue],
                 storeVersion: Int64?, storeValues: [String: PredicateValue]?) {
        self.objectID = objectID
        self.entity = entity
        self.contextVersion = contextVersion
        self.contextValues = contextValues
        self.storeVersion = storeVersion
        self.storeValues = storeValues
    }

    public var description: String {
        "\(entity) \(objectID.primaryKey): context read version \(contextVersion), the store has "
            + (storeVersion.map { "version \($0)" } ?? "no such row (deleted)")
    }
}

/// What a merge policy makes of one conflicting object at save.
package enum ConflictResolution: Sendable {
    /// The store's state wins: the object's changes (or its delete) are dropped.
    case discard
    /// The row is gone from the store, and stays gone.
    case gone
    /// The row is written over the store's version: these slots (merged
    /// into the store's row) at the store's current version.
    case write(expectedVersion: Int64, attributeSlots: [Int], toOneSlots: [Int], values: [PredicateValue], toOne: [Int64?])
    /// The object's delete goes ahead, whatever the store's version.
    case delete
    /// The store lost the row; the object's row is inserted again under its key.
    case reinsert
}

/// A conflicting object's change, as a merge policy weighs it: a context's
/// object, or a change saved earlier and sent later (a remote store's queue).
package struct ConflictingChange: Sendable {
    /// The object's entity.
    package var entity: Entity
    /// Whether the change deletes the object.
    package var isDeleted: Bool
    /// The attribute slots the change writes.
    package var attributeSlots: [Int]
    /// The to-one slots the change writes.
    package var toOneSlots: [Int]
    /// The attribute values as read before the change, by slot; nil when not known.
    package var read: [PredicateValue]?
    /// The whole row as the change leaves it; nil for a delete.
    package var row: (values: [PredicateValue], toOne: [Int64?])?

    /// A change of an object of `entity`.
    package init(entity: Entity, isDeleted: Bool, attributeSlots: [Int], toOneSlots: [Int], read: [PredicateValue]?,
                 row: (values: [PredicateValue], toOne: [Int64?])?) {
        self.entity = entity
        self.isDeleted = isDeleted
        self.attributeSlots = attributeSlots
        self.toOneSlots = toOneSlots
        self.read = read
        self.row = row
    }
}

extension MergePolicy {
    /// How this policy resolves a conflict on `object`, whose current row
    /// (its changes applied) is `row`. Nil for `.error`: the save fails.
    func resolve(_ conflict: RowConflict, _ object: ManagedObject,
                 row: (values: [PredicateValue], toOne: [Int64?])?) -> ConflictResolution? {
        guard self != .error else { return nil }
        let entity = object.description_.entity
        let read = self == .storeTrump ? object.node.map { node in entity.attributes.indices.map { node.value(at: $0) } } : nil
        return resolve(conflict, ConflictingChange(entity: entity, isDeleted: object.isDeleted, attributeSlots: object.changedValues.keys.sorted(),
                                                   toOneSlots: object.changedToOne.keys.sorted(), read: read, row: row))
    }

    /// How this policy resolves a conflict on a change. Nil for `.error`: the save fails.
    ///
    /// - Parameters:
    ///   - conflict: The row as the store has it now.
    ///   - change: What the save changes of it.
    /// - Returns: The resolution, or nil.
    package func resolve(_ conflict: RowConflict, _ change: ConflictingChange) -> ConflictResolution? {
        guard self != .error else { return nil }
        guard let current = conflict.current else {
            // Deleted in the store.
            return change.isDeleted || self == .storeTrump || self == .rollback ? .gone : .reinsert
        }
        if self == .rollback { return .discard }
        if change.isDeleted { return self == .storeTrump ? .discard : .delete }
        guard let row = change.row else { return .discard }
        let entity = change.entity
        var attributeSlots: [Int]
        var toOneSlots: [Int]
        switch self {
        case .overwrite:
            attributeSlots = entity.attributes.map(\.slot)
            toOneSlots = entity.relationships.filter { !$0.isToMany }.map(\.slot)
        default:
            attributeSlots = change.attributeSlots
            toOneSlots = change.toOneSlots
            if self == .storeTrump, let read = change.read {
                // Only the changes to properties the store left as the context read them.
                attributeSlots.removeAll { current.value(at: $0) != read[$0] }
            }
        }
        var values = current.values
        for slot in attributeSlots { values[slot] = row.values[slot] }
        var toOne = current.toOne
        for slot in toOneSlots { toOne[slot] = row.toOne[slot] }
        return .write(expectedVersion: current.version, attributeSlots: attributeSlots, toOneSlots: toOneSlots,
                      values: values, toOne: toOne)
    }
}
