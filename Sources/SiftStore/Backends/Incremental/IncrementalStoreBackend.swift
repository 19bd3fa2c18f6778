// Store stage: what a store writer implements to put contexts on a backend
// of their own — a web service, another database, a file server — as an
// incremental store (Core Data's `NSIncrementalStore`): fetching the rows a
// request selects, rows by reference (a batched fault), a relationship's
// destinations for a batch of owners, and saving one change set with
// optimistic locking. Sift does the rest (IncrementalStore.swift).

import Foundation
import Sift

/// What a backend evaluates itself. Sift sends a fetch only the terms of its
/// predicate (the operands of its top-level `AND`) the backend accepts, and
/// evaluates the rest in memory over the rows that come back; sorting, then
/// offset and limit, move to memory when the backend does not do them or a
/// term stays for memory. A backend that accepts nothing still answers
/// every predicate, correctly: it returns every row of the entity.
///
/// ```swift
/// let caps = BackendCapabilities.comparisons(of: ["name"], operators: [.equalTo])   // `name == constant` only
/// let all = BackendCapabilities.everything
/// ```
public struct BackendCapabilities: Sendable {
    /// Whether the backend evaluates a term (bound to the fetched entity).
    public var evaluates: @Sendable (BoundPredicate) -> Bool
    /// Whether it sorts by the request's sort descriptors, exactly as Sift
    /// does (nil first, strings by code point, `:ci` folded).
    public var sorts: Bool
    /// Whether it applies the request's offset and limit.
    public var pages: Bool

    /// A backend that evaluates the terms `evaluates` accepts.
    ///
    /// - Parameters:
    ///   - evaluates: Whether the backend evaluates a term.
    ///   - sorts: Whether it sorts as Sift does.
    ///   - pages: Whether it applies offset and limit.
    public init(evaluates: @escaping @Sendable (BoundPredicate) -> Bool, sorts: Bool = false, pages: Bool = false) {
        self.evaluates = evaluates
        self.sorts = sorts
        self.pages = pages
    }

    /// Evaluates nothing: every fetch returns every row of its entity, and memory does the rest.
    public static let nothing = BackendCapabilities(evaluates: { _ in false })

    /// Evaluates every predicate, sorts and pages.
    public static let everything = BackendCapabilities(evaluates: { _ in true }, sorts: true, pages: true)

    /// Evaluates comparisons of the fetched object's own attributes, named in
    /// `attributes`, with a constant, by one of `operators`, with no options
    /// (`name == "Ann"`, `age > 30`); nothing else.
    ///
    /// - Parameters:
    ///   - attributes: The attributes the backend can filter by.
    ///   - operators: The comparison operators it runs.
    /// - Returns: The capabilities, with no sorting or paging.
    public static func comparisons(of attributes: Set<String>, operators: Set<ComparisonOperator>) -> BackendCapabilities {
        BackendCapabilities(evaluates: { term in
            guard case .comparison(let comparison) = term, comparison.quantifier == .direct, comparison.options.isEmpty,
                  operators.contains(comparison.operator),
                  case .attribute(let owner, let attribute) = comparison.left.kind, case .evaluatedObject = owner.kind,
                  attributes.contains(attribute.name),
                  case .constant = comparison.right.kind else { return false }
            return true
        })
    }
}

/// A fetch as a backend receives it: the entity (with its subentities), the
/// terms of the predicate it accepts, and the sorting and paging it does.
public struct BackendFetch: Sendable {
    /// The entity fetched; rows of its subentities belong to the answer too.
    public var entityName: String
    /// The terms the backend accepted, joined by `AND`; nil for every row.
    public var predicate: BoundPredicate?
    /// The order, when the backend sorts; nil when memory does.
    public var sortDescriptors: [FetchSortDescriptor]?
    /// The number of rows to skip, when the backend pages (0 otherwise).
    public var offset: Int
    /// The most rows to return, when the backend pages (nil otherwise).
    public var limit: Int?
    /// The relationship key paths the request prefetches (`department`,
    /// `reports.projects`): a backend that can answer their rows with the
    /// fetch's may, and give them to the store when it asks (``IncrementalStoreBackend/rows(_:entityName:)``
    /// and ``IncrementalStoreBackend/destinations(of:entityName:owners:)`` come right after).
    public var prefetchKeyPaths: [String] = []
    /// The steps `MATCHES` and `LIKE` may take over the whole fetch, when the
    /// request sets a budget (`regularExpressionStepLimit`): a backend that
    /// evaluates patterns itself keeps to it.
    public var patternStepLimit: Int?
}

