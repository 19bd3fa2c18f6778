// Store stage: the row cache — the nodes of the rows read so far, shared by
// every context of a store, with a reference count per object that contexts
// hold (register, unregister): a node nothing holds any more is purged. A
// fetch into a table the cache holds nothing of is kept as the fetch's
// batches, counted once for the context that registers it all, and indexed
// only when something needs a row by ID (`PendingFetch`). A
// snapshot of it is what the memory lowering evaluates over (`RowSnapshot`,
// `RowNodeDomain`, in the memory stage); snapshots of the same nodes share
// the columns the memory lowering lays out from them (`RowTable`).

import Foundation
import Sift
import Synchronization

/// Nodes by object ID, with reference counts. Safe to use from several threads.
///
/// Each root entity's entries are indexed by primary key in pages, not
/// hashed: registering or releasing the objects of a fetch in key order
/// reads memory in order.
///
/// ```swift
/// guard let employee = model.entity(named: "Employee") else { return }   // name, age; a to-one department
/// let cache = RowCache(model: model)
/// let id = ObjectID(entity: employee, primaryKey: 1)
/// cache.store([RowNode(id: id, values: ["Ann", 41], toOne: [nil])])   // values by slot; no department
/// cache.register(id)                                       // a context uses the object
/// if let node = cache.node(id) { print(node.value(at: 1)) }   // 41
/// cache.unregister(id)                                     // its last user is gone: the node is purged
/// print(cache.node(id) == nil)                             // true
/// ```
public final class RowCache: Sendable {
    /// The model the nodes follow.
    public let model: DataModel
    /// Each entity's root entity, by index.
    let roots: [Int]

    private struct State {
        /// Each root entity's entries by primary key: the node and its
        /// reference count in one entry, so a registration is one indexed
        /// operation (`RowIndex`).
        var tables: [RowIndex]
        /// The columns of snapshots of the nodes as they are now; dropped
        /// whenever a node changes (not when a count does).
        var columns: ColumnStore?
        /// How many entries hold a node, pending fetches' nodes included.
        var nodeCount = 0
        /// Fetches into tables the cache held nothing of, kept as their
        /// nodes and not indexed yet (`PendingFetch`).
        var pending: [PendingFetch] = []

        /// Indexes every pending fetch: what any use of `tables` does first.
        @inline(__always)
        mutating func indexPending() {
            if !pending.isEmpty { indexAllPending() }
        }

        @inline(never)
        mutating func indexAllPending() {
            for fetch in pending {
                // The table held nothing when the fetch was kept, and nothing
                // has used it since (that would have indexed it): every node is
                // added, with the fetch's registrations.
                var nodes: [RowNode] = []
                nodes.reserveCapacity(fetch.count)
                fetch.forEachNode { _, node in nodes.append(node) }
                RowCache.modify(each: nodes.count, id: { nodes[$0].id }, &self) { index, entry in
                    entry = CachedRow(node: nodes[index], references: fetch.registrations)
                }
            }
            pending = []
        }
    }

    /// A fetch's nodes, kept as the fetch returned them (its batches, or
    /// its array) instead of indexed one by one, while nothing needs them
    /// found by ID: the rows of a table the cache held nothing of, with
    /// distinct keys. A context that registers exactly these nodes, and
    /// gives them back exactly, counts once for the whole fetch
    /// (`registrations`); a fetch that nobody else used is dropped whole
    /// when its context goes, with no index made or emptied. Any other use
    /// of the cache indexes it first, as `storeFetched` would have.
    private struct PendingFetch {
        /// The fetch's rows: the batches the store made, every row of each
        /// in order, when the fetch's nodes are just that (a fetch of one
        /// entity: no array of 16-byte nodes kept beside the batches);
        /// otherwise the nodes, as stored (the same array the store hands
        /// the context).
        private let rows: Rows
        /// How many nodes the fetch has.
        let count: Int
        /// Whether the fetch is kept as its batches.
        var isKeptAsBatches: Bool {
            if case .batches = rows { return true }
            return false
        }
        /// The root entity of every node.
        let root: Int
        /// How many times each node is registered.
        var registrations: Int32 = 0

        private enum Rows {
            case batches([RowBatch])
            case nodes([RowNode])
        }

        init(nodes: [RowNode], root: Int) {
            rows = Self.batches(of: nodes).map(Rows.batches) ?? .nodes(nodes)
            count = nodes.count
            self.root = root
        }

