// Store stage: a save as a value. A context describes its changes as a
// `SaveRequest`; a backend applies it in one transaction and answers with
// the rows it wrote, or with the conflicts it found (and wrote nothing). The
// merge policy is the context's business, applied above every backend: a
// backend never calls back into a context. What the policy keeps is part of
// the request, so that the backend works the delete rules out again
// consistently with it (SaveRules.swift).

import Foundation
import Sift

/// The changes one save writes, all or nothing.
public struct SaveRequest: Sendable {
    /// A new row. A temporary (negative) key gets a permanent one; a
    /// positive key is kept (a row the store lost, written again).
    public struct Insert: Sendable {
        /// The new object's ID: a temporary (negative) key, or a permanent one to keep.
        public var id: ObjectID
        /// Its attribute values, by slot.
        public var values: [PredicateValue]
        /// To-one keys by slot; negative keys are other inserts of the request.
        public var toOne: [Int64?]

        /// A new row.
        ///
        /// - Parameters:
        ///   - id: A temporary (negative) key, or a permanent one to keep.
        ///   - values: Attribute values by slot.
        ///   - toOne: To-one keys by slot.
        public init(id: ObjectID, values: [PredicateValue], toOne: [Int64?]) {
            self.id = id
            self.values = values
            self.toOne = toOne
        }
    }

    /// Changed columns of a row, written only if the row still has the
    /// version the context read.
    public struct Update: Sendable {
        /// The row changed.
        public var id: ObjectID
        /// The version the context read: the row is written only if it still has it.
        public var expectedVersion: Int64
        /// The attribute and to-one slots written.
        public var attributeSlots: [Int]
        /// The to-one slots written.
        public var toOneSlots: [Int]
        /// The whole row as it will be: what the row cache holds afterwards.
        public var values: [PredicateValue]
        /// The row's to-one keys as they will be, by slot.
        public var toOne: [Int64?]

        /// A change of a row read at `expectedVersion`.
        ///
        /// - Parameters:
        ///   - id: The row.
        ///   - expectedVersion: The version read.
        ///   - attributeSlots: The attribute slots written.
        ///   - toOneSlots: The to-one slots written.
        ///   - values: The whole row's values as they will be.
        ///   - toOne: The row's to-one keys as they will be.
        public init(id: ObjectID, expectedVersion: Int64, attributeSlots: [Int], toOneSlots: [Int], values: [PredicateValue],
                    toOne: [Int64?]) {
            self.id = id
            self.expectedVersion = expectedVersion
            self.attributeSlots = attributeSlots
            self.toOneSlots = toOneSlots
            self.values = values
            self.toOne = toOne
        }
    }

    /// A row removed if it still has the expected version (nil: whatever it has).
    public struct Delete: Sendable {
        /// The row removed.
        public var id: ObjectID
        /// The version it must still have; nil: whatever it has.
        public var expectedVersion: Int64?

        /// A row removed.
        ///
        /// - Parameters:
        ///   - id: The row.
        ///   - expectedVersion: The version it must still have; nil: whatever it has.
        public init(id: ObjectID, expectedVersion: Int64?) {
            self.id = id
            self.expectedVersion = expectedVersion
        }
    }

    /// Links added to and removed from one to-many relationship of one object.
    public struct LinkChange: Sendable {
        /// The object whose relationship changes.
        public var owner: ObjectID
        /// The to-many relationship.
        public var relationship: Relationship
        /// Keys of the members added (negative: inserts of the request).
        public var added: [Int64]
        /// Keys of the members removed.
        public var removed: [Int64]
        /// Every member after the change, in order, for an ordered relationship.
        public var order: [Int64]? = nil

        /// Members added to and removed from `owner`'s `relationship`.
        ///
        /// - Parameters:
        ///   - owner: The owner.
        ///   - relationship: The to-many relationship.
        ///   - added: Keys of the members added.
        ///   - removed: Keys of the members removed.
        ///   - order: Every member after the change, for an ordered relationship.
        public init(owner: ObjectID, relationship: Relationship, added: [Int64], removed: [Int64], order: [Int64]? = nil) {
            self.owner = owner
            self.relationship = relationship
            self.added = added
            self.removed = removed
            self.order = order
        }
    }

    /// A request that changes nothing yet.
    public init() {}

