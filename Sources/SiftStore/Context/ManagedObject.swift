// Store stage: objects of a context, with the changes not yet saved.
//
// An object's snapshot is the row-cache node it was last read from (its
// values and the row version it saw). Unsaved changes sit beside it:
// attribute values by slot, to-one targets by slot, and to-many additions
// and removals by slot (so a to-many relationship can change without
// loading it). Reading gives the snapshot with the changes applied.

import Foundation
import OrderedCollections
import Sift

/// An object of a context: a fault until its values are first read.
///
/// ```swift
/// let employee = try context.fetch(FetchRequest(entityName: "Employee"))[0]
/// let name = try employee.value(forKey: "name")                 // fires the fault: .string("…")
/// let department = try employee.object(forKey: "department")    // another object of the context
/// try employee.setValue(.int(41), forKey: "age")                // saved by the context's next save()
/// ```
public final class ManagedObject: CustomStringConvertible {
    /// The object's identity: temporary (a negative key) until its first save.
    ///
    /// (The object keeps its key; its entity and root are its description's,
    /// so that an object is 56 bytes, held in a 64-byte block.)
    public internal(set) var objectID: ObjectID {
        @inlinable get {
            ObjectID(entity: Int(description_.entityIndex), root: Int(description_.rootIndex), primaryKey: primaryKey)
        }
        // (Only the key changes: a save gives a permanent one. The entity
        // changes with the description, in `learnEntity`.)
        set { primaryKey = newValue.primaryKey }
    }
    /// The object's primary key: temporary (negative) until its first save.
    @exclusivity(unchecked) @usableFromInline var primaryKey: Int64
    /// The object's entity. An object reached through a relationship whose
    /// destination has subentities starts as a fault of the destination
    /// entity, and has its own once its row is read.
    public var entity: Entity { description_.entity }
    /// The entity and its lookups, shared by the context's objects of it;
    /// and through it the context that holds the object, weakly: an object
    /// does not keep its context alive. After its context is gone, an object
    /// a fetch returned still reads its attributes from the row it was
    /// fetched with; anything that needs the context (a fault never read,
    /// relationships, changes) is the typed error `StoreError.contextGone`,
    /// and nil from the subscripts.
    @exclusivity(unchecked) @usableFromInline var description_: EntityDescription
    /// The unsaved changes, made the first time the object changes: an
    /// object that is only read holds one nil reference, not four tables.
    @exclusivity(unchecked) @usableFromInline var changes: ObjectChanges?

    /// The object's changes, made now if it has none yet.
    @usableFromInline
    func makeChanges() -> ObjectChanges {
        if let changes { return changes }
        let made = ObjectChanges()
        changes = made
        return made
    }

    /// Unsaved attribute values, by slot.
    var changedValues: SlotChanges<PredicateValue> {
        get { changes?.values ?? SlotChanges(filler: .null) }
        set { makeChanges().values = newValue }
        _modify { let changes = makeChanges(); yield &changes.values }
    }
    /// Unsaved to-one targets (primary keys, negative for unsaved objects), by slot.
    var changedToOne: SlotChanges<Int64?> {
        get { changes?.toOne ?? SlotChanges(filler: nil) }
        set { makeChanges().toOne = newValue }
        _modify { let changes = makeChanges(); yield &changes.toOne }
    }
    /// Unsaved to-many additions, by slot.
    var addedToMany: [Int: OrderedSet<Int64>] {
        get { changes?.addedToMany ?? [:] }
        set { makeChanges().addedToMany = newValue }
        _modify { let changes = makeChanges(); yield &changes.addedToMany }
    }
    /// Unsaved to-many removals, by slot.
    var removedToMany: [Int: Set<Int64>] {
        get { changes?.removedToMany ?? [:] }
        set { makeChanges().removedToMany = newValue }
        _modify { let changes = makeChanges(); yield &changes.removedToMany }
    }
    /// The snapshot: the values and version last read, once fired.
    /// (Reads of it and of the changes are the hot path of every value
    /// read; a context is confined to one thread, so they skip the
    /// runtime's exclusivity bookkeeping. Declared just before the flags,
    /// which fill the space the row leaves in its last word.)
    ///
    /// The node is kept as its batch, retained by hand, and its row: a read
    /// borrows the batch (`_withUnsafeGuaranteedRef`) where a `RowNode`
    /// copy would retain and release it, two atomic operations on the one
    /// object every row of a fetch shares.
    @usableFromInline var storedNode: RowNode? {
        get { storedBatch.map { RowNode(batch: $0.takeUnretainedValue(), row: Int(storedRow)) } }
        set {
            let old = storedBatch
            if let newValue {
                storedBatch = Unmanaged.passRetained(newValue.batch)
                storedRow = Int32(truncatingIfNeeded: newValue.row)
            } else {
                storedBatch = nil
            }
            old?.release()
        }
    }
    /// The snapshot's batch, retained (released when it changes and in `deinit`).
    @exclusivity(unchecked) @usableFromInline var storedBatch: Unmanaged<RowBatch>?
    /// The snapshot's row in `storedBatch`.
    @exclusivity(unchecked) @usableFromInline var storedRow: Int32 = 0
    /// The object's flags, one bit each, in the space the row leaves in
    /// its last word (the object stays 56 bytes).
    @exclusivity(unchecked) @usableFromInline var flags: Flags = []