        /// A fetch kept as its batches, `count` rows in all.
        init(batches: [RowBatch], count: Int, root: Int) {
            rows = .batches(batches)
            self.count = count
            self.root = root
        }

        /// Whether `batches` are this fetch's batches (by identity), in order.
        func isSame(as batches: [RowBatch]) -> Bool {
            guard case .batches(let own) = rows, own.count == batches.count else { return false }
            return zip(own, batches).allSatisfy { $0 === $1 }
        }

        /// The batches whose rows, every one in order, are `nodes`; nil
        /// when `nodes` are not that.
        private static func batches(of nodes: [RowNode]) -> [RowBatch]? {
            nodes.withUnsafeBufferPointer { nodes in
                var batches: [RowBatch] = []
                var start = 0
                while start < nodes.count {
                    let batch = nodes[start].batch
                    guard nodes[start].row == 0, batch.count > 0, batch.count <= nodes.count - start else { return nil }
                    for row in 0..<batch.count where nodes[start + row].batch !== batch || nodes[start + row].row != row {
                        return nil
                    }
                    batches.append(batch)
                    start += batch.count
                }
                return batches
            }
        }

        /// Walks the fetch's nodes in order, as (index, batch, row), while
        /// `body` says to go on; whether it went through them all.
        private func walk(_ body: (Int, RowBatch, Int) -> Bool) -> Bool {
            switch rows {
            case .nodes(let nodes):
                return nodes.withUnsafeBufferPointer { nodes in
                    for index in nodes.indices where !body(index, nodes[index].batch, nodes[index].row) { return false }
                    return true
                }
            case .batches(let batches):
                var index = 0
                for batch in batches {
                    for row in 0..<batch.count {
                        guard body(index, batch, row) else { return false }
                        index += 1
                    }
                }
                return true
            }
        }

        /// Calls `body` with each node of the fetch, by index, in order.
        func forEachNode(_ body: (Int, RowNode) -> Void) {
            _ = walk { index, batch, row in
                body(index, RowNode(batch: batch, row: row))
                return true
            }
        }

        /// Whether there are `count` nodes and the node at each index is the
        /// one `matches` takes: the batch (by identity) and the row, in order.
        private func allMatch(count: Int, _ matches: (Int, RowBatch, Int) -> Bool) -> Bool {
            count == self.count && walk(matches)
        }

        /// Whether `other` are this fetch's nodes: the same array, or the same
        /// batches' rows in the same order.
        func isSame(as other: [RowNode]) -> Bool {
            if case .nodes(let nodes) = rows {
                // (The same storage, which the fetch holds: its contents cannot differ.)
                return other.count == nodes.count
                    && other.withUnsafeBufferPointer { a in nodes.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
            }
            return other.withUnsafeBufferPointer { other in
                allMatch(count: other.count) { index, batch, row in other[index].batch === batch && other[index].row == row }
            }
        }

        /// Whether `objects` are the objects of this fetch's nodes, in order, each holding its node.
        func isHeld(by objects: [ManagedObject]) -> Bool {
            objects.withUnsafeBufferPointer { objects in
                allMatch(count: objects.count) { index, batch, row in
                    guard let held = objects[index].storedBatch else { return false }
                    return held.toOpaque() == Unmanaged.passUnretained(batch).toOpaque() && Int(objects[index].storedRow) == row
                }
            }
        }

        /// Whether `nodes` may be kept pending in a cache whose state is
        /// `state`: more than a few, of one root whose table holds nothing
        /// and has no pending fetch, with distinct keys.
        static func accepts(_ nodes: [RowNode], in state: State) -> Bool {
            guard nodes.count > RowCollector.fewRows, let root = nodes.first?.id.root,
                  state.tables[root].count == 0, !state.pending.contains(where: { $0.root == root }) else { return false }
            return nodes.haveDistinctKeys(root: root)
        }

        /// `accepts` for a fetch's batches, `count` rows in all: keys
        /// increasing from row to row, batch to batch.
        static func accepts(_ batches: [RowBatch], count: Int, in state: State) -> Bool {
            guard count > RowCollector.fewRows, let root = batches.first?.root,
                  state.tables[root].count == 0, !state.pending.contains(where: { $0.root == root }) else { return false }
            var previous = Int64.min
            for (index, batch) in batches.enumerated() {
                guard batch.root == root, batch.count > 0 else { return false }
                let first = batch.primaryKey(at: 0)
                if index > 0, first <= previous { return false }
                guard batch.keysIncrease() else { return false }
                previous = batch.primaryKey(at: batch.count &- 1)
            }
            return true
        }
    }