    /// New rows.
    public var inserts: [Insert] = []
    /// Changed rows.
    public var updates: [Update] = []
    /// Removed rows.
    public var deletes: [Delete] = []
    /// Changed to-many links.
    public var links: [LinkChange] = []
    /// Rows the context learnt another save deleted (a conflict the merge
    /// policy let go): reported as deleted, and dropped from the row cache.
    public var gone: [ObjectID] = []
    /// Rows the merge policy kept as the store has them (their changes, or
    /// their delete, dropped): a cascade from a row this save deletes does
    /// not delete them, it clears their link to it.
    public var kept: Set<ObjectID> = []
    /// The merge policy of the context that saved: a store that applies the
    /// changes later (a remote store's queue of saves made offline) resolves
    /// the conflicts it finds then with it.
    public var mergePolicy: MergePolicy = .error
}

/// What a backend answers a save request with.
public enum SaveResponse: Sendable {
    /// Everything was written and committed.
    case committed(SaveResult)
    /// Rows changed or deleted since the context read them: nothing was
    /// written. Each conflict carries the row as the store has it now.
    case conflicts([RowConflict])
}

/// What a committed save wrote.
///
/// A store gives the rows it wrote either by their place in the request
/// (``insertedKeys``, ``insertedNodes``, ``updatedNodes``: arrays parallel
/// to the request's inserts and updates, which a context reads with no
/// lookup per object) or by ID (``keys``, ``nodes``); a context reads the
/// arrays when they have one entry for each insert or update, and the
/// tables otherwise. ``keys`` is filled either way (a server sends it).
public struct SaveResult: Sendable {
    /// The permanent key of each insert's temporary key.
    public var keys: [Int64: Int64] = [:]
    /// The node of every inserted and updated row, as the row cache now
    /// holds it, by the ID the request gave it (for a store that does not
    /// give ``insertedNodes`` and ``updatedNodes``).
    public var nodes: [ObjectID: RowNode] = [:]
    /// The key of each insert of the request, in its order: the permanent
    /// key given to a temporary one, or the key it kept. Empty: see ``keys``.
    public var insertedKeys: [Int64] = []
    /// The node of each insert of the request, in its order, as the row
    /// cache now holds it; nil where the cache holds none (a row the delete
    /// rules changed since). Empty: see ``nodes``.
    public var insertedNodes: [RowNode?] = []
    /// The node of each update of the request, in its order, as the row
    /// cache now holds it; nil where the cache holds none. Empty: see ``nodes``.
    public var updatedNodes: [RowNode?] = []
    /// What the save changed, as observers hear it.
    public var changes = StoreChanges(inserted: [], updated: [], deleted: [])
    /// What the delete rules changed beyond the request, worked out in the
    /// store (SaveRules.swift): rows a cascade deleted, rows whose links
    /// were cleared or lost members. In `changes` too; the context drops
    /// or refreshes its objects of these rows, whose cached nodes are stale.
    public var ruleChanges = StoreChanges(inserted: [], updated: [], deleted: [])

    /// A result that wrote nothing yet.
    public init() {}

    /// Every node written, by place and by ID: what the row cache holds after the save.
    public var writtenNodes: [RowNode] {
        var written = Array(nodes.values)
        written.reserveCapacity(nodes.count + insertedNodes.count + updatedNodes.count)
        for node in insertedNodes { if let node { written.append(node) } }
        for node in updatedNodes { if let node { written.append(node) } }
        return written
    }
}

/// A row whose version moved since the context read it.
public struct RowConflict: Sendable {
    /// The row that moved.
    public var id: ObjectID
    /// The row as the store has it now; nil when it was deleted.
    public var current: RowNode?

    /// A conflict on the row `id`, which the store now has as `current`.
    ///
    /// - Parameters:
    ///   - id: The row whose version moved.
    ///   - current: The row as the store has it now; nil when it was deleted.
    public init(id: ObjectID, current: RowNode?) {
        self.id = id
        self.current = current
    }
}

extension SaveRequest {
    /// A temporary key resolved to its permanent one.
    package static func resolve(_ key: Int64?, _ keys: [Int64: Int64]) -> Int64? {
        key.map { $0 < 0 ? keys[$0] ?? $0 : $0 }
    }
}