/// What a backend says of itself when an incremental store opens on it.
public struct BackendMetadata: Sendable {
    /// The store's identifier: stable for the backend's data, in its objects' URIs.
    public var identifier: String
    /// The version hash of the model its rows follow (`DataModel.versionHash`), when it keeps one: a store
    /// opened with another model is refused.
    public var modelVersionHash: String?

    /// A backend's identity.
    ///
    /// - Parameters:
    ///   - identifier: The store's identifier.
    ///   - modelVersionHash: The version hash of the model its rows follow, if it keeps one.
    public init(identifier: String, modelVersionHash: String? = nil) {
        self.identifier = identifier
        self.modelVersionHash = modelVersionHash
    }
}

/// How an incremental store runs a fetch: the terms its backend receives,
/// the terms memory evaluates over the rows that come back, and whether
/// memory sorts and pages.
public struct BackendPlan: Sendable, CustomStringConvertible {
    /// The terms the backend evaluates, joined by `AND`; nil when it gets none.
    public var backend: BoundPredicate?
    /// The terms memory evaluates; nil when the backend evaluates the whole predicate.
    public var memory: BoundPredicate?
    /// Whether memory sorts the rows.
    public var memorySorts: Bool
    /// Whether memory applies offset and limit.
    public var memoryPages: Bool

    /// The plan in lines: `backend:`, `memory:`, and what memory sorts and pages.
    public var description: String {
        var lines = ["backend: \(backend.map { "\($0)" } ?? "every row")", "memory: \(memory.map { "\($0)" } ?? "nothing")"]
        if memorySorts { lines.append("memory sorts") }
        if memoryPages { lines.append("memory applies offset and limit") }
        return lines.joined(separator: "\n")
    }
}

/// A row as a backend gives it: its entity, its reference, its version (for
/// optimistic locking: it must change whenever the row does), its attribute
/// values and its to-one relationships, by name.
public struct BackendRow<Reference: Hashable & Sendable>: Sendable {
    /// The row's own entity (a subentity's name for its rows).
    public var entityName: String
    /// What the backend calls the row: unique in its root entity.
    public var reference: Reference
    /// The row's version: a save that read another version of it conflicts.
    public var version: Int64
    /// Attribute values by name; an attribute not listed is nil.
    public var values: [String: PredicateValue]
    /// To-one destinations by relationship name; a relationship not listed is empty.
    public var toOne: [String: Reference]

    /// A row of `entityName`.
    ///
    /// - Parameters:
    ///   - entityName: The row's own entity.
    ///   - reference: What the backend calls it.
    ///   - version: Its version.
    ///   - values: Attribute values by name.
    ///   - toOne: To-one destinations by relationship name.
    public init(entityName: String, reference: Reference, version: Int64, values: [String: PredicateValue] = [:],
                toOne: [String: Reference] = [:]) {
        self.entityName = entityName
        self.reference = reference
        self.version = version
        self.values = values
        self.toOne = toOne
    }
}

/// An object a change set refers to: one the backend holds, or one the
/// same change set inserts (by its temporary number).
public enum BackendObject<Reference: Hashable & Sendable>: Hashable, Sendable {
    /// An object the backend holds.
    case existing(Reference)
    /// An object the change set inserts, by its ``BackendChanges/Insert/temporaryID``.
    case inserted(Int64)
}