    private let state: LockedState<State>
    /// Counts the times a cached node was replaced or removed. While it
    /// stays the same, every node stored since is still the cache's node for
    /// its ID: a context fires a fault it fetched with the node it fetched,
    /// with no lookup.
    private let replacements = Atomic<UInt64>(0)

    /// How many times a cached node has been replaced or removed so far.
    package var replacementCount: UInt64 { replacements.load(ordering: .acquiring) }

    /// Notes that cached nodes were replaced or removed (under the lock).
    private func replaced() { replacements.wrappingAdd(1, ordering: .releasing) }

    /// Creates an empty cache for `model`.
    ///
    /// - Parameter model: The model the nodes will follow.
    public init(model: DataModel) {
        self.model = model
        self.roots = model.entities.map(\.rootIndex)
        self.state = LockedState(State(tables: Array(repeating: RowIndex(), count: model.entities.count)))
        self.registrations = nil
    }

    /// A cache that tells `registrations` the IDs contexts register (`true`)
    /// and unregister (`false`), outside its lock (an incremental store tells
    /// its backend).
    package init(model: DataModel, registrations: @escaping @Sendable ([ObjectID], Bool) -> Void) {
        self.model = model
        self.roots = model.entities.map(\.rootIndex)
        self.state = LockedState(State(tables: Array(repeating: RowIndex(), count: model.entities.count)))
        self.registrations = registrations
    }

