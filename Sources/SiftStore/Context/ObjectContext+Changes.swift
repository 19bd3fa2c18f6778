// Store stage: changing objects in a context — insert, update, delete with
// the model's delete rules, inverse relationships kept in step, rollback.

import Foundation
import Sift

extension ObjectContext {
    /// A new object of `entityName`, with a temporary ID until it is saved.
    ///
    /// - Parameter entityName: The name of the new object's entity.
    /// - Returns: The new object, registered in the context, its attributes at their default values.
    /// - Throws: `StoreError.unknownEntity` when the model has no entity called `entityName`.
    public func insert(_ entityName: String) throws(StoreError) -> ManagedObject {
        guard let index = descriptionIndexes[entityName] else { throw .unknownEntity(entityName) }
        nextTemporaryKey -= 1
        let object = ManagedObject(primaryKey: nextTemporaryKey, description: descriptions[index])
        object.isInserted = true
        // Every attribute set, to its default, and every to-one empty: the
        // row the save writes, changed in place (the defaults copied at the first change).
        let changes = object.makeChanges()
        changes.values = SlotChanges(all: descriptions[index].defaultValues, filler: .null)
        changes.toOne = SlotChanges(count: descriptions[index].toOneCount, filler: nil)
        register(object)
        changed.insert(object)
        return object
    }

    /// Whether any object has unsaved changes.
    public var hasChanges: Bool { changed.contains { $0.hasChanges } }

    /// Objects inserted and not saved yet.
    public var insertedObjects: [ManagedObject] { Self.ordered(changed.objects.filter(\.isInserted)) }
    /// Objects changed and not saved yet (not inserted, not deleted).
    public var updatedObjects: [ManagedObject] {
        Self.ordered(changed.objects.filter { !$0.isInserted && !$0.isDeleted && $0.hasValueChanges })
    }
    /// Objects deleted and not saved yet.
    public var deletedObjects: [ManagedObject] { Self.ordered(changed.objects.filter(\.isDeleted)) }

    /// Objects by entity, then by key (temporary keys in the order they were
    /// given): the order saves write in. Sorts plain keys, not objects.
    static func ordered(_ objects: [ManagedObject]) -> [ManagedObject] {
        // Objects changed in the order of their keys (a fetch's, changed in
        // turn) are in order already: one pass, no sort.
        var inOrder = true
        var previous = (entity: Int.min, key: UInt64.min)
        for object in objects {
            let id = object.objectID
            let next = (entity: id.entity, key: id.primaryKey.magnitude)
            if next < previous {
                inOrder = false
                break
            }
            previous = next
        }
        if inOrder { return objects }
        var keys = objects.indices.map { (objects[$0].objectID.entity, objects[$0].objectID.primaryKey.magnitude, $0) }
        keys.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        return keys.map { objects[$0.2] }
    }

    /// Notes that `object` is about to change.
    /// Marks an unchanged object for conflict detection at the next save
    /// (Core Data's `detectConflicts(for:)`): the save fails with a conflict
    /// (or its merge policy decides) when another context or process changed
    /// or deleted the object's row since this context read it, as for a
    /// changed object. The version read is the object's now (a fault fires).
    /// A saved check moves the row's version on, like a write.
    ///
    /// ```swift
    /// let department = try context.fetch(request)[0]
    /// try context.detectConflicts(for: department)   // the raise below is only valid for this department
    /// try employee.setValue(90_000.0, forKey: "salary")
    /// try context.save()                             // conflicts if the department changed meanwhile
    /// ```
    ///
    /// - Parameter object: An object of this context; an inserted or deleted one needs no check.
    /// - Throws: `StoreError`: `.contextGone` for an object of another context; `.objectNotFound` or the
    ///   store's error when its fault fires and fails.
    public func detectConflicts(for object: ManagedObject) throws(StoreError) {
        guard try object.context() === self else { throw .contextGone(object.reference) }
        guard !object.isInserted, !object.isDeleted else { return }
        _ = try object.values()
        object.isLocked = true
        changed.insert(object)
    }

