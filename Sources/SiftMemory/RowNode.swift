// Stage 6a (memory lowering): row nodes, what the memory lowering evaluates
// stored objects as.
//
// A node holds one object's values as the store delivers them: attribute
// values in slots by attribute index, to-one relationships as primary keys,
// to-many relationships as collections of primary keys, plus the version and
// fetch time the store needs. Nodes are immutable; the store's row cache
// (`RowCache`, in the store stage) replaces a node when fresher values
// arrive. Evaluation reads a snapshot of the cache, so it takes no lock per
// object.

import Foundation
import SiftModel
import SiftValues

/// Identifies one stored object: its entity (by index in the model) and its
/// primary key, unique among the rows of its root entity (the entity and
/// its relatives share one table).
///
/// Two IDs are equal when they name the same row: the same root entity and
/// primary key. An ID reached through a relationship whose destination has
/// subentities may name the destination rather than the object's own,
/// more specific entity until the object's row is read.
public struct ObjectID: Hashable, Sendable, CustomStringConvertible {
    /// The object's primary key.
    public var primaryKey: Int64
    /// The entity indexes, kept in 32 bits so that an ID is two words
    /// (contexts and row caches hash and store IDs a great deal).
    private var entityIndex: Int32
    private var rootIndex: Int32

    /// The index of the object's entity in the model.
    public var entity: Int {
        get { Int(entityIndex) }
        set { entityIndex = Int32(clamping: newValue) }
    }

    /// The index of the entity's root entity: whose table holds the row.
    public var root: Int { Int(rootIndex) }

    /// The ID of a row of an entity with no superentity.
    ///
    /// - Parameters:
    ///   - entity: The index of the entity in the model; it must have no
    ///     superentity (it is its own root).
    ///   - primaryKey: The row's primary key.
    public init(entity: Int, primaryKey: Int64) {
        self.init(entity: entity, root: entity, primaryKey: primaryKey)
    }

    /// The ID of a row of the entity at `entity`, whose root entity is at `root`.
    @usableFromInline
    package init(entity: Int, root: Int, primaryKey: Int64) {
        self.primaryKey = primaryKey
        self.entityIndex = Int32(clamping: entity)
        self.rootIndex = Int32(clamping: root)
    }

    /// The ID of a row of `entity`.
    ///
    /// - Parameters:
    ///   - entity: The object's entity, from the model.
    ///   - primaryKey: The row's primary key, in the table of the entity's root.
    public init(entity: Entity, primaryKey: Int64) {
        self.init(entity: entity.index, root: entity.rootIndex, primaryKey: primaryKey)
    }

    public var description: String { "\(entity)/\(primaryKey)" }

    public static func == (lhs: ObjectID, rhs: ObjectID) -> Bool {
        lhs.primaryKey == rhs.primaryKey && lhs.rootIndex == rhs.rootIndex
    }

    /// One word to hash: row caches and contexts hash IDs a great deal.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(UInt64(bitPattern: primaryKey) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(UInt32(bitPattern: rootIndex)))
    }
}

/// One object's values, as the store delivered them: a view of one row of
/// a ``RowBatch``.
///
/// A node is two words: the batch that holds the row, and the row's index
/// in it. The rows of one fetch share a batch (up to 4 096 rows to a
/// batch), whose values are laid out by column; a node made on its own (``init(id:version:fetchTimestamp:values:toOne:toMany:)``)
/// is a batch of one row. Read a value with ``value(at:)``, a to-one key
/// with ``toOneKey(at:)`` and a to-many's keys with ``toManyKeys(at:)``:
/// they read the batch in place, where ``values``, ``toOne`` and ``toMany``
/// make arrays.
public struct RowNode: Sendable {
    /// The rows this node is one of.
    public let batch: RowBatch
    @usableFromInline let index: Int32
    /// The node's row in ``batch``.
    @inlinable
    public var row: Int { Int(index) }

    /// The node of row `row` of `batch`.
    ///
    /// - Parameters:
    ///   - batch: The rows the node is one of.
    ///   - row: The row's index in `batch`, below its `count`.
    @inlinable
    public init(batch: RowBatch, row: Int) {
        self.batch = batch
        self.index = Int32(truncatingIfNeeded: row)
    }

    /// Creates a node holding one object's values: a batch of one row.
    ///
    /// - Parameters:
    ///   - id: The object the node holds.
    ///   - version: The object's version (1 by default).
    ///   - fetchTimestamp: When the values were fetched, in seconds since
    ///     2001-01-01 (now by default).
    ///   - values: The attribute values, by attribute slot.
    ///   - toOne: The to-one relationships, by to-one slot: each
    ///     destination's primary key, or nil when there is none.
    ///   - toMany: The to-many relationships, by to-many slot: the
    ///     destinations' primary keys, or nil when they are not loaded.
    public init(id: ObjectID, version: Int64 = 1, fetchTimestamp: Double = Date().timeIntervalSinceReferenceDate,
                values: [PredicateValue], toOne: [Int64?] = [], toMany: [[Int64]?] = []) {
        self.init(batch: RowBatch(id: id, version: version, fetchTimestamp: fetchTimestamp,
                                  values: values, toOne: toOne, toMany: toMany), row: 0)
    }

    /// The object this node holds.
    @inlinable
    public var id: ObjectID {
        ObjectID(entity: batch.entity, root: batch.root, primaryKey: batch.primaryKey(at: row))
    }
    /// The object's version (incremented by every save of the row).
    public var version: Int64 { batch.version(at: row) }
    /// When the values were fetched, in seconds since 2001-01-01.
    @inlinable
    public var fetchTimestamp: Double { batch.fetchTimestamp }