    /// Who hears of registrations, if anyone.
    @usableFromInline
    let registrations: (@Sendable ([ObjectID], Bool) -> Void)?

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
            state.indexPending()
            var anyReplaced = false
            var added = 0
            Self.modify(each: nodes.count, id: { nodes[$0].id }, &state) { index, entry in
                if Self.put(nodes[index], in: &entry) != nil { anyReplaced = true } else { added += 1 }
            }
            state.nodeCount += added
            if anyReplaced { replaced() }
            state.columns = nil
        }
    }

    /// Puts `node` in an entry; returns the node it replaced, nil when the
    /// entry held none (a node added).
    @inline(__always)
    private static func put(_ node: RowNode, in entry: inout CachedRow?) -> RowNode? {
        let replaced = entry?.node
        if entry == nil { entry = CachedRow(node: node) } else { entry?.node = node }
        return replaced
    }

    /// Changes the entry of `key` in place: one indexed operation.
    @inline(__always)
    private static func modify<R>(_ table: inout RowIndex, _ key: Int64, _ body: (inout CachedRow?) -> R) -> R {
        table.modify(key, body)
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
            state.columns = nil
            // Rows of a table the cache holds nothing of replace nothing:
            // kept as they are, indexed when first needed.
            if PendingFetch.accepts(nodes, in: state) {
                state.pending.append(PendingFetch(nodes: nodes, root: nodes[0].id.root))
                state.nodeCount += nodes.count
                return nodes
            }
            state.indexPending()
            var stored = nodes
            var anyReplaced = false
            var added = 0
            defer {
                state.nodeCount += added
                if anyReplaced { replaced() }
            }
            // The nodes in runs of one page: the new node goes in, the one it replaced comes out.
            Self.modify(each: nodes.count, id: { nodes[$0].id }, &state) { index, entry in
                let node = nodes[index]
                guard let cached = Self.put(node, in: &entry) else {
                    added += 1
                    return
                }
                anyReplaced = true
                guard cached.batch.toManyCount > 0, cached.version == node.version else { return }
                // (Read in place: most cached rows have no to-many loaded, and need no array made.)
                guard (0..<cached.batch.toManyCount).contains(where: { cached.toManyKeys(at: $0) != nil }) else { return }
                let toMany = cached.toMany
                let kept = node.replacingToMany(zip(node.toMany, toMany).map { $0 ?? $1 })
                entry?.node = kept
                stored[index] = kept
            }
            return stored
        }
    }

    /// Runs `body` on the entry of the ID of each element, by index, in
    /// order (the caller holds the lock): runs of one root entity go
    /// through `RowIndex.modify(each:key:_:)`, a page found once for its run of keys.
    @inline(__always)
    private static func modify(each count: Int, id: (Int) -> ObjectID, _ state: inout State,
                               _ body: (Int, inout CachedRow?) -> Void) {
        var start = 0
        while start < count {
            let root = id(start).root
            var end = start + 1
            while end < count, id(end).root == root { end += 1 }
            state.tables[root].modify(each: start..<end, key: { id($0).primaryKey }, body)
            start = end
        }
    }

    /// Keeps a fetch's batches (`count` rows, every row of each in order)
    /// as they are when the cache would keep them pending (rows of a table
    /// it holds nothing of, keys increasing): true. False, nothing stored,
    /// otherwise: the caller stores their nodes (`storeFetched(_:)`).
    package func storeFetched(batches: [RowBatch], count: Int) -> Bool {
        state.withLock { state in
            guard PendingFetch.accepts(batches, count: count, in: state) else { return false }
            state.columns = nil
            state.pending.append(PendingFetch(batches: batches, count: count, root: batches[0].root))
            state.nodeCount += count
            return true
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
            state.indexPending()
            state.columns = nil
            replaced()
            return keys.compactMap { id, targets in
                guard let node = state.tables[id.root][id.primaryKey]?.node else { return nil }
                var toMany = node.toMany
                guard slot < toMany.count else { return nil }
                toMany[slot] = targets
                let updated = node.replacingToMany(toMany)
                state.tables[id.root].modify(id.primaryKey) { $0?.node = updated }
                return updated
            }
        }
    }

    /// The node for `id`, if the cache holds it.
    ///
    /// - Parameter id: The object's ID.
    /// - Returns: The cached node, or nil.
    public func node(_ id: ObjectID) -> RowNode? {
        state.withLock { state in
            state.indexPending()
            return state.tables[id.root][id.primaryKey]?.node
        }
    }

    /// A view of every node now in the cache, read without locks. Snapshots
    /// taken while the nodes do not change share the columns predicates have
    /// read (`RowSnapshot.table(entity:)`).
    ///
    /// - Returns: A snapshot of the cache's nodes now; later changes to the
    ///   cache do not reach it.
    public func snapshot() -> RowSnapshot {
        state.withLock { state in
            state.indexPending()
            let columns = state.columns ?? ColumnStore()
            state.columns = columns
            return RowSnapshot(tables: state.tables, model: model, roots: roots, columns: columns)
        }
    }

    /// How many fetches the cache keeps whole, not indexed yet (`PendingFetch`).
    package var pendingFetchCount: Int {
        state.withLock { $0.pending.count }
    }

    /// How many of those it keeps as their batches, not as an array of nodes.
    package var pendingFetchesKeptAsBatches: Int {
        state.withLock { $0.pending.count(where: \.isKeptAsBatches) }
    }

    /// How many nodes the cache holds.
    public var count: Int {
        state.withLock { $0.nodeCount }
    }

    /// Notes that a context uses `id`.
    ///
    /// - Parameter id: The ID whose reference count goes up by one.
    package func register(_ id: ObjectID) {
        registerAll([id])
    }

    /// The node of `id` when the cache holds one that `isUsable` accepts,
    /// registered for the caller under the same lock (a context firing a
    /// fault: one lock and one hashed operation, not a read and then a
    /// registration).
    ///
    /// - Parameters:
    ///   - id: The object's ID.
    ///   - isUsable: Whether the cached node will do (fresh enough).
    /// - Returns: The node, now registered once more; nil (and nothing
    ///   registered) when there is none or it will not do.
    package func registeredNode(_ id: ObjectID, where isUsable: (RowNode) -> Bool) -> RowNode? {
        let node = state.withLock { state -> RowNode? in
            state.indexPending()
            return Self.modify(&state.tables[id.root], id.primaryKey) { entry -> RowNode? in
                guard let node = entry?.node, isUsable(node) else { return nil }
                entry?.references &+= 1
                return node
            }
        }
        if node != nil { registrations?([id], true) }
        return node
    }

    /// Notes that a context uses each of `ids`, under one lock.
    ///
    /// - Parameter ids: The IDs whose reference counts go up by one each.
    @inlinable
    package func register(_ ids: some Sequence<ObjectID>) {
        registerAll(Array(ids))
    }

    /// Notes that a context uses the object of each of `nodes`, under one
    /// lock (a fetch's objects: no array of their IDs made).
    ///
    /// - Parameter nodes: The nodes whose objects' reference counts go up by one each.
    package func register(nodes: [RowNode]) {
        guard !nodes.isEmpty else { return }
        let counted = state.withLock { state in
            // The very nodes of a pending fetch: one count for all of them.
            guard let index = state.pending.firstIndex(where: { $0.isSame(as: nodes) }),
                  state.pending[index].registrations < Int32.max else { return false }
            state.pending[index].registrations += 1
            return true
        }
        if !counted { acquire(nodes.count, id: { nodes[$0].id }) }
        if let registrations { registrations(nodes.map(\.id), true) }
    }

    /// Notes that a context uses the object of each row of `batches`
    /// (`count` rows, every row of each in order), under one lock: one
    /// count for all when they are a pending fetch's batches.
    package func register(batches: [RowBatch], count: Int) {
        guard count > 0 else { return }
        let counted = state.withLock { state in
            guard let index = state.pending.firstIndex(where: { $0.isSame(as: batches) }),
                  state.pending[index].registrations < Int32.max else { return false }
            state.pending[index].registrations += 1
            return true
        }
        guard !counted || registrations != nil else { return }
        var ids: [ObjectID] = []
        ids.reserveCapacity(count)
        for batch in batches {
            for row in 0..<batch.count { ids.append(ObjectID(entity: batch.entity, root: batch.root, primaryKey: batch.primaryKey(at: row))) }
        }
        if !counted { acquire(ids.count, id: { ids[$0] }) }
        if let registrations { registrations(ids, true) }
    }

    // The generic entry points gather the IDs where they are specialized;
    // the work runs on a plain array (a generic loop across the module
    // boundary went through witness tables: 31 % of dropping a context).
    @usableFromInline
    func registerAll(_ ids: [ObjectID]) {
        guard !ids.isEmpty else { return }
        acquire(ids.count, id: { ids[$0] })
        registrations?(ids, true)
    }

    /// Adds one registration to the ID of each element (by index), under one lock.
    @inline(__always)
    private func acquire(_ count: Int, id: (Int) -> ObjectID) {
        state.withLock { state in
            state.indexPending()
            Self.modify(each: count, id: id, &state) { _, entry in
                if entry == nil { entry = CachedRow(node: nil, references: 1) } else { entry?.references &+= 1 }
            }
        }
    }

    /// Notes that a context no longer uses `id`; when nothing uses it any
    /// more its node is purged.
    ///
    /// - Parameter id: The ID whose reference count goes down by one; an ID
    ///   never registered is ignored.
    package func unregister(_ id: ObjectID) {
        unregisterAll([id])
    }

    /// `unregister` for each of `ids`, under one lock.
    ///
    /// - Parameter ids: The IDs whose reference counts go down by one each.
    @inlinable
    package func unregister(_ ids: some Sequence<ObjectID>) {
        unregisterAll(Array(ids))
    }

    @usableFromInline
    func unregisterAll(_ ids: [ObjectID]) {
        guard !ids.isEmpty else { return }
        release(ids.count, id: { ids[$0] }, where: { _ in true })
        registrations?(ids, false)
    }

    /// `unregister` for each of `objects` that holds a registration (a
    /// context's objects as it goes), under one lock.
    ///
    /// - Parameter objects: Objects of a context of this cache's store.
    func unregister(objects: [ManagedObject]) {
        guard !objects.isEmpty else { return }
        let released = state.withLock { state in
            // The objects of a pending fetch, each holding its node: one count
            // less for all of them; the fetch's nodes go with the last.
            guard let index = state.pending.firstIndex(where: { $0.registrations > 0 && $0.isHeld(by: objects) }) else {
                return false
            }
            state.pending[index].registrations -= 1
            if state.pending[index].registrations == 0 {
                state.nodeCount -= state.pending.remove(at: index).count
                state.columns = nil
                replaced()
            }
            return true
        }
        if !released { release(objects.count, id: { objects[$0].objectID }, where: { objects[$0].holdsRegistration }) }
        if let registrations { registrations(objects.filter(\.holdsRegistration).map(\.objectID), false) }
    }

    /// Takes one registration from the ID of each element (by index) that
    /// `holds` one, under one lock; purges the nodes nothing holds any more.
    @inline(__always)
    private func release(_ count: Int, id: (Int) -> ObjectID, where holds: (Int) -> Bool) {
        state.withLock { state in
            state.indexPending()
            var purged = 0
            Self.modify(each: count, id: id, &state) { index, entry in
                guard holds(index), let references = entry?.references, references > 0 else { return }
                if references <= 1 {
                    if entry?.node != nil { purged += 1 }
                    entry = nil
                    return
                }
                entry?.references = references - 1
            }
            if purged > 0 {
                state.nodeCount -= purged
                state.columns = nil
                replaced()
            }
        }
    }

    /// How many registrations `id` has.
    ///
    /// - Parameter id: The object's ID.
    /// - Returns: The number of registrations not yet unregistered; 0 when
    ///   there are none.
    package func referenceCount(_ id: ObjectID) -> Int {
        state.withLock { state in
            state.indexPending()
            return Int(state.tables[id.root][id.primaryKey]?.references ?? 0)
        }
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
            state.indexPending()
            for id in ids {
                let removed = Self.modify(&state.tables[id.root], id.primaryKey) { entry -> Bool in
                    guard let held = entry else { return false }
                    if held.references > 0 { entry?.node = nil } else { entry = nil }
                    return held.node != nil
                }
                if removed { state.nodeCount -= 1 }
            }
            state.columns = nil
            replaced()
        }
    }

    /// Removes every node, and forgets every registration (`register`)
    /// that kept one.
    public func removeAll() {
        state.withLock { state in
            state.tables = Array(repeating: RowIndex(), count: model.entities.count)
            state.pending = []
            state.nodeCount = 0
            state.columns = nil
            replaced()
        }
    }

    /// Replaces every node with `nodes` at once: a reader sees either the
    /// old nodes or the new ones, never a cache half emptied. Reference
    /// counts are kept.
    ///
    /// - Parameter nodes: The nodes the cache holds afterwards.
    public func replaceAll(with nodes: some Sequence<RowNode>) {
        var tables = Array(repeating: RowIndex(), count: model.entities.count)
        var count = 0
        for node in nodes {
            let id = node.id
            tables[id.root].modify(id.primaryKey) { entry in
                if entry == nil { count += 1 }
                entry = CachedRow(node: node)
            }
        }
        state.withLock { state in
            state.indexPending()
            for (root, table) in state.tables.enumerated() {
                table.forEach { key, entry in
                    guard entry.references > 0 else { return }
                    tables[root].modify(key) { kept in
                        if kept == nil { kept = CachedRow(node: nil) }
                        kept?.references = entry.references
                    }
                }
            }
            state.tables = tables
            state.nodeCount = count
            state.columns = nil
            replaced()
        }
    }
}

