// Stage 6a (memory lowering): the row cache.
//
// A node holds one object's values as the store delivers them: attribute
// values in slots by attribute index, to-one relationships as primary keys,
// to-many relationships as collections of primary keys, plus the version and
// fetch time the store needs. Nodes are immutable; the cache replaces a node
// when fresher values arrive. The cache counts references so that nodes no
// context uses any more can be purged, and it is safe to use from several
// threads. Evaluation reads a snapshot, so it takes no lock per object.

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

/// Nodes by object ID, with reference counts. Safe to use from several threads.
///
/// ```swift
/// let employee = model.entity(named: "Employee")!          // name, age; a to-one department
/// let cache = RowCache(model: model)
/// let id = ObjectID(entity: employee, primaryKey: 1)
/// cache.store([RowNode(id: id, values: ["Ann", 41], toOne: [nil])])   // values by slot; no department
/// cache.register(id)                                       // a context uses the object
/// print(cache.node(id)!.values[1])                         // 41
/// cache.unregister(id)                                     // its last user is gone: the node is purged
/// print(cache.node(id) == nil)                             // true
/// ```
public final class RowCache: Sendable {
    /// The model the nodes follow.
    public let model: DataModel
    /// Each entity's root entity, by index.
    let roots: [Int]
    /// Each entity's name, by index (a root's is what references to its
    /// table's objects name).
    let referenceNames: [String]

    private struct State {
        var tables: [[Int64: RowNode]]
        var references: [ObjectID: Int] = [:]
    }

    private let state: LockedState<State>

    /// Creates an empty cache for `model`.
    ///
    /// - Parameter model: The model the nodes will follow.
    public init(model: DataModel) {
        self.model = model
        self.roots = model.entities.map(\.rootIndex)
        self.referenceNames = model.entities.map(\.name)
        self.state = LockedState(State(tables: Array(repeating: [:], count: model.entities.count)))
    }

    /// Adds or replaces nodes.
    ///
    /// - Parameter nodes: The nodes to store, each replacing any cached node of
    ///   the same ID.
    @inlinable
    public func store(_ nodes: some Collection<RowNode>) {
        storeAll(Array(nodes))
    }

    @usableFromInline
    func storeAll(_ nodes: [RowNode]) {
        state.withLock { state in
            if nodes.count > 1024 {
                // Grow each table once, not by doubling as the nodes come.
                var added = Array(repeating: 0, count: state.tables.count)
                for node in nodes { added[node.id.root] += 1 }
                for (entity, count) in added.enumerated() where count > 0 {
                    state.tables[entity].reserveCapacity(state.tables[entity].count + count)
                }
            }
            for node in nodes { state.tables[node.id.root][node.id.primaryKey] = node }
        }
    }

    /// Adds or replaces nodes read afresh from the store, keeping the to-many
    /// relationships the cached nodes had loaded when the row's version has
    /// not changed (a row read does not read its to-many relationships).
    /// Returns the nodes as stored.
    ///
    /// - Parameter nodes: The nodes as read from the store.
    /// - Returns: The nodes as stored, in the order given: each one given, or a
    ///   copy that keeps the to-many relationships of the cached node it
    ///   replaced.
    @discardableResult
    public func storeFetched(_ nodes: [RowNode]) -> [RowNode] {
        state.withLock { state in
            // Grow each table once, not by doubling as the nodes come.
            if nodes.count > 1024 {
                var added = Array(repeating: 0, count: state.tables.count)
                for node in nodes { added[node.id.root] += 1 }
                for (entity, count) in added.enumerated() where count > 0 {
                    state.tables[entity].reserveCapacity(state.tables[entity].count + count)
                }
            }
            return nodes.map { node in
                // One hash a node: the new node goes in, the one it replaced comes back.
                guard let cached = state.tables[node.id.root].updateValue(node, forKey: node.id.primaryKey),
                      cached.version == node.version, cached.toMany.contains(where: { $0 != nil }) else { return node }
                let toMany = zip(node.toMany, cached.toMany).map { $0 ?? $1 }
                let stored = RowNode(id: node.id, version: node.version, fetchTimestamp: node.fetchTimestamp,
                                     values: node.values, toOne: node.toOne, toMany: toMany)
                state.tables[node.id.root][node.id.primaryKey] = stored
                return stored
            }
        }
    }

