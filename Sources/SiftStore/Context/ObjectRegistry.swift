// Store stage: the objects a context holds, one per object ID (uniquing).
//
// Objects are found by ID in pages of 64 addressed by the primary key, one
// set of pages per root entity, as the row cache's entries are: no hashing
// for the keys stores give (1 up), nor for new objects' temporary keys (-1
// down, in pages of their own); keys too sparse to fill pages are hashed. A fetch
// into a table the context holds no object of (a new context, or an entity
// it has not fetched) adds its objects as one array instead, with nothing
// done per row: they go into the pages only when something first looks an
// object of that table up by ID (a relationship, `object(for:)`, a merge).

/// A context's objects by ID, each root entity's table apart.
struct ObjectRegistry {
    /// The objects looked up by ID: by root entity index, in pages by key.
    private var tables: [ObjectPages] = []
    /// The same for temporary (negative) keys.
    private var temporaryTables: [ObjectPages] = []
    /// The objects looked up by ID whose keys the pages do not cover.
    private var overflow: [ObjectID: ManagedObject] = [:]
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
            return lookUp(id)
        }
        set {
            if isUnhashed(root: id.root) { hash(root: id.root) }
            let held = store(newValue, for: id)
            if newValue != nil, !held { added(1, root: id.root) }
            if newValue == nil, held { added(-1, root: id.root) }
        }
    }

    /// The object of `id` in the pages or the overflow.
    @inline(__always)
    private func lookUp(_ id: ObjectID) -> ManagedObject? {
        let root = id.root, key = id.primaryKey
        if key >= 0, root >= 0, root < tables.count {
            let page = Int(truncatingIfNeeded: key >> ObjectPages.shift)
            if page < tables[root].pages.count, let held = tables[root].pages[page] {
                // A key whose page exists is in the page, or nowhere.
                return held.entries[Int(truncatingIfNeeded: key) & ObjectPages.mask]
            }
        } else if key < 0, root >= 0, root < temporaryTables.count {
            // (A temporary key -1, -2, … is at 0, 1, … of its own pages.)
            let page = Int(truncatingIfNeeded: ~key >> ObjectPages.shift)
            if page < temporaryTables[root].pages.count, let held = temporaryTables[root].pages[page] {
                return held.entries[Int(truncatingIfNeeded: ~key) & ObjectPages.mask]
            }
        }
        return overflow.isEmpty ? nil : overflow[id]
    }

    /// Puts `object` (nil: none) in the entry of `id`; whether the entry
    /// held an object before.
    private mutating func store(_ object: ManagedObject?, for id: ObjectID) -> Bool {
        let root = id.root
        func inOverflow(_ overflow: inout [ObjectID: ManagedObject]) -> Bool {
            let old = object.map { overflow.updateValue($0, forKey: id) } ?? overflow.removeValue(forKey: id)
            return old != nil
        }
        guard root >= 0 else { return inOverflow(&overflow) }
        if id.primaryKey < 0 {
            if root >= temporaryTables.count {
                temporaryTables.append(contentsOf: repeatElement(ObjectPages(temporary: true), count: root - temporaryTables.count + 1))
            }
            guard let page = temporaryTables[root].pageForWriting(id.primaryKey, allocating: object != nil, overflow: &overflow, root: root) else {
                return inOverflow(&overflow)
            }
            return temporaryTables[root].put(object, key: id.primaryKey, page: page)
        }
        if root >= tables.count { tables.append(contentsOf: repeatElement(ObjectPages(), count: root - tables.count + 1)) }
        guard let page = tables[root].pageForWriting(id.primaryKey, allocating: object != nil, overflow: &overflow, root: root) else {
            return inOverflow(&overflow)
        }
        return tables[root].put(object, key: id.primaryKey, page: page)
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

    /// Calls `body` with the objects held, an array at a time: each array
    /// added in bulk as it was added (no copy), then the rest.
    func forEachArray(_ body: ([ManagedObject]) -> Void) {
        for arrays in unhashed { for objects in arrays { body(objects) } }
        var rest: [ManagedObject] = []
        for table in tables + temporaryTables {
            for case let page? in table.pages {
                for slot in 0..<ObjectPages.size { if let object = page.entries[slot] { rest.append(object) } }
            }
        }
        rest.append(contentsOf: overflow.values)
        if !rest.isEmpty { body(rest) }
    }

    /// Calls `body` with every object held.
    func forEach(_ body: (ManagedObject) -> Void) {
        for table in tables + temporaryTables {
            for case let page? in table.pages {
                for slot in 0..<ObjectPages.size { if let object = page.entries[slot] { body(object) } }
            }
        }
        for object in overflow.values { body(object) }
        for arrays in unhashed { for objects in arrays { for object in objects { body(object) } } }
    }

    /// Forgets every object.
    mutating func removeAll() {
        tables = []
        temporaryTables = []
        overflow = [:]
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

    /// Puts the objects of a root entity added in bulk where lookups find them.
    private mutating func hash(root: Int) {
        guard isUnhashed(root: root) else { return }
        let arrays = unhashed[root]
        unhashed[root] = []
        unhashedRoots -= 1
        for objects in arrays {
            for object in objects where store(object, for: object.objectID) {
                // (An object the table held already under the ID: counted once.)
                added(-1, root: root)
            }
        }
    }
}

/// One root entity's objects by primary key, in pages of 64 (see the file's comment).
private struct ObjectPages {
    static let shift = 6
    static let size = 1 << shift
    static let mask = size - 1

    /// Whether the pages hold temporary keys (-1 at 0, -2 at 1, …), not keys from 0 up.
    var temporary = false

    /// Where `key` goes in these pages; nil for a key of the other kind.
    @inline(__always)
    func position(_ key: Int64) -> Int64? {
        temporary ? (key < 0 ? ~key : nil) : (key >= 0 ? key : nil)
    }

    /// The pages by `key >> shift`; nil where no key of the page has an object.
    var pages: [ObjectPage?] = []
    var pagesInUse = 0
    /// How many objects the pages hold.
    var count = 0

    /// The page of `key`, allocated if `allocating` (moving the overflow's
    /// objects of it in), when the pages cover the key or can grow to;
    /// nil when it belongs in the overflow.
    mutating func pageForWriting(_ key: Int64, allocating: Bool, overflow: inout [ObjectID: ManagedObject], root: Int) -> Int? {
        guard let position = position(key) else { return nil }
        let page = Int(truncatingIfNeeded: position >> Self.shift)
        if page < pages.count, pages[page] != nil { return page }
        guard allocating else { return nil }
        if page >= pages.count {
            // Pages grow while they would stay a quarter used (past the first 64).
            let limit = max(64, 4 * (pagesInUse + 1))
            guard page < limit else { return nil }
            pages.append(contentsOf: repeatElement(nil, count: min(limit, max(page + 1, 2 * pages.count)) - pages.count))
        }
        // A page when keys are dense enough to fill pages (on average a
        // sixteenth of each, past the first eight pages).
        guard pagesInUse < 8 || count >= pagesInUse &* (Self.size / 16) else { return nil }
        let made = ObjectPage()
        pages[page] = made
        pagesInUse += 1
        if !overflow.isEmpty {
            let moving = overflow.filter { entry in
                guard entry.key.root == root, let at = self.position(entry.key.primaryKey) else { return false }
                return Int(truncatingIfNeeded: at >> Self.shift) == page
            }
            for (id, object) in moving {
                overflow[id] = nil
                made.entries[Int(truncatingIfNeeded: self.position(id.primaryKey) ?? 0) & Self.mask] = object
                made.occupied += 1
                count += 1
            }
        }
        return page
    }

    /// Puts `object` (nil: none) in the entry of `key` on page `page`;
    /// whether the entry held an object before.
    mutating func put(_ object: ManagedObject?, key: Int64, page: Int) -> Bool {
        let held = pages[page].unsafelyUnwrapped
        let slot = held.entries + (Int(truncatingIfNeeded: position(key) ?? 0) & Self.mask)
        let old = slot.pointee
        slot.pointee = object
        let change = (object == nil ? 0 : 1) - (old == nil ? 0 : 1)
        held.occupied += change
        count += change
        if held.occupied == 0 {
            pages[page] = nil
            pagesInUse -= 1
        }
        return old != nil
    }
}

/// 64 entries of `ObjectPages`.
private final class ObjectPage {
    let entries: UnsafeMutablePointer<ManagedObject?>
    @exclusivity(unchecked) var occupied = 0

    init() {
        entries = .allocate(capacity: ObjectPages.size)
        entries.initialize(repeating: nil, count: ObjectPages.size)
    }

    deinit {
        entries.deinitialize(count: ObjectPages.size)
        entries.deallocate()
    }
}