    /// The bits of `flags`.
    @usableFromInline
    struct Flags: OptionSet, Sendable {
        @usableFromInline let rawValue: UInt8
        @usableFromInline init(rawValue: UInt8) { self.rawValue = rawValue }
        // (Computed, not stored: a stored static is a global read through
        // an accessor that checks it is initialized, at every read.)
        @inlinable static var pendingFault: Flags { Flags(rawValue: 1 << 0) }
        static var inserted: Flags { Flags(rawValue: 1 << 1) }
        static var deleted: Flags { Flags(rawValue: 1 << 2) }
        static var locked: Flags { Flags(rawValue: 1 << 3) }
        /// Among the context's changed objects (`ChangedObjects`).
        static var changed: Flags { Flags(rawValue: 1 << 4) }
        /// In the context's list of changed objects, perhaps no longer changed.
        static var listed: Flags { Flags(rawValue: 1 << 5) }
        /// A probe of no context that records the keys read from it, to name a view's key paths
        /// (SwiftPredicates/KeyPathNames.swift).
        static var probe: Flags { Flags(rawValue: 1 << 6) }
    }

    /// Whether `storedNode` is the row a fetch returned this fault with,
    /// not read yet: the object is a fault, and holds the row's registration
    /// with the row cache already, so firing it needs no lookup while the
    /// cache has replaced nothing since.
    @inlinable
    var isPendingFault: Bool {
        @inline(__always) get { flags.contains(.pendingFault) }
        @inline(__always) set { if newValue { flags.insert(.pendingFault) } else { flags.remove(.pendingFault) } }
    }
    /// Whether the object was inserted and not saved yet.
    public internal(set) var isInserted: Bool {
        get { flags.contains(.inserted) }
        set { if newValue { flags.insert(.inserted) } else { flags.remove(.inserted) } }
    }
    /// Whether the object was deleted and the delete not saved yet.
    public internal(set) var isDeleted: Bool {
        get { flags.contains(.deleted) }
        set { if newValue { flags.insert(.deleted) } else { flags.remove(.deleted) } }
    }
    /// Whether the next save checks the object's version even if it is
    /// unchanged (``ObjectContext/detectConflicts(for:)``).
    var isLocked: Bool {
        get { flags.contains(.locked) }
        set { if newValue { flags.insert(.locked) } else { flags.remove(.locked) } }
    }

    /// The snapshot: the values and version last read; nil for a fault.
    @inlinable
    var node: RowNode? {
        get { isPendingFault ? nil : storedNode }
        set {
            storedNode = newValue
            isPendingFault = false
        }
    }

    /// Whether the object holds a registration with the row cache: it has
    /// a snapshot, or is a fault holding the row it was fetched with.
    var holdsRegistration: Bool { storedBatch != nil }

    /// An object of `description`'s entity (whose context holds it), with the key `primaryKey`.
    init(primaryKey: Int64, description: EntityDescription) {
        self.primaryKey = primaryKey
        self.description_ = description
    }

