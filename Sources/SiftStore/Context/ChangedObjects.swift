// Store stage: the objects of a context with unsaved changes, listed
// without hashing.
//
// Each object says on itself whether it is changed (`ManagedObject.Flags`),
// so noting a change is a flag and an append: no hashed insert by ID for
// each object a save writes, and the list keeps the order objects first
// changed in, which is key order when a fetch's objects change in turn (the
// save's sort is then one pass). An object that stops being changed stays
// in the list, not counted, until it changes again or the list is compacted.

/// The objects of one context with unsaved changes: inserted, updated,
/// deleted, or marked for conflict detection.
struct ChangedObjects {
    /// The objects in the order they first changed; some may no longer be
    /// changed (their `.changed` flag is off).
    private var list: [ManagedObject] = []
    /// How many objects of `list` are no longer changed.
    private var stale = 0

    /// Notes that `object` (of this context) has unsaved changes.
    mutating func insert(_ object: ManagedObject) {
        guard !object.flags.contains(.changed) else { return }
        object.flags.insert(.changed)
        if object.flags.contains(.listed) {
            stale -= 1
        } else {
            object.flags.insert(.listed)
            list.append(object)
        }
    }

    /// Notes that `object` no longer has unsaved changes.
    mutating func remove(_ object: ManagedObject) {
        guard object.flags.contains(.changed) else { return }
        object.flags.remove(.changed)
        stale += 1
        if stale > 64, stale > list.count / 2 { compact() }
    }

    /// Whether `object` has unsaved changes.
    func contains(_ object: ManagedObject) -> Bool { object.flags.contains(.changed) }

    /// Whether no object has unsaved changes.
    var isEmpty: Bool { list.count == stale }

    /// The objects with unsaved changes, in the order they first changed.
    var objects: [ManagedObject] { stale == 0 ? list : list.filter { $0.flags.contains(.changed) } }

    /// Whether an object with unsaved changes satisfies `predicate`.
    func contains(where predicate: (ManagedObject) -> Bool) -> Bool {
        list.contains { $0.flags.contains(.changed) && predicate($0) }
    }

    /// Forgets every object.
    mutating func removeAll() {
        for object in list { object.flags.remove([.changed, .listed]) }
        list = []
        stale = 0
    }

    /// Drops the objects no longer changed from the list.
    private mutating func compact() {
        list.removeAll { object in
            guard !object.flags.contains(.changed) else { return false }
            object.flags.remove(.listed)
            return true
        }
        stale = 0
    }
}