extension RowNodeDomain {
    /// A domain over the nodes in `cache` now.
    ///
    /// - Parameter cache: The cache whose nodes relationships lead to; later
    ///   changes to it are not seen.
    public init(cache: RowCache) {
        self.init(snapshot: cache.snapshot())
    }
}

extension RowCache {
    /// The nodes of `entity` that satisfy `predicate`, in primary-key order.
    ///
    /// - Parameters:
    ///   - entity: The name of the entity whose cached nodes are tested.
    ///   - predicate: A predicate bound to that entity.
    /// - Returns: The matching nodes in primary-key order; empty when the model has no entity called `entity`.
    /// - Throws: `EvaluationError` when a `MATCHES` or `LIKE` pattern runs out of its budget on one node.
    public func nodes(of entity: String, matching predicate: BoundPredicate) throws(EvaluationError) -> [RowNode] {
        guard let index = model.entity(named: entity)?.index else { return [] }
        let domain = RowNodeDomain(cache: self)
        return try MemoryPredicate(predicate, domain: domain).filter(domain.snapshot.table(entity: index))
    }
}

extension [RowNode] {
    /// Whether the nodes are all of the table of the root entity at `root`,
    /// with no key twice: increasing keys, or keys in a range small enough
    /// to mark in a bit set. False when that cannot be told cheaply.
    func haveDistinctKeys(root: Int) -> Bool {
        var low = Int64.max, high = Int64.min
        var increasing = true
        var previous = Int64.min
        for (index, node) in enumerated() {
            guard node.batch.root == root else { return false }
            let key = node.batch.primaryKey(at: node.row)
            if index > 0, key <= previous { increasing = false }
            previous = key
            low = Swift.min(low, key)
            high = Swift.max(high, key)
        }
        if increasing { return true }
        // A range at most 64 keys a node wide: a bit set of it.
        let (width, overflow) = high.subtractingReportingOverflow(low)
        guard !overflow, width / 64 < Int64(count) else { return false }
        var seen = [UInt64](repeating: 0, count: Int(width / 64) + 1)
        for node in self {
            let offset = Int(node.batch.primaryKey(at: node.row) &- low)
            let bit: UInt64 = 1 << UInt64(offset & 63)
            if seen[offset >> 6] & bit != 0 { return false }
            seen[offset >> 6] |= bit
        }
        return true
    }
}