    /// An object of a fetch, taking over a reference to its description and
    /// one to its row's batch, each retained for it already (all of a
    /// batch's objects' at once): a fault of the fetch, or fired.
    @inline(__always)
    init(primaryKey: Int64, retained description: Unmanaged<EntityDescription>, batch: Unmanaged<RowBatch>, row: Int, asFault: Bool) {
        self.primaryKey = primaryKey
        self.description_ = description.takeRetainedValue()
        storedBatch = batch
        storedRow = Int32(truncatingIfNeeded: row)
        if asFault { flags = .pendingFault }
    }

    /// An object of `description`'s entity (whose context holds it), with `objectID`'s key.
    convenience init(objectID: ObjectID, description: EntityDescription) {
        self.init(primaryKey: objectID.primaryKey, description: description)
    }

    /// Takes row `row` of a batch, retained for it, as the snapshot of an
    /// object that has none (a fetch's new object): a fault of the fetch,
    /// or fired.
    @inline(__always)
    func adopt(_ batch: Unmanaged<RowBatch>, row: Int, asFault: Bool) {
        storedBatch = batch
        storedRow = Int32(truncatingIfNeeded: row)
        isPendingFault = asFault
    }

    deinit { storedBatch?.release() }

    /// The value in an attribute slot of the snapshot, read in place; nil
    /// when the object has no snapshot (a fault).
    @inlinable @inline(__always)
    func snapshotValue(atSlot slot: Int) -> PredicateValue? {
        guard !isPendingFault, let batch = storedBatch else { return nil }
        let row = Int(storedRow)
        return batch._withUnsafeGuaranteedRef { $0.value(slot: slot, row: row) }
    }

    /// The context that holds the object, or `StoreError.contextGone` when it
    /// no longer exists.
    func context() throws(StoreError) -> ObjectContext {
        guard let owner = description_.context else { throw .contextGone(reference) }
        return owner
    }

    /// Whether the object's values are not loaded yet.
    public var isFault: Bool { node == nil && !isInserted }

    /// Whether the object has unsaved changes.
    public var hasChanges: Bool {
        isInserted || isDeleted || hasValueChanges
    }

    /// Whether attributes or relationships changed (not counting insert and delete).
    var hasValueChanges: Bool {
        !(changes?.isEmpty ?? true)
    }

    /// Whether members were added to or removed from a to-many relationship
    /// (read in place: the tables are not copied out).
    var hasToManyChanges: Bool {
        guard let changes else { return false }
        return !changes.addedToMany.isEmpty || !changes.removedToMany.isEmpty
    }

    /// The object as a reference, for predicates (`SELF == %@`).
    public var reference: ObjectReference { ObjectReference(entity: description_.entity.name, id: objectID.primaryKey) }

    /// The snapshot, firing the fault if needed.
    func values() throws(StoreError) -> RowNode {
        if let node { return node }
        if isInserted {
            let description = description_
            return RowNode(id: objectID, version: 0, values: description.defaultValues,
                           toOne: Array(repeating: nil, count: description.toOneCount),
                           toMany: Array(repeating: [], count: description.toManyCount))
        }
        guard let owner = description_.context else {
            // The context is gone. A fault a fetch returned still holds the row the fetch read: its values are
            // read from it (what firing it would have given, bar a save made since), so the objects of a
            // context used for one fetch answer every value they have, never nil or `.contextGone`.
            if isPendingFault, let fetched = storedNode { return fetched }
            throw .contextGone(reference)
        }
        try owner.fire(self)
        return node!
    }

    func attribute(_ key: String) throws(StoreError) -> Attribute {
        if let slot = description_.attributeSlot(named: key), let attribute = description_.attributesBySlot[slot] { return attribute }
        if let attribute = description_.entity.attribute(named: key) { return attribute }
        // Perhaps a subentity's: the row says which entity the object is.
        if try knowsOwnEntity(), let attribute = description_.entity.attribute(named: key) { return attribute }
        throw .unknownKey(key, entity: description_.entity.name)
    }

    func relationship(_ key: String, toMany: Bool) throws(StoreError) -> Relationship {
        var relationship = description_.relationships[key]
        if relationship == nil, try knowsOwnEntity() { relationship = description_.relationships[key] }
        guard let relationship, relationship.isToMany == toMany else {
            throw .unknownRelationship(key, entity: description_.entity.name)
        }
        return relationship
    }

