// Store stage: the objects a context holds, one per object ID (uniquing).
//
// Objects are found by ID in a hashed table. A fetch into a table the
// context holds no object of (a new context, or an entity it has not
// fetched) adds its objects as one array instead, with no hashed operation
// per row: they are hashed only when something first looks an object of
// that table up by ID (a relationship, `object(for:)`, a merge).

/// A context's objects by ID, each root entity's table apart.
struct ObjectRegistry {
    /// The objects looked up by ID.
    private var byID: [ObjectID: ManagedObject] = [:]
    /// Objects added in bulk and not hashed yet, by root entity index
    /// (an array, not a dictionary: every lookup by ID checks it).
    private var unhashed: [[[ManagedObject]]] = []
    /// How many root entities have objects in `unhashed`.
    private var unhashedRoots = 0
    /// How many objects each root entity's table holds (hashed or not), by
    /// root entity index.
    private var countByRoot: [Int] = []

    /// How many objects the registry holds.
    private(set) var count = 0

    /// The object for `id`, if the registry holds one; setting nil removes it.
    subscript(id: ObjectID) -> ManagedObject? {
        mutating get {
            if isUnhashed(root: id.root) { hash(root: id.root) }
            return byID[id]
        }
        set {
            if isUnhashed(root: id.root) { hash(root: id.root) }
            if let newValue {
                if byID.updateValue(newValue, forKey: id) == nil { added(1, root: id.root) }
            } else if byID.removeValue(forKey: id) != nil {
                added(-1, root: id.root)
            }
        }
    }

    /// Whether objects of the root entity at `root` were added in bulk and not hashed yet.
    @inline(__always)
    private func isUnhashed(root: Int) -> Bool {
        unhashedRoots > 0 && root >= 0 && root < unhashed.count && !unhashed[root].isEmpty
    }

    /// Whether the registry holds no object of the root entity at `root`:
    /// objects of it may be added in bulk, unhashed.
    func isEmpty(root: Int) -> Bool { root >= countByRoot.count || countByRoot[root] == 0 }

    /// Adds objects of the root entity at `root` that the registry does not
    /// hold, with distinct IDs, without hashing them: a fetch's objects into
    /// a table the registry holds none of, or a save's inserted objects
    /// under the keys the store has just given. They are hashed when an
    /// object of the table is first looked up by ID.
    mutating func addUnhashed(_ objects: [ManagedObject], root: Int) {
        guard !objects.isEmpty else { return }
        if root >= unhashed.count { unhashed.append(contentsOf: repeatElement([], count: root - unhashed.count + 1)) }
        if unhashed[root].isEmpty { unhashedRoots += 1 }
        unhashed[root].append(objects)
        added(objects.count, root: root)
    }

    /// Calls `body` with every object held.
    func forEach(_ body: (ManagedObject) -> Void) {
        for object in byID.values { body(object) }
        for arrays in unhashed { for objects in arrays { for object in objects { body(object) } } }
    }

    /// Makes room for `more` objects looked up by ID.
    mutating func reserveCapacity(_ more: Int) { byID.reserveCapacity(byID.count + more) }

    /// Forgets every object.
    mutating func removeAll() {
        byID = [:]
        unhashed = []
        unhashedRoots = 0
        countByRoot = []
        count = 0
    }

    private mutating func added(_ delta: Int, root: Int) {
        count += delta
        if root >= countByRoot.count { countByRoot.append(contentsOf: repeatElement(0, count: root - countByRoot.count + 1)) }
        countByRoot[root] += delta
    }

    /// Hashes the objects of a root entity added in bulk.
    private mutating func hash(root: Int) {
        guard isUnhashed(root: root) else { return }
        let arrays = unhashed[root]
        unhashed[root] = []
        unhashedRoots -= 1
        byID.reserveCapacity(byID.count + arrays.reduce(0) { $0 + $1.count })
        for objects in arrays {
            for object in objects where byID.updateValue(object, forKey: object.objectID) != nil {
                // (An object the table held already under the ID: counted once.)
                added(-1, root: root)
            }
        }
    }
}