    /// Sets one to-many relationship of cached nodes, keeping the rest of
    /// each node as the cache has it now. Returns the updated nodes.
    ///
    /// - Parameters:
    ///   - slot: The to-many slot of the relationship.
    ///   - keys: The destinations' primary keys, by the ID of the node to set.
    /// - Returns: The nodes updated; IDs the cache holds no node for are
    ///   skipped.
    @discardableResult
    public func setToMany(slot: Int, _ keys: [ObjectID: [Int64]]) -> [RowNode] {
        state.withLock { state in
            keys.compactMap { id, targets in
                guard let node = state.tables[id.root][id.primaryKey] else { return nil }
                var toMany = node.toMany
                toMany[slot] = targets
                let updated = RowNode(id: node.id, version: node.version, fetchTimestamp: node.fetchTimestamp,
                                      values: node.values, toOne: node.toOne, toMany: toMany)
                state.tables[id.root][id.primaryKey] = updated
                return updated
            }
        }
    }

    /// The node for `id`, if the cache holds it.
    ///
    /// - Parameter id: The object's ID.
    /// - Returns: The cached node, or nil.
    public func node(_ id: ObjectID) -> RowNode? {
        state.withLock { $0.tables[id.root][id.primaryKey] }
    }

    /// A view of every node now in the cache, read without locks.
    ///
    /// - Returns: A snapshot of the cache's nodes now; later changes to the
    ///   cache do not reach it.
    public func snapshot() -> RowSnapshot {
        state.withLock { RowSnapshot(tables: $0.tables, model: model, roots: roots) }
    }

    /// How many nodes the cache holds.
    public var count: Int {
        state.withLock { $0.tables.reduce(0) { $0 + $1.count } }
    }

    /// Notes that a context uses `id`.
    ///
    /// - Parameter id: The ID whose reference count goes up by one.
    public func register(_ id: ObjectID) {
        registerAll([id])
    }

    /// Notes that a context uses each of `ids`, under one lock.
    ///
    /// - Parameter ids: The IDs whose reference counts go up by one each.
    @inlinable
    public func register(_ ids: some Sequence<ObjectID>) {
        registerAll(Array(ids))
    }

    // The generic entry points gather the IDs where they are specialized;
    // the work runs on a plain array (a generic loop across the module
    // boundary went through witness tables: 31 % of dropping a context).
    @usableFromInline
    func registerAll(_ ids: [ObjectID]) {
        state.withLock { state in
            state.references.reserveCapacity(state.references.count + ids.count)
            for id in ids { state.references[id, default: 0] += 1 }
        }
    }

    /// Notes that a context no longer uses `id`; when nothing uses it any
    /// more its node is purged.
    ///
    /// - Parameter id: The ID whose reference count goes down by one; an ID
    ///   never registered is ignored.
    public func unregister(_ id: ObjectID) {
        unregisterAll([id])
    }

    /// `unregister` for each of `ids`, under one lock.
    ///
    /// - Parameter ids: The IDs whose reference counts go down by one each.
    @inlinable
    public func unregister(_ ids: some Sequence<ObjectID>) {
        unregisterAll(Array(ids))
    }

    @usableFromInline
    func unregisterAll(_ ids: [ObjectID]) {
        state.withLock { state in
            for id in ids {
                guard let count = state.references[id] else { continue }
                if count <= 1 {
                    state.references[id] = nil
                    state.tables[id.root][id.primaryKey] = nil
                } else {
                    state.references[id] = count - 1
                }
            }
        }
    }

    /// How many registrations `id` has.
    ///
    /// - Parameter id: The object's ID.
    /// - Returns: The number of registrations not yet unregistered; 0 when
    ///   there are none.
    public func referenceCount(_ id: ObjectID) -> Int {
        state.withLock { $0.references[id] ?? 0 }
    }

    /// Removes the nodes of `ids` (rows deleted from the store), whoever
    /// holds them.
    ///
    /// - Parameter ids: The IDs whose nodes to remove; their reference counts
    ///   are kept.
    @inlinable
    public func remove(_ ids: some Sequence<ObjectID>) {
        removeNodes(Array(ids))
    }

    @usableFromInline
    func removeNodes(_ ids: [ObjectID]) {
        state.withLock { state in
            for id in ids { state.tables[id.root][id.primaryKey] = nil }
        }
    }

    /// Removes every node, and forgets every registration (`register`)
    /// that kept one.
    public func removeAll() {
        state.withLock { state in
            state.tables = Array(repeating: [:], count: model.entities.count)
            state.references = [:]
        }
    }

    /// Replaces every node with `nodes` at once: a reader sees either the
    /// old nodes or the new ones, never a cache half emptied. Reference
    /// counts are kept.
    ///
    /// - Parameter nodes: The nodes the cache holds afterwards.
    public func replaceAll(with nodes: some Sequence<RowNode>) {
        var tables = Array(repeating: [Int64: RowNode](), count: model.entities.count)
        for node in nodes { tables[node.id.root][node.id.primaryKey] = node }
        state.withLock { $0.tables = tables }
    }
}