/// One save's changes, as a backend applies them: all of them, or none.
public struct BackendChanges<Reference: Hashable & Sendable>: Sendable {
    /// A new object.
    public struct Insert: Sendable {
        /// The number the change set knows it by until the backend gives it a
        /// reference: negative for a new object; positive (its old key) for an
        /// object written again after another context deleted it, when the
        /// merge policy keeps it.
        public var temporaryID: Int64
        /// Its entity.
        public var entityName: String
        /// Attribute values by name (nil values left out).
        public var values: [String: PredicateValue]
        /// To-one destinations by relationship name.
        public var toOne: [String: BackendObject<Reference>]

        /// A new object (a backend that keeps change sets to apply later makes them again).
        ///
        /// - Parameters:
        ///   - temporaryID: The number the change set knows it by.
        ///   - entityName: Its entity.
        ///   - values: Attribute values by name.
        ///   - toOne: To-one destinations by relationship name.
        public init(temporaryID: Int64, entityName: String, values: [String: PredicateValue],
                    toOne: [String: BackendObject<Reference>]) {
            self.temporaryID = temporaryID
            self.entityName = entityName
            self.values = values
            self.toOne = toOne
        }
    }
    /// A changed object, to be written only if it still has the version read.
    public struct Update: Sendable {
        /// The object.
        public var reference: Reference
        /// Its entity.
        public var entityName: String
        /// The version the context read.
        public var expectedVersion: Int64
        /// Every attribute value as it will be, by name (nil values left out).
        public var values: [String: PredicateValue]
        /// Every to-one destination as it will be, by relationship name.
        public var toOne: [String: BackendObject<Reference>]
        /// The attributes the save changes (the others are written as read).
        public var changedAttributes: [String] = []
        /// The to-one relationships the save changes.
        public var changedToOne: [String] = []

        /// A changed object.
        ///
        /// - Parameters:
        ///   - reference: The object.
        ///   - entityName: Its entity.
        ///   - expectedVersion: The version read.
        ///   - values: Every attribute value as it will be.
        ///   - toOne: Every to-one destination as it will be.
        ///   - changedAttributes: The attributes the save changes.
        ///   - changedToOne: The to-one relationships the save changes.
        public init(reference: Reference, entityName: String, expectedVersion: Int64, values: [String: PredicateValue],
                    toOne: [String: BackendObject<Reference>], changedAttributes: [String] = [], changedToOne: [String] = []) {
            self.reference = reference
            self.entityName = entityName
            self.expectedVersion = expectedVersion
            self.values = values
            self.toOne = toOne
            self.changedAttributes = changedAttributes
            self.changedToOne = changedToOne
        }
    }
    /// A deleted object: only if it still has the version read, when one is given.
    public struct Delete: Sendable {
        /// The object.
        public var reference: Reference
        /// Its entity.
        public var entityName: String
        /// The version it must still have; nil: whatever it has (a cascade).
        public var expectedVersion: Int64?

        /// A deleted object.
        ///
        /// - Parameters:
        ///   - reference: The object.
        ///   - entityName: Its entity.
        ///   - expectedVersion: The version it must still have; nil: whatever it has.
        public init(reference: Reference, entityName: String, expectedVersion: Int64?) {
            self.reference = reference
            self.entityName = entityName
            self.expectedVersion = expectedVersion
        }
    }
    /// Members added to and removed from a to-many relationship with no
    /// to-one inverse (a many-to-many link); a to-many with a to-one
    /// inverse changes through the members' to-one relationship.
    public struct LinkChange: Sendable {
        /// The owner.
        public var owner: BackendObject<Reference>
        /// The owner's entity.
        public var entityName: String
        /// The to-many relationship.
        public var relationship: String
        /// Members added.
        public var added: [BackendObject<Reference>]
        /// Members removed.
        public var removed: [Reference]

