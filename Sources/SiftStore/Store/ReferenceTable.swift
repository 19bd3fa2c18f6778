// Store stage: what a store of one's own calls its objects (any Hashable &
// Sendable reference: a string, a UUID, an integer) mapped to the primary
// keys of object IDs and back, per root entity — an entity and its
// subentities share their root's table, as they share its keys.

import Foundation

/// Each object's reference and primary key, both ways, per root entity.
/// A key, once given to a reference, stays its key for the table's life.
struct ReferenceTable<Reference: Hashable & Sendable>: Sendable {
    private var keys: [[Reference: Int64]]
    private var references: [[Int64: Reference]]
    /// The largest key of each root's table.
    private var largest: [Int64]

    /// An empty table for a model of `roots` entities (indexed as the model's entities).
    init(roots: Int) {
        keys = Array(repeating: [:], count: roots)
        references = Array(repeating: [:], count: roots)
        largest = Array(repeating: 0, count: roots)
    }

    /// The key of `reference` in a root's table, when it has one.
    func key(for reference: Reference, root: Int) -> Int64? {
        keys[root][reference]
    }

    /// The reference of `key` in a root's table, when it has one.
    func reference(for key: Int64, root: Int) -> Reference? {
        references[root][key]
    }

    /// Gives `reference` a key in a root's table: `preferred` when it is
    /// positive and free, else the next after the largest. Nil when the
    /// reference has a key already (two objects with one reference), or when
    /// the table has no key left.
    mutating func add(_ reference: Reference, root: Int, preferred: Int64?) -> Int64? {
        guard keys[root][reference] == nil else { return nil }
        let key: Int64
        if let preferred, preferred > 0, references[root][preferred] == nil {
            key = preferred
        } else {
            guard largest[root] < Int64.max else { return nil }
            key = largest[root] + 1
        }
        set(reference, key: key, root: root)
        return key
    }

    /// Records that `key` is the object the format calls `reference`
    /// (replacing what either had); false when another key has that reference.
    @discardableResult
    mutating func set(_ reference: Reference, key: Int64, root: Int) -> Bool {
        if let other = keys[root][reference], other != key { return false }
        if let old = references[root][key] { keys[root][old] = nil }
        keys[root][reference] = key
        references[root][key] = reference
        largest[root] = max(largest[root], key)
        return true
    }

    /// Gives the object known as `old` the reference `new`, keeping its key:
    /// `new` is its reference from now on, and `old` still finds its key
    /// (a row read under the old reference is the same object). False when
    /// `old` has no key, or `new` is another key's.
    @discardableResult
    mutating func rename(_ old: Reference, to new: Reference, root: Int) -> Bool {
        guard let key = keys[root][old] else { return false }
        if let other = keys[root][new] { return other == key }
        keys[root][new] = key
        references[root][key] = new
        return true
    }

    /// Forgets the object with `key` in a root's table (its key is not given again).
    mutating func remove(key: Int64, root: Int) {
        if let reference = references[root].removeValue(forKey: key) { keys[root][reference] = nil }
    }
}