    /// Unchanged objects marked for conflict detection, in save order.
    var lockedObjects: [ManagedObject] {
        Self.ordered(changed.objects.filter { $0.isLocked && !$0.isInserted && !$0.isDeleted && !$0.hasValueChanges })
    }

    func willChange(_ object: ManagedObject) throws(StoreError) {
        guard !object.isDeleted else { throw .objectDeleted(object.reference) }
        if !object.isInserted { _ = try object.values() }
        changed.insert(object)
    }

    func destination(_ relationship: Relationship) -> Entity {
        store.model.entity(named: relationship.destination)!
    }

    /// The inverse of a relationship of `owner`, from its description when
    /// it has the relationship (no entity looked up and copied).
    func inverse(_ relationship: Relationship, of owner: ManagedObject) -> Relationship? {
        guard let name = relationship.inverse else { return nil }
        let description = owner.description_
        if description.destinations[relationship.name] != nil { return description.inverses[relationship.name] }
        return destination(relationship).relationship(named: name)
    }

    /// The object of `key` at the destination of a relationship of `owner`.
    func object(at relationship: Relationship, of owner: ManagedObject, key: Int64) -> ManagedObject {
        guard let destination = owner.description_.destinations[relationship.name] else {
            return object(destination(relationship), key)
        }
        return object(for: ObjectID(entity: destination.index, root: destination.root, primaryKey: key))
    }

    func object(_ entity: Entity, _ key: Int64) -> ManagedObject {
        object(for: ObjectID(entity: entity, primaryKey: key))
    }

    // MARK: One side of a link

    /// Sets one to-one slot, without touching the inverse.
    func assign(_ object: ManagedObject, _ relationship: Relationship, _ target: Int64?) throws(StoreError) {
        try willChange(object)
        object.changedToOne[relationship.slot] = target
    }

    /// Adds to one to-many slot, without touching the inverse.
    func add(_ object: ManagedObject, _ relationship: Relationship, _ target: Int64) throws(StoreError) {
        try willChange(object)
        if object.removedToMany[relationship.slot]?.remove(target) != nil { return }
        object.addedToMany[relationship.slot, default: []].append(target)
    }

    /// Removes from one to-many slot, without touching the inverse.
    func remove(_ object: ManagedObject, _ relationship: Relationship, _ target: Int64) throws(StoreError) {
        try willChange(object)
        if object.addedToMany[relationship.slot]?.remove(target) != nil { return }
        object.removedToMany[relationship.slot, default: []].insert(target)
    }

    // MARK: Both sides

    /// `object.relationship = target`, with the inverse kept in step: the old
    /// target loses `object`, the new one gains it (and, one-to-one, the new
    /// target's old partner loses it).
    func setToOne(_ object: ManagedObject, _ relationship: Relationship, _ target: ManagedObject?) throws(StoreError) {
        let old = try object.toOneKey(relationship)
        guard old != target?.objectID.primaryKey else { return }
        try assign(object, relationship, target?.objectID.primaryKey)
        guard let inverse = inverse(relationship, of: object) else { return }
        let me = object.objectID.primaryKey
        if let old {
            let previous = self.object(at: relationship, of: object, key: old)
            if inverse.isToMany { try remove(previous, inverse, me) } else { try assign(previous, inverse, nil) }
        }
        if let target {
            if inverse.isToMany {
                try add(target, inverse, me)
            } else {
                if let partner = try target.toOneKey(inverse), partner != me {
                    try assign(self.object(object.description_.entity, partner), relationship, nil)
                }
                try assign(target, inverse, me)
            }
        }
    }

    /// Adds `member` to `owner.relationship`, with the inverse kept in step.
    func link(_ owner: ManagedObject, _ relationship: Relationship, _ member: ManagedObject) throws(StoreError) {
        if let inverse = inverse(relationship, of: owner), !inverse.isToMany {
            // The member's to-one side holds the link.
            try setToOne(member, inverse, owner)
            return
        }
        try add(owner, relationship, member.objectID.primaryKey)
        if let inverse = inverse(relationship, of: owner) { try add(member, inverse, owner.objectID.primaryKey) }
    }