    /// The value in an attribute slot; `.null` for a slot the node does not have.
    ///
    /// - Parameter slot: The attribute's slot.
    /// - Returns: The value the store delivered.
    @inlinable @inline(__always)
    public func value(at slot: Int) -> PredicateValue { batch.value(slot: slot, row: row) }

    /// The destination's primary key of a to-one slot; nil when there is
    /// none (or the node has no such slot).
    ///
    /// - Parameter slot: The to-one relationship's slot.
    /// - Returns: The destination's primary key, or nil.
    @inlinable
    public func toOneKey(at slot: Int) -> Int64? { batch.toOneKey(slot: slot, row: row) }

    /// The members' primary keys of a to-many slot; nil when the store has
    /// not loaded them (or the node has no such slot).
    ///
    /// - Parameter slot: The to-many relationship's slot.
    /// - Returns: The members' primary keys, or nil.
    public func toManyKeys(at slot: Int) -> [Int64]? { batch.toManyKeys(slot: slot, row: row) }

    /// Attribute values, by attribute slot (an array made on each call:
    /// ``value(at:)`` reads one in place).
    public var values: [PredicateValue] { batch.values(row) }
    /// To-one relationships, by to-one slot: the destination's primary key.
    public var toOne: [Int64?] { (0..<batch.toOneCount).map { batch.toOneKey(slot: $0, row: row) } }
    /// To-many relationships, by to-many slot: the destinations' primary
    /// keys, or nil when the store has not loaded them.
    public var toMany: [[Int64]?] { (0..<batch.toManyCount).map { batch.toManyKeys(slot: $0, row: row) } }

    /// A copy of the node with its to-many relationships replaced.
    ///
    /// - Parameter toMany: The to-many relationships, by slot.
    /// - Returns: A node of one row with the same ID, version, timestamp,
    ///   values and to-one keys.
    public func replacingToMany(_ toMany: [[Int64]?]) -> RowNode {
        RowNode(id: id, version: version, fetchTimestamp: fetchTimestamp, values: values, toOne: toOne, toMany: toMany)
    }
}

/// A row cache's entry for one object ID: its node, when the cache holds
/// one, and how many registrations (contexts' uses) keep it.
public struct CachedRow: Sendable {
    /// The node, or nil when the cache holds none (only registrations).
    public var node: RowNode?
    /// How many registrations keep the node (`RowCache.register`).
    public var references: Int32

    /// An entry for `node`, kept by `references` registrations.
    ///
    /// - Parameters:
    ///   - node: The node, or nil.
    ///   - references: How many registrations keep it.
    @inlinable
    public init(node: RowNode?, references: Int32 = 0) {
        self.node = node
        self.references = references
    }
}

/// A consistent, lock-free view of the nodes in a row cache at one moment.
public struct RowSnapshot: Sendable {
    /// For each root entity (by index), the entries of its table by primary
    /// key; the tables of other entities are empty.
    let tables: [RowIndex]
    /// The model the nodes follow.
    let model: DataModel
    /// Each entity's root entity, by index: whose table holds its nodes.
    let roots: [Int]
    /// The nodes laid out by column, made as predicates ask for them
    /// (`table(entity:)`); shared by the copies of the snapshot, and by
    /// later snapshots of a cache whose nodes have not changed.
    let columnar: ColumnStore

    /// A snapshot of these tables (by root entity index) of `model`'s nodes.
    package init(tables: [RowIndex], model: DataModel, roots: [Int]) {
        self.init(tables: tables, model: model, roots: roots, columns: ColumnStore())
    }

    /// A snapshot of these tables whose columns are kept in `columns`: the
    /// same store for every snapshot of the same nodes.
    package init(tables: [RowIndex], model: DataModel, roots: [Int], columns: ColumnStore) {
        self.tables = tables
        self.model = model
        self.roots = roots
        self.columnar = columns
    }

    /// The node of `primaryKey` in the table of the entity at `entity`,
    /// whichever entity of the table it is.
    ///
    /// - Parameters:
    ///   - entity: The index of an entity of the table, in the model.
    ///   - primaryKey: The row's primary key.
    /// - Returns: The node, or nil when the snapshot has none for the key.
    public func node(entity: Int, primaryKey: Int64) -> RowNode? {
        tables[roots[entity]][primaryKey]?.node
    }

    /// The nodes by primary key of an entity's table (its relatives' too).
    ///
    /// - Parameter entity: The index of an entity of the table, in the model.
    /// - Returns: Every node of the table, by primary key.
    public func nodesByKey(entity: Int) -> [Int64: RowNode] {
        var nodes: [Int64: RowNode] = [:]
        nodes.reserveCapacity(tables[roots[entity]].count)
        tables[roots[entity]].forEach { key, entry in nodes[key] = entry.node }
        return nodes
    }

    /// Every node of an entity and its subentities, in primary-key order.
    ///
    /// - Parameter entity: The index of the entity in the model.
    /// - Returns: The nodes of the entity and its subentities, sorted by
    ///   primary key.
    public func nodes(entity: Int) -> [RowNode] {
        let all = model.entities[entity].subentities.isEmpty && roots[entity] == entity
        guard !all else { return tables[entity].nodes }
        var nodes: [RowNode] = []
        tables[roots[entity]].forEach { _, entry in
            if let node = entry.node, model.isEntity(at: node.batch.entity, kindOf: entity) { nodes.append(node) }
        }
        return nodes
    }
}