        /// Members added to and removed from `owner`'s `relationship`.
        ///
        /// - Parameters:
        ///   - owner: The owner.
        ///   - entityName: The owner's entity.
        ///   - relationship: The to-many relationship.
        ///   - added: Members added.
        ///   - removed: Members removed.
        public init(owner: BackendObject<Reference>, entityName: String, relationship: String, added: [BackendObject<Reference>],
                    removed: [Reference]) {
            self.owner = owner
            self.entityName = entityName
            self.relationship = relationship
            self.added = added
            self.removed = removed
        }
    }
    /// Nullify rules of deleted objects: `relationship` (to-one) of each of
    /// `rows` is cleared where it points at one of `targets`.
    public struct Clear: Sendable {
        /// The entity of the rows.
        public var entityName: String
        /// The to-one relationship cleared.
        public var relationship: String
        /// The rows.
        public var rows: [Reference]
        /// The deleted destinations.
        public var targets: [Reference]
    }

    /// An object whose stored state a merge policy kept over this save's
    /// changes: delete rules leave it, clearing its links to rows the save
    /// deletes (a backend that works out delete rules itself honours it).
    public struct Kept: Sendable {
        /// The object.
        public var reference: Reference
        /// Its entity.
        public var entityName: String

        /// An object a merge policy kept as stored.
        ///
        /// - Parameters:
        ///   - reference: The object.
        ///   - entityName: Its entity.
        public init(reference: Reference, entityName: String) {
            self.reference = reference
            self.entityName = entityName
        }
    }

    /// No changes yet.
    public init() {}

    /// New objects, in order.
    public var inserts: [Insert] = []
    /// Changed objects.
    public var updates: [Update] = []
    /// Deleted objects: those the context deleted, then those delete rules reached.
    public var deletes: [Delete] = []
    /// Changed many-to-many links.
    public var links: [LinkChange] = []
    /// Links cleared by nullify rules.
    public var clears: [Clear] = []
    /// Objects a merge policy kept as stored: delete rules leave them.
    public var kept: [Kept] = []
    /// The merge policy of the context that saved: a backend that applies
    /// the changes later (a queue of saves made offline) resolves the
    /// conflicts it finds then with it.
    public var mergePolicy: MergePolicy = .error
}

/// What a backend answers a save with.
public enum BackendSaveOutcome<Reference: Hashable & Sendable>: Sendable {
    /// Everything was written: each written row's new version (updates and
    /// inserts, by reference), and each insert's reference by its temporary ID.
    case saved(versions: [Reference: Int64], references: [Int64: Reference])
    /// Rows whose versions moved (or that are gone, with nil) since they were
    /// read: nothing was written. Each conflict carries the row as the backend has it now.
    case conflicts([(reference: Reference, entityName: String, current: BackendRow<Reference>?)])
}

/// A backend of your own that an ``IncrementalStore`` puts contexts on, as
/// Core Data's `NSIncrementalStore` subclasses do: a web service, another
/// database. Sift keeps the row cache, faults (batched), uniquing,
/// prefetching, conflicts between contexts and merge policies; the backend
/// answers fetches, rows by reference, relationships and saves.
///
/// Errors a backend throws reach callers as `StoreError.server` with their
/// text; a failed save leaves the context's changes in place, to retry.
public protocol IncrementalStoreBackend: AnyObject, Sendable {
    /// What the backend calls its objects (a string, a UUID, an integer):
    /// unique in a root entity.
    associatedtype Reference: Hashable & Sendable

    /// What the backend evaluates itself (the default: nothing).
    var capabilities: BackendCapabilities { get }
    /// Whether requests may reach the backend from several threads at once
    /// (the default: no, Sift sends them one at a time).
    var allowsConcurrentRequests: Bool { get }

    /// The primary key a row keeps in the row cache and object IDs: the
    /// reference's own, for a backend whose references are positive integers
    /// (or their text); nil (the default) to let Sift number a root entity's
    /// rows in the order it first meets them.
    ///
    /// - Parameter reference: A row's reference.
    /// - Returns: Its key, or nil.
    func primaryKey(for reference: Reference) -> Int64?

    /// The reference of the row with a primary key, for a backend whose keys
    /// are its references (the inverse of ``primaryKey(for:)``), so that an
    /// object ID made from a key alone finds its row; nil (the default) when
    /// only references the backend gave are known.
    ///
    /// - Parameter primaryKey: A row's key.
    /// - Returns: Its reference, or nil.
    func reference(forPrimaryKey primaryKey: Int64) -> Reference?