    /// Fires the fault of an object that may be of a subentity of the
    /// entity it was reached as; false when its entity has none to be.
    private func knowsOwnEntity() throws(StoreError) -> Bool {
        guard !description_.entity.subentities.isEmpty, isFault else { return false }
        try context().fire(self)
        return true
    }

    /// The current value of the attribute `key`, unsaved changes included.
    ///
    /// - Parameter key: The attribute's name.
    /// - Returns: The attribute's value: the unsaved change, else the saved value; `.null` when it has none.
    /// - Throws: `StoreError`: `.unknownKey` when the object has no attribute `key`; `.objectNotFound` when its
    ///   fault fires and its row is gone; `.contextGone` when its context was released; the store's error when
    ///   reading the row fails.
    public func value(forKey key: String) throws(StoreError) -> PredicateValue {
        if flags.contains(.probe) { return probeRead(key, .null) }
        // A subentity's attribute, or none, the slow way.
        if let slot = description_.attributeSlot(named: key) { return try value(atSlot: slot) }
        return try value(atSlot: try attribute(key).slot)
    }

    /// The value of an attribute, or nil when the key is unknown or the
    /// object cannot be fired.
    ///
    /// - Parameter key: The attribute's name.
    /// - Returns: The attribute's value, as `value(forKey:)` gives it; nil when that throws.
    @inlinable @inline(__always)
    public subscript(key: String) -> PredicateValue? {
        // Inlined where it is read: an unchanged, fired object, with a key
        // whose words are an attribute's name's, is a load from its batch's
        // column, as a read by handle is. Everything else takes the call below.
        if changes == nil, !isPendingFault, let batch = storedBatch {
            let description = description_
            if let slot = description.slot(sameAs: key) {
                let row = Int(storedRow)
                let value = batch._withUnsafeGuaranteedRef { batch -> PredicateValue? in
                    batch.entity == Int(description.entityIndex) ? batch.value(slot: slot, row: row) : Optional.none
                }
                if let value { return value }
            }
        }
        return value(orNilForKey: key)
    }

    /// Fires the object in place when it is a fault fetched with its row,
    /// and that row is still the cache's (`ObjectContext.firePendingInPlace`);
    /// whether it did. A read's first step on a fault of a fetch.
    @usableFromInline @inline(never)
    func firedInPlace() -> Bool {
        guard let context = description_.unretainedContext else { return false }
        return context._withUnsafeGuaranteedRef { $0.firePendingInPlace(self) }
    }

    /// `value(forKey:)`, nil when it throws: the subscript's path for changed objects, faults and other keys.
    @usableFromInline @inline(never)
    func value(orNilForKey key: String) -> PredicateValue? {
        // A fault of a fetch, read for the first time: fired in place, then read as the subscript reads.
        if isPendingFault, changes == nil, firedInPlace(), let slot = description_.slot(sameAs: key),
           let batch = storedBatch, batch.takeUnretainedValue().entity == Int(description_.entityIndex) {
            let row = Int(storedRow)
            return batch._withUnsafeGuaranteedRef { $0.value(slot: slot, row: row) }
        }
        return try? value(forKey: key)
    }

    /// The value of an attribute, from its description.
    ///
    /// - Parameter attribute: An attribute of the object's entity (or of an ancestor of it).
    /// - Returns: The attribute's value: the unsaved change, else the saved value.
    /// - Throws: `StoreError`: `.unknownKey` when the object has no such attribute; `.objectNotFound` when its
    ///   fault fires and its row is gone; `.contextGone` when its context was released; the store's error when
    ///   reading the row fails.
    public func value(for attribute: Attribute) throws(StoreError) -> PredicateValue {
        let slot = attribute.slot
        let names = description_.attributeNames
        guard slot >= 0, slot < names.count, names[slot] == attribute.name else { return try value(forKey: attribute.name) }
        return try value(atSlot: slot)
    }

    /// The value of an attribute, or nil when the object has no such
    /// attribute or cannot be fired.
    ///
    /// - Parameter attribute: An attribute of the object's entity (or of an ancestor of it).
    /// - Returns: The attribute's value, as `value(for:)` gives it; nil when that throws.
    public subscript(attribute: Attribute) -> PredicateValue? {
        try? value(for: attribute)
    }