    /// Removes `member` from `owner.relationship`, with the inverse kept in step.
    func unlink(_ owner: ManagedObject, _ relationship: Relationship, _ member: ManagedObject) throws(StoreError) {
        if let inverse = inverse(relationship, of: owner), !inverse.isToMany {
            if try member.toOneKey(inverse) == owner.objectID.primaryKey { try setToOne(member, inverse, nil) }
            return
        }
        try remove(owner, relationship, member.objectID.primaryKey)
        if let inverse = inverse(relationship, of: owner) { try remove(member, inverse, owner.objectID.primaryKey) }
    }

    // MARK: Delete

    /// Deletes an object, applying its relationships' delete rules: nullify
    /// (the related objects forget it), cascade (they are deleted too), deny
    /// (the save fails while they exist), no action.
    ///
    /// - Parameter object: An object of this context; deleting one already deleted does nothing.
    /// - Throws: `StoreError`: `.objectNotFound` when a fault it reads (the object, or a related object) has
    ///   lost its row; `.objectDeleted` when a related object to change was deleted; `.contextGone` when an
    ///   object's context was released; the store's error when reading fails. A deny rule does not throw here:
    ///   the save fails.
    public func delete(_ object: ManagedObject) throws(StoreError) {
        guard !object.isDeleted else { return }
        if !object.isInserted { _ = try object.values() }
        for relationship in object.description_.entity.relationships {
            let targets: [ManagedObject]
            if relationship.isToMany {
                targets = try object.objects(forKey: relationship.name)
            } else {
                targets = [try object.object(forKey: relationship.name)].compactMap { $0 }
            }
            switch relationship.deleteRule {
            case .nullify:
                guard let inverse = inverse(relationship, of: object) else { continue }
                for target in targets where !target.isDeleted {
                    if inverse.isToMany {
                        try remove(target, inverse, object.objectID.primaryKey)
                    } else if try target.toOneKey(inverse) == object.objectID.primaryKey {
                        try assign(target, inverse, nil)
                    }
                }
            case .cascade:
                object.isDeleted = true  // so cycles stop here
                for target in targets { try delete(target) }
            case .deny:
                if !targets.filter({ !$0.isDeleted }).isEmpty {
                    denied[object.objectID, default: []].append(SaveValidationFailure(
                        object: "<\(object.description_.entity.name) \(object.objectID.primaryKey)>", property: relationship.name,
                        reason: "cannot be deleted while '\(relationship.name)' is not empty (deny rule)"))
                }
            case .noAction:
                continue
            }
        }
        object.isDeleted = true
        if object.isInserted {
            // Never saved: it simply goes.
            changed.remove(object)
            unregisterObject(object)
        } else {
            changed.insert(object)
        }
    }

    // MARK: Rollback

    /// Discards every unsaved change: inserted objects go, deleted ones come
    /// back, changed ones show their saved values again.
    public func rollback() {
        for object in changed.objects {
            object.discardChanges()
            object.isDeleted = false
            if object.isInserted { unregisterObject(object) }
        }
        changed.removeAll()
        denied = [:]
        refusedChanges = []
    }

    /// Remembers a value a `@Managed` property refused, for the next save to throw.
    func refuse(_ error: StoreError) {
        refusedChanges.append(error)
    }
}

/// One reason a save was refused before it touched the store.
public struct SaveValidationFailure: Hashable, Sendable, CustomStringConvertible {
    /// The object, as described: `<Employee -1 (inserted)>`.
    public var object: String
    /// The property at fault.
    public var property: String
    /// What is wrong.
    public var reason: String

    /// A failure of `property` of `object`, for `reason`.
    ///
    /// - Parameters:
    ///   - object: The object, as described (`<Employee -1 (inserted)>`).
    ///   - property: The property at fault.
    ///   - reason: What is wrong.
    public init(object: String, property: String, reason: String) {
        self.object = object
        self.property = property
        self.reason = reason
    }

    public var description: String { "\(object).\(property): \(reason)" }
}
