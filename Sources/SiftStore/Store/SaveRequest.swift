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
package struct SaveRequest {
    /// A new row. A temporary (negative) key gets a permanent one; a
    /// positive key is kept (a row the store lost, written again).
    package struct Insert {
        package var id: ObjectID
        package var values: [PredicateValue]
        /// To-one keys by slot; negative keys are other inserts of the request.
        package var toOne: [Int64?]
    }

    /// Changed columns of a row, written only if the row still has the
    /// version the context read.
    package struct Update {
        package var id: ObjectID
        package var expectedVersion: Int64
        /// The attribute and to-one slots written.
        package var attributeSlots: [Int]
        package var toOneSlots: [Int]
        /// The whole row as it will be: what the row cache holds afterwards.
        package var values: [PredicateValue]
        package var toOne: [Int64?]
    }

    /// A row removed if it still has the expected version (nil: whatever it has).
    package struct Delete {
        package var id: ObjectID
        package var expectedVersion: Int64?
    }

    /// Links added to and removed from one to-many relationship of one object.
    package struct LinkChange {
        package var owner: ObjectID
        package var relationship: Relationship
        package var added: [Int64]
        package var removed: [Int64]
        /// Every member after the change, in order, for an ordered relationship.
        package var order: [Int64]? = nil
    }

    package var inserts: [Insert] = []
    package var updates: [Update] = []
    package var deletes: [Delete] = []
    package var links: [LinkChange] = []
    /// Rows the context learnt another save deleted (a conflict the merge
    /// policy let go): reported as deleted, and dropped from the row cache.
    package var gone: [ObjectID] = []
    /// Rows the merge policy kept as the store has them (their changes, or
    /// their delete, dropped): a cascade from a row this save deletes does
    /// not delete them, it clears their link to it.
    package var kept: Set<ObjectID> = []
}

/// What a backend answers a save request with.
package enum SaveResponse {
    /// Everything was written and committed.
    case committed(SaveResult)
    /// Rows changed or deleted since the context read them: nothing was
    /// written. Each conflict carries the row as the store has it now.
    case conflicts([RowConflict])
}

/// What a committed save wrote.
package struct SaveResult {
    /// The permanent key of each insert's temporary key.
    package var keys: [Int64: Int64] = [:]
    /// The node of every inserted and updated row, as the row cache now
    /// holds it, by the ID the request gave it.
    package var nodes: [ObjectID: RowNode] = [:]
    /// What the save changed, as observers hear it.
    package var changes = StoreChanges(inserted: [], updated: [], deleted: [])
    /// What the delete rules changed beyond the request, worked out in the
    /// store (SaveRules.swift): rows a cascade deleted, rows whose links
    /// were cleared or lost members. In `changes` too; the context drops
    /// or refreshes its objects of these rows, whose cached nodes are stale.
    package var ruleChanges = StoreChanges(inserted: [], updated: [], deleted: [])
}

/// A row whose version moved since the context read it.
package struct RowConflict {
    package var id: ObjectID
    /// The row as the store has it now; nil when it was deleted.
    package var current: RowNode?
}

extension SaveRequest {
    /// A temporary key resolved to its permanent one.
    package static func resolve(_ key: Int64?, _ keys: [Int64: Int64]) -> Int64? {
        key.map { $0 < 0 ? keys[$0] ?? $0 : $0 }
    }
}