    /// The value of an attribute resolved once, without looking its name
    /// up: the fastest read.
    ///
    /// ```swift
    /// guard let age = context.model.entity(named: "Employee")?.handle(forAttribute: "age") else { return }
    /// let ages = employees.compactMap { $0[age] }
    /// ```
    ///
    /// A handle made from another entity is looked up by its name (from an
    /// ancestor entity, its slot is the same).
    ///
    /// - Parameter handle: The attribute, resolved by the entity's `handle(forAttribute:)`.
    /// - Returns: The attribute's value: the unsaved change, else the saved value.
    /// - Throws: `StoreError`: `.unknownKey` when the object has no such attribute; `.objectNotFound` when its
    ///   fault fires and its row is gone; `.contextGone` when its context was released; the store's error when
    ///   reading the row fails.
    public func value(for handle: AttributeHandle) throws(StoreError) -> PredicateValue {
        if handle.entity == Int(description_.entityIndex) { return try value(atSlot: handle.slot) }
        let names = description_.attributeNames
        guard handle.slot >= 0, handle.slot < names.count, names[handle.slot] == handle.name else {
            return try value(forKey: handle.name)
        }
        return try value(atSlot: handle.slot)
    }

    /// The value of a resolved attribute, or nil when the object has no
    /// such attribute or cannot be fired.
    ///
    /// - Parameter handle: The attribute, resolved by the entity's `handle(forAttribute:)`.
    /// - Returns: The attribute's value, as `value(for:)` gives it; nil when that throws.
    @inlinable @inline(__always)
    public subscript(handle: AttributeHandle) -> PredicateValue? {
        // Inlined where it is read: an unchanged, fired object of the
        // handle's entity is a load from its batch's column. Everything
        // else takes the call below, kept out of line so that this stays small.
        // (The batch's entity is the row's layout, read with the columns it
        // points to: no load of the description on the way.)
        if changes == nil, !isPendingFault, let batch = storedBatch {
            let row = Int(storedRow)
            let value = batch._withUnsafeGuaranteedRef { batch -> PredicateValue? in
                batch.entity == handle.entity ? batch.value(slot: handle.slot, row: row) : Optional.none
            }
            if let value { return value }
        }
        return value(orNilFor: handle)
    }

    /// `value(for:)`, nil when it throws: the subscript's path for changed objects, faults and other entities.
    @usableFromInline @inline(never)
    func value(orNilFor handle: AttributeHandle) -> PredicateValue? {
        try? value(for: handle)
    }

    /// The value of a resolved attribute as `type`: nil when it has none.
    ///
    /// ```swift
    /// let age = employee.entity.handle(forAttribute: "age")!
    /// let years = try employee.value(for: age, as: Int.self)      // Int?
    /// ```
    ///
    /// - Parameters:
    ///   - handle: The attribute, resolved by the entity's `handle(forAttribute:)`.
    ///   - type: The Swift type to read it as.
    /// - Returns: The value as `type`; nil when the attribute has no value.
    /// - Throws: `StoreError`: `.wrongType` when the value is not one `type` holds (a string read as `Int`);
    ///   otherwise as ``value(for:)-(AttributeHandle)``.
    public func value<T: PredicateValueRepresentable>(for handle: AttributeHandle, as type: T.Type) throws(StoreError) -> T? {
        try typed(try value(for: handle), of: handle.name)
    }

