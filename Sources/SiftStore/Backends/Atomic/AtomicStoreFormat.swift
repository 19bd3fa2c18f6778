// Store stage: the file format of an atomic store, as a store writer
// implements it — read a whole file into nodes, each with the reference the
// format knows it by, write every node back, and give each new object a
// reference. Sift does the rest (AtomicStore.swift): fetching and evaluating
// in memory, uniquing, conflicts between contexts, merge policies,
// observers, and writing the file atomically.

import Foundation
import Sift

/// One object of an atomic store's file, as a format reads and writes it:
/// its entity, the reference the format knows it by, its attribute values by
/// name, and its relationships as the references of the related objects.
///
/// ```swift
/// let robert = AtomicNode(entityName: "Person", reference: "86349382003",
///                         values: ["first": "Robert", "last": "Tibbot", "id": "86349382003"])
/// ```
public struct AtomicNode<Reference: Hashable & Sendable>: Sendable {
    /// The name of the object's entity (a subentity's own name for its objects).
    public var entityName: String
    /// What the format calls the object: unique among the objects of its
    /// entity's root entity.
    public var reference: Reference
    /// Attribute values by attribute name; an attribute not listed has no value (nil).
    public var values: [String: PredicateValue]
    /// Each to-one relationship's destination, by relationship name; a
    /// relationship not listed is empty.
    public var toOne: [String: Reference]
    /// Each to-many relationship's destinations, in order, by relationship
    /// name; a relationship not listed is empty.
    public var toMany: [String: [Reference]]

    /// An object of `entityName`.
    ///
    /// - Parameters:
    ///   - entityName: The name of the object's entity.
    ///   - reference: What the format calls the object.
    ///   - values: Attribute values by attribute name.
    ///   - toOne: To-one destinations by relationship name.
    ///   - toMany: To-many destinations by relationship name.
    public init(entityName: String, reference: Reference, values: [String: PredicateValue] = [:],
                toOne: [String: Reference] = [:], toMany: [String: [Reference]] = [:]) {
        self.entityName = entityName
        self.reference = reference
        self.values = values
        self.toOne = toOne
        self.toMany = toMany
    }
}

/// The file format of an ``AtomicStore``: what a store writer implements to
/// keep a store in a file of any format (Core Data's `NSAtomicStore`).
///
/// The format reads the whole file into nodes and writes every node back;
/// Sift keeps the nodes in memory and answers fetches, saves and conflicts
/// over them, and writes the file atomically (a temporary file beside it,
/// synced, then renamed over it). A missing or empty file opens as a new,
/// empty store, without calling the format.
///
/// ```swift
/// struct PeopleText: AtomicStoreFormat {           // lines `Person::first:Robert:last:Tibbot:id:86349382003`
///     func read(_ data: Data, model: DataModel) throws -> [AtomicNode<String>] { … }
///     func write(_ nodes: [AtomicNode<String>], model: DataModel) throws -> Data { … }
///     func newReference(entityName: String, values: [String: PredicateValue], primaryKey: Int64) throws -> String {
///         values["id"]?.stringValue ?? String(primaryKey)
///     }
/// }
/// let store = try AtomicStore(url: peopleFile, format: PeopleText(), model: peopleModel)
/// ```
public protocol AtomicStoreFormat: Sendable {
    /// What the format calls an object (a string, a UUID, an integer): unique
    /// among the objects of a root entity.
    associatedtype Reference: Hashable & Sendable

    /// The model a file carries, for a format that keeps one (the default:
    /// none, so the store must be opened with its model).
    ///
    /// - Parameter data: The whole file.
    /// - Returns: The file's model, or nil.
    /// - Throws: Any error, reported as `StoreError.unreadableStoreFile`.
    func model(in data: Data) throws -> DataModel?

    /// Reads every object of a file.
    ///
    /// - Parameters:
    ///   - data: The whole file (never empty: an empty file is a new store).
    ///   - model: The store's model.
    /// - Returns: Every object, each with its reference, values and relationships.
    /// - Throws: Any error (a malformed line, say), reported as `StoreError.unreadableStoreFile`; the store
    ///   does not open, and the file is not touched.
    func read(_ data: Data, model: DataModel) throws -> [AtomicNode<Reference>]

