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

/// One object's values, as the store delivered them.
public final class RowNode: Sendable {
    /// The object this node holds.
    public let id: ObjectID
    /// The object's version (incremented by every save of the row).
    public let version: Int64
    /// When the values were fetched, in seconds since 2001-01-01.
    public let fetchTimestamp: Double
    /// Attribute values, by attribute slot.
    public let values: [PredicateValue]
    /// To-one relationships, by to-one slot: the destination's primary key.
    public let toOne: [Int64?]
    /// To-many relationships, by to-many slot: the destinations' primary
    /// keys, or nil when the store has not loaded them.
    public let toMany: [[Int64]?]

    /// Creates a node holding one object's values.
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
        self.id = id
        self.version = version
        self.fetchTimestamp = fetchTimestamp
        self.values = values
        self.toOne = toOne
        self.toMany = toMany
    }
}

/// A consistent, lock-free view of the nodes in a row cache at one moment.
public struct RowSnapshot: Sendable {
    /// For each root entity (by index), the nodes of its table by primary
    /// key; the tables of other entities are empty.
    @usableFromInline let tables: [[Int64: RowNode]]
    /// The model the nodes follow.
    @usableFromInline let model: DataModel
    /// Each entity's root entity, by index: whose table holds its nodes.
    @usableFromInline let roots: [Int]
    /// The nodes laid out by column, made as predicates ask for them
    /// (`table(entity:)`); shared by the copies of the snapshot, and by
    /// later snapshots of a cache whose nodes have not changed.
    let columnar: ColumnStore

    /// A snapshot of these tables (by root entity index) of `model`'s nodes.
    package init(tables: [[Int64: RowNode]], model: DataModel, roots: [Int]) {
        self.init(tables: tables, model: model, roots: roots, columns: ColumnStore())
    }

    /// A snapshot of these tables whose columns are kept in `columns`: the
    /// same store for every snapshot of the same nodes.
    package init(tables: [[Int64: RowNode]], model: DataModel, roots: [Int], columns: ColumnStore) {
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
    @inlinable
    public func node(entity: Int, primaryKey: Int64) -> RowNode? {
        tables[roots[entity]][primaryKey]
    }

    /// The nodes by primary key of an entity's table (its relatives' too).
    ///
    /// - Parameter entity: The index of an entity of the table, in the model.
    /// - Returns: Every node of the table, by primary key.
    public func nodesByKey(entity: Int) -> [Int64: RowNode] { tables[roots[entity]] }

    /// Every node of an entity and its subentities, in primary-key order.
    ///
    /// - Parameter entity: The index of the entity in the model.
    /// - Returns: The nodes of the entity and its subentities, sorted by
    ///   primary key.
    public func nodes(entity: Int) -> [RowNode] {
        let table = tables[roots[entity]].values
        let all = model.entities[entity].subentities.isEmpty && roots[entity] == entity
        return (all ? Array(table) : table.filter { model.isEntity(at: $0.id.entity, kindOf: entity) })
            .sorted { $0.id.primaryKey < $1.id.primaryKey }
    }
}