    /// The value of a resolved attribute as `type`, or nil when it has
    /// none, is not one `type` holds, or the object cannot be fired: the
    /// fastest read of all.
    ///
    /// ```swift
    /// guard let age = context.model.entity(named: "Employee")?.handle(forAttribute: "age") else { return }
    /// let total = employees.reduce(0) { $0 + ($1[age, as: Int.self] ?? 0) }
    /// ```
    ///
    /// An unchanged, fired object reads a value its column stores as
    /// `type` (an integer as `Int` or `Int64`, a double as `Double`, a
    /// Boolean as `Bool`, a date as `Date`, a string as `String`) with a
    /// load from the column, building no `PredicateValue` on the way. Any
    /// other read gives what ``value(for:as:)`` gives.
    ///
    /// - Parameters:
    ///   - handle: The attribute, resolved by the entity's `handle(forAttribute:)`.
    ///   - type: The Swift type to read it as.
    /// - Returns: The value as `type`, or nil.
    @inlinable @inline(__always)
    public subscript<T: PredicateValueRepresentable>(handle: AttributeHandle, as type: T.Type) -> T? {
        if changes == nil, !isPendingFault, let batch = storedBatch {
            let row = Int(storedRow)
            let value = batch._withUnsafeGuaranteedRef { batch -> T?? in
                batch.entity == handle.entity ? batch.value(slot: handle.slot, row: row, as: T.self) : .none
            }
            if let value { return value }
        }
        return value(orNilFor: handle, as: T.self)
    }

    /// `value(for:as:)`, nil when it throws: the typed subscript's path for
    /// changed objects, faults, other entities and converted values.
    @usableFromInline @inline(never)
    func value<T: PredicateValueRepresentable>(orNilFor handle: AttributeHandle, as type: T.Type) -> T? {
        (try? value(for: handle, as: type)) ?? nil
    }

    /// The value in an attribute slot: the unsaved change, else the snapshot.
    @inline(__always)
    private func value(atSlot slot: Int) throws(StoreError) -> PredicateValue {
        if changes != nil, let changed = changes.unsafelyUnwrapped.values[slot] { return changed }
        if let value = snapshotValue(atSlot: slot) { return value }
        return try values().value(at: slot)
    }

    /// The current target key of a to-one slot.
    func toOneKey(_ relationship: Relationship) throws(StoreError) -> Int64? {
        if let changed = changes?.toOne[relationship.slot] { return changed }
        // An inserted object has no saved row: a to-one not set is empty.
        if isInserted, node == nil { return nil }
        return try values().toOneKey(at: relationship.slot)
    }

    /// The current member keys of a to-many slot.
    func toManyKeys(_ relationship: Relationship) throws(StoreError) -> [Int64] {
        let base = isInserted ? [] : try context().toManyKeys(of: self, relationship)
        let removed = removedToMany[relationship.slot] ?? []
        let added = addedToMany[relationship.slot] ?? []
        guard !removed.isEmpty || !added.isEmpty else { return base }
        let kept = base.filter { !removed.contains($0) && !added.contains($0) }
        return kept + added.elements
    }

    /// The object of the to-one relationship `key` (a fault, unless the
    /// destination has subentities: then its row is read to know its entity), or nil.
    ///
    /// - Parameter key: The to-one relationship's name.
    /// - Returns: The related object of this context, or nil when the relationship is empty.
    /// - Throws: `StoreError`: `.unknownRelationship` when `key` is not a to-one relationship of the object;
    ///   `.objectNotFound` when a fault fires and its row is gone; `.contextGone` when the object's context was
    ///   released; the store's error when reading fails.
    public func object(forKey key: String) throws(StoreError) -> ManagedObject? {
        if flags.contains(.probe) { return probeRead("\u{1}" + key, nil) }
        // The entity's own to-ones are found by a scan of a few names; a
        // subentity's, or a wrong key, the slow way.
        if let link = description_.toOneLink(named: key) {
            let target: Int64?
            if let changes, let changed = changes.toOne[link.slot] {
                target = changed
            } else if let batch = storedBatch, !isPendingFault || firedInPlace() {
                // Read in place from the snapshot's batch.
                let row = Int(storedRow)
                target = batch._withUnsafeGuaranteedRef { $0.toOneKey(slot: link.slot, row: row) }
            } else {
                target = try values().toOneKey(at: link.slot)
            }
            guard let target else { return nil }
            guard let context = description_.unretainedContext else { throw .contextGone(reference) }
            let id = ObjectID(entity: link.destination, root: link.root, primaryKey: target)
            let object = context._withUnsafeGuaranteedRef { $0.object(for: id) }
            // It may be of a subentity: its row says which.
            if link.hasSubentities, object.isFault { try self.context().fire(object) }
            return object
        }
        let relationship = try relationship(key, toMany: false)
        guard let target = try toOneKey(relationship) else { return nil }
        let context = try context()
        guard let destination = description_.destinations[relationship.name] else {
            throw .unknownRelationship(key, entity: description_.entity.name)
        }
        let object = context.object(for: ObjectID(entity: destination.index, root: destination.root, primaryKey: target))
        // It may be of a subentity: its row says which.
        if destination.hasSubentities, object.isFault { try context.fire(object) }
        return object
    }