    /// Writes every object as the file's new contents.
    ///
    /// - Parameters:
    ///   - nodes: Every object of the store, ordered by entity, then by the order the store keeps.
    ///   - model: The store's model.
    /// - Returns: The whole file.
    /// - Throws: Any error (a value the format cannot write), reported as `StoreError.cannotWrite`; the old
    ///   file is kept.
    func write(_ nodes: [AtomicNode<Reference>], model: DataModel) throws -> Data

    /// The reference of an object inserted since the file was read, when it
    /// is first saved: unique among the objects of its root entity (Sift
    /// refuses the save with `StoreError.duplicateReference` otherwise).
    ///
    /// - Parameters:
    ///   - entityName: The new object's entity.
    ///   - values: Its attribute values by name, as saved (nil values left out).
    ///   - primaryKey: The key Sift gave it, unique in its root entity's table: a format whose references
    ///     are numbers may use it.
    /// - Returns: The object's reference.
    /// - Throws: Any error, reported as `StoreError.cannotWrite`; nothing is written.
    func newReference(entityName: String, values: [String: PredicateValue], primaryKey: Int64) throws -> Reference

    /// The primary key an object keeps in the store's row cache and object
    /// IDs: the reference's own, for a format whose references are positive
    /// integers; nil (the default) to let Sift number the objects in the
    /// order the file lists them.
    ///
    /// - Parameter reference: An object's reference.
    /// - Returns: Its key, or nil.
    func primaryKey(for reference: Reference) -> Int64?

    /// Every object as the file's new contents, with the store's metadata,
    /// for a format that keeps metadata (the default writes the objects alone,
    /// with ``write(_:model:)``).
    ///
    /// - Parameters:
    ///   - nodes: Every object of the store.
    ///   - metadata: The store's metadata, as last read or set.
    ///   - model: The store's model.
    /// - Returns: The whole file.
    /// - Throws: Any error, reported as `StoreError.cannotWrite`; the old file is kept.
    func write(_ nodes: [AtomicNode<Reference>], metadata: [String: PredicateValue], model: DataModel) throws -> Data

    /// Writes the store's metadata into the file without reading its
    /// objects, for a format that keeps metadata (the default refuses).
    ///
    /// - Parameters:
    ///   - metadata: The new metadata.
    ///   - url: The store's file.
    /// - Throws: Any error, reported as `StoreError.cannotWrite`; the file must be left as it was.
    func setMetadata(_ metadata: [String: PredicateValue], at url: URL) throws

    /// The store's metadata read from the file without reading its objects,
    /// for a format that keeps some (the default: none).
    ///
    /// - Parameter url: The store's file.
    /// - Returns: The metadata by key, or nil.
    /// - Throws: Any error, reported as `StoreError.unreadableStoreFile`.
    func metadata(at url: URL) throws -> [String: PredicateValue]?
}

extension AtomicStoreFormat {
    /// No model in the file: the store is opened with its model.
    ///
    /// - Parameter data: The whole file.
    /// - Returns: nil.
    /// - Throws: Nothing.
    public func model(in data: Data) throws -> DataModel? { nil }

    /// Sift numbers the objects in the order the file lists them.
    ///
    /// - Parameter reference: An object's reference.
    /// - Returns: nil.
    public func primaryKey(for reference: Reference) -> Int64? { nil }

    /// No metadata.
    ///
    /// - Parameter url: The store's file.
    /// - Returns: nil.
    /// - Throws: Nothing.
    public func metadata(at url: URL) throws -> [String: PredicateValue]? { nil }

    /// The objects alone: the format keeps no metadata.
    ///
    /// - Parameters:
    ///   - nodes: Every object.
    ///   - metadata: Ignored.
    ///   - model: The store's model.
    /// - Returns: What ``write(_:model:)`` gives.
    /// - Throws: What ``write(_:model:)`` throws.
    public func write(_ nodes: [AtomicNode<Reference>], metadata: [String: PredicateValue], model: DataModel) throws -> Data {
        try write(nodes, model: model)
    }

    /// Refuses: the format keeps no metadata.
    ///
    /// - Parameters:
    ///   - metadata: The new metadata.
    ///   - url: The store's file.
    /// - Throws: `StoreError.cannotWrite`, always.
    public func setMetadata(_ metadata: [String: PredicateValue], at url: URL) throws {
        throw StoreError.cannotWrite(path: url.path, reason: "its format keeps no metadata")
    }
}