    /// Whether the backend wants to hear which objects contexts hold
    /// (``objectsRegistered(_:)`` and ``objectsUnregistered(_:)``; the default: no).
    var wantsRegistrations: Bool { get }

    /// Objects contexts began to hold (Core Data's `managedObjectContextDidRegisterObjects(with:)`), by
    /// entity and reference: a backend that keeps per-object state (a subscription, a lease) starts it.
    ///
    /// - Parameter objects: The objects, each with its entity's name.
    func objectsRegistered(_ objects: [(entityName: String, reference: Reference)])

    /// Objects contexts let go of (Core Data's `managedObjectContextDidUnregisterObjects(with:)`).
    ///
    /// - Parameter objects: The objects, each with its entity's name.
    func objectsUnregistered(_ objects: [(entityName: String, reference: Reference)])

    /// The backend's identity, read once when a store opens on it (Core
    /// Data's `loadMetadata()`): its identifier and the model version its rows follow.
    ///
    /// - Returns: The metadata.
    /// - Throws: Any error: the store does not open.
    func loadMetadata() throws -> BackendMetadata

    /// The rows a fetch selects: those of its entity (and subentities) that
    /// pass its predicate, in its order and page when it gives them.
    ///
    /// - Parameter fetch: The fetch, with only what the backend accepts.
    /// - Returns: The rows.
    /// - Throws: Any error.
    func fetch(_ fetch: BackendFetch) throws -> [BackendRow<Reference>]

    /// How many rows a fetch selects, when the backend counts without
    /// returning rows; nil (the default) to let Sift count the rows ``fetch(_:)``
    /// returns. Asked only when the backend evaluates the whole predicate and
    /// the request has no offset or limit.
    ///
    /// - Parameter fetch: The fetch (no sorting, no paging).
    /// - Returns: The number of rows, or nil.
    /// - Throws: Any error.
    func count(_ fetch: BackendFetch) throws -> Int?

    /// The rows with these references (a batch of faults), in any order;
    /// those it no longer holds left out.
    ///
    /// - Parameters:
    ///   - references: The rows.
    ///   - entityName: Their entity, or an ancestor.
    /// - Returns: The rows it holds.
    /// - Throws: Any error.
    func rows(_ references: [Reference], entityName: String) throws -> [BackendRow<Reference>]

    /// The members of a to-many relationship for each owner, in order for an ordered one.
    ///
    /// - Parameters:
    ///   - relationship: The to-many relationship's name.
    ///   - entityName: The owners' entity.
    ///   - owners: The owners.
    /// - Returns: Each owner's members' references (an owner with none may be left out).
    /// - Throws: Any error.
    func destinations(of relationship: String, entityName: String, owners: [Reference]) throws -> [Reference: [Reference]]

    /// Applies one save's changes: all of them, or (on a conflict or an error) none.
    ///
    /// - Parameter changes: The inserts, updates with the versions read, deletes, links and clears.
    /// - Returns: The new versions and references, or the conflicts.
    /// - Throws: Any error; nothing must have been written.
    func save(_ changes: BackendChanges<Reference>) throws -> BackendSaveOutcome<Reference>
}

extension IncrementalStoreBackend {
    /// Sift counts the rows ``fetch(_:)`` returns.
    ///
    /// - Parameter fetch: The fetch.
    /// - Returns: nil.
    /// - Throws: Nothing.
    public func count(_ fetch: BackendFetch) throws -> Int? { nil }
    /// Registrations are not heard.
    public var wantsRegistrations: Bool { false }
    /// Ignores registrations.
    ///
    /// - Parameter objects: The objects.
    public func objectsRegistered(_ objects: [(entityName: String, reference: Reference)]) {}
    /// Ignores unregistrations.
    ///
    /// - Parameter objects: The objects.
    public func objectsUnregistered(_ objects: [(entityName: String, reference: Reference)]) {}
    /// Evaluates nothing.
    public var capabilities: BackendCapabilities { .nothing }
    /// One request at a time.
    public var allowsConcurrentRequests: Bool { false }
}