    /// The objects of the to-many relationship `key` (faults, unless the
    /// destination has subentities: then their rows are read, in one
    /// statement, to know their entities), loaded on first use with one statement.
    ///
    /// - Parameter key: The to-many relationship's name.
    /// - Returns: The related objects of this context, unsaved changes included.
    /// - Throws: `StoreError`: `.unknownRelationship` when `key` is not a to-many relationship of the object;
    ///   `.objectNotFound` when a fault fires and its row is gone; `.contextGone` when the object's context was
    ///   released; the store's error when reading fails.
    public func objects(forKey key: String) throws(StoreError) -> [ManagedObject] {
        if flags.contains(.probe) { return probeRead("\u{1}" + key, []) }
        let relationship = try relationship(key, toMany: true)
        let context = try context()
        let destination = context.store.model.entity(named: relationship.destination)!
        let objects = try toManyKeys(relationship).map { context.object(for: ObjectID(entity: destination, primaryKey: $0)) }
        // Some may be of subentities: their rows, read at once, say which.
        if !destination.subentities.isEmpty { try context.fireFaults(objects.filter(\.isFault)) }
        return objects
    }

    // MARK: Changing

    /// Sets an attribute. The change is saved with the context.
    ///
    /// - Parameters:
    ///   - value: The new value.
    ///   - key: The attribute's name.
    /// - Throws: `StoreError`: `.unknownKey` when the object has no attribute `key`; `.readOnlyAttribute` when
    ///   it is derived; `.objectDeleted` when the object was deleted in its context; `.contextGone` when its
    ///   context was released; `.objectNotFound` or the store's error when its fault fires and fails.
    public func setValue(_ value: PredicateValue, forKey key: String) throws(StoreError) {
        let attribute = try attribute(key)
        guard !attribute.isReadOnly else { throw .readOnlyAttribute(key, entity: description_.entity.name) }
        let context = try context()
        let checked = try context.checkedValue(value, for: attribute, of: description)
        try context.willChange(self)
        changedValues[attribute.slot] = checked
    }

    /// Sets an attribute from any value Sift converts (`Int`, `String`,
    /// `Date`, an optional of one, …). The change is saved with the context.
    ///
    /// ```swift
    /// let pages = 320
    /// try book.setValue(pages, forKey: "pages")
    /// try book.setValue(Optional<String>.none, forKey: "subtitle")
    /// ```
    ///
    /// - Parameters:
    ///   - value: The new value.
    ///   - key: The attribute's name.
    /// - Throws: `StoreError`: `.invalidValue` when the value is not of the attribute's type or outside its
    ///   range (an `Int` for a string, 100 000 for an `integer16`); otherwise as the `PredicateValue` overload does.
    public func setValue(_ value: some PredicateValueConvertible, forKey key: String) throws(StoreError) {
        try setValue(value.predicateValue, forKey: key)
    }

    /// The value of the attribute `key` as `type`: nil when it has none.
    ///
    /// ```swift
    /// let title = try book.value(forKey: "title", as: String.self)     // String?
    /// let pages = try book.value(forKey: "pages", as: Int.self)        // Int?
    /// ```
    ///
    /// - Parameters:
    ///   - key: The attribute's name.
    ///   - type: The Swift type to read it as.
    /// - Returns: The value as `type`; nil when the attribute has no value.
    /// - Throws: `StoreError`: `.wrongType` when the value is not one `type` holds (a string read as `Int`);
    ///   otherwise as ``value(forKey:)``.
    public func value<T: PredicateValueRepresentable>(forKey key: String, as type: T.Type) throws(StoreError) -> T? {
        try typed(try value(forKey: key), of: key)
    }

    /// The value of the attribute `property` as `T`: nil for nil; `.wrongType` when `T` does not hold it.
    private func typed<T: PredicateValueRepresentable>(_ value: PredicateValue, of property: String) throws(StoreError) -> T? {
        if case .null = value { return nil }
        guard let typed = T(predicateValue: value) else {
            throw .wrongType(property: property, entity: description_.entity.name, expected: "\(T.self)", found: value.kindDescription)
        }
        return typed
    }

    /// The value of an attribute as `type`, or nil when it has none, is
    /// not one `type` holds, or the object cannot be fired.
    ///
    /// ```swift
    /// let title = book["title", as: String.self]
    /// ```
    ///
    /// - Parameters:
    ///   - key: The attribute's name.
    ///   - type: The Swift type to read it as.
    /// - Returns: The value as `type`, or nil.
    public subscript<T: PredicateValueRepresentable>(key: String, as type: T.Type) -> T? {
        (try? value(forKey: key, as: type)) ?? nil
    }

    /// Sets a to-one relationship, keeping the inverse on both sides in step.
    ///
    /// - Parameters:
    ///   - object: The new related object, of the same context; nil to empty the relationship.
    ///   - key: The to-one relationship's name.
    /// - Throws: `StoreError`: `.unknownRelationship` when `key` is not a to-one relationship of the object;
    ///   `.objectDeleted` when an object to change was deleted in the context; `.contextGone` when the context
    ///   was released; `.objectNotFound` or the store's error when a fault fires and fails.
    public func setObject(_ object: ManagedObject?, forKey key: String) throws(StoreError) {
        let relationship = try relationship(key, toMany: false)
        try context().setToOne(self, relationship, object)
    }

    /// Adds an object to a to-many relationship, keeping the inverse in step.
    ///
    /// - Parameters:
    ///   - object: The object to add, of the same context.
    ///   - key: The to-many relationship's name.
    /// - Throws: `StoreError`: `.unknownRelationship` when `key` is not a to-many relationship of the object;
    ///   `.objectDeleted` when an object to change was deleted in the context; `.contextGone` when the context
    ///   was released; `.objectNotFound` or the store's error when a fault fires and fails.
    public func addObject(_ object: ManagedObject, forKey key: String) throws(StoreError) {
        let relationship = try relationship(key, toMany: true)
        try context().link(self, relationship, object)
    }

    /// Removes an object from a to-many relationship, keeping the inverse in step.
    ///
    /// - Parameters:
    ///   - object: The object to remove, of the same context.
    ///   - key: The to-many relationship's name.
    /// - Throws: `StoreError`: `.unknownRelationship` when `key` is not a to-many relationship of the object;
    ///   `.objectDeleted` when an object to change was deleted in the context; `.contextGone` when the context
    ///   was released; `.objectNotFound` or the store's error when a fault fires and fails.
    public func removeObject(_ object: ManagedObject, forKey key: String) throws(StoreError) {
        let relationship = try relationship(key, toMany: true)
        try context().unlink(self, relationship, object)
    }

    /// Takes the entity of `id`, which names the same row (a fault reached
    /// as its destination's entity learns its own).
    func learnEntity(of id: ObjectID, in context: ObjectContext) {
        description_ = context.descriptions[id.entity]
    }

    /// Forgets unsaved changes (not insert or delete).
    func discardChanges() {
        isLocked = false
        changes = nil
    }

    public var description: String {
        "<\(description_.entity.name) \(objectID.primaryKey)\(isFault ? " (fault)" : "")\(isInserted ? " (inserted)" : "")\(isDeleted ? " (deleted)" : "")>"
    }
}

/// An object's unsaved changes, by slot.
@usableFromInline
final class ObjectChanges {
    /// Attribute values (an inserted object's: every one, its defaults to begin with).
    @usableFromInline var values = SlotChanges<PredicateValue>(filler: .null)
    /// To-one targets (primary keys, negative for unsaved objects; nil to empty it).
    var toOne = SlotChanges<Int64?>(filler: nil)
    /// To-many additions and removals.
    var addedToMany: [Int: OrderedSet<Int64>] = [:]
    var removedToMany: [Int: Set<Int64>] = [:]

    init() {}

    /// Whether nothing is changed.
    var isEmpty: Bool { values.isEmpty && toOne.isEmpty && addedToMany.isEmpty && removedToMany.isEmpty }
}
