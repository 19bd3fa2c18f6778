// Store stage: the atomic store — a whole file, loaded at open.
//
// The file is a JSON data set (a model and its objects). Opening reads every
// object into row nodes; every fetch is answered by the memory lowering over
// them; every save applies the changes (with the same optimistic locking and
// merge policies as the SQLite store, and the delete rules worked out again
// over its rows, SaveRules.swift) and writes the whole file again,
// atomically: a temporary file beside it, then a rename over it.

import Foundation
import Sift

/// A store kept in one JSON file, read whole and written whole.
///
/// ```swift
/// let store = try AtomicStore(url: URL(fileURLWithPath: "company.json"))
/// let context = ObjectContext(store: store)
/// ```
public final class AtomicStore: PersistentStore, @unchecked Sendable {
    public let model: DataModel
    /// The nodes contexts have read, shared by every context.
    public let rowCache: RowCache
    public let functions: FunctionRegistry
    /// The store's file.
    public let url: URL
    /// Who hears about the store's saves.
    public let observers = StoreObservers()
    /// The requests compiled so far, by shape.
    public let compiledFetches = CompiledFetchCache()
    /// Every row of the store: what fetches evaluate and saves change.
    private let data: RowCache
    /// One save at a time.
    private let writing = LockedState(())

    /// Opens the store at `url`: an existing data set file (made for `model`,
    /// when given), or a new, empty store for `model`.
    ///
    /// - Parameters:
    ///   - url: The data set file; it need not exist yet.
    ///   - model: The model the file must have been made for, or the model of a new store; nil to open an
    ///     existing file with its own model.
    ///   - functions: The application's functions predicates may call.
    /// - Throws: `StoreError`: `.invalidDataSet` when the file does not read as a data set; `.modelMismatch`
    ///   when it was made for another model; `.noModel` when there is no file and no model to make one.
    public init(url: URL, model: DataModel? = nil, functions: FunctionRegistry = FunctionRegistry()) throws(StoreError) {
        self.url = url
        self.functions = functions
        if FileManager.default.fileExists(atPath: url.path) {
            let dataSet: DataSet
            do {
                dataSet = try DataSet(contentsOf: url)
            } catch {
                throw .invalidDataSet(error)
            }
            if let model, model.versionHash != dataSet.model.versionHash {
                throw .modelMismatch(path: url.path, storeHash: dataSet.model.versionHash, modelHash: model.versionHash)
            }
            self.model = dataSet.model
            self.data = dataSet.makeRowCache()
        } else {
            guard let model else { throw .noModel(path: url.path) }
            self.model = model
            self.data = RowCache(model: model)
        }
        self.rowCache = RowCache(model: self.model)
    }

    /// Adds a data set's objects to the store and writes the file.
    /// Objects whose keys the store already holds are replaced.
    ///
    /// - Parameter dataSet: A data set of the store's model.
    /// - Throws: `StoreError`: `.modelMismatch` when the data set's model is not the store's; `.cannotWrite`
    ///   when the file cannot be written (the old file is kept).
    public func importDataSet(_ dataSet: DataSet) throws(StoreError) {
        guard dataSet.model.versionHash == model.versionHash else {
            throw .modelMismatch(path: url.path, storeHash: model.versionHash, modelHash: dataSet.model.versionHash)
        }
        try writing.withLock { _ throws(StoreError) in
            let snapshot = data.snapshot()
            var tables = Self.tables(of: snapshot, model)
            for node in dataSet.nodes { tables[node.id.root][node.id.primaryKey] = node }
            let all = tables.flatMap(\.values)
            try write(all)
            data.replaceAll(with: all)
        }
    }

    // MARK: Reading

    /// The rows of the entity that match, sorted, before offset and limit.
    func matching(_ fetch: CompiledFetch) throws(StoreError) -> [RowNode] {
        let domain = RowNodeDomain(cache: data)
        var nodes = domain.snapshot.nodes(entity: fetch.entity.index)
        if let predicate = fetch.predicate {
            let filter = MemoryPredicate(predicate, domain: domain)
            nodes = try StoreError.evaluating { () throws(EvaluationError) in try filter.filter(nodes) }
        }
        return try sortedNodes(nodes, fetch, domain: domain)
    }

    /// The rows a compiled request selects, evaluated in memory over the file's rows.
    ///
    /// - Parameter fetch: The request, compiled by `compile(_:)`.
    /// - Returns: The rows' nodes, in order, offset and limit applied.
    /// - Throws: `StoreError.evaluation` when a pattern runs out of its budget.
    public func rows(for fetch: CompiledFetch) throws(StoreError) -> [RowNode] {
        rowCache.storeFetched(fetch.request.page(try matching(fetch)))
    }

    /// The IDs of the objects a compiled request selects.
    ///
    /// - Parameter fetch: The request, compiled by `compile(_:)`.
    /// - Returns: The IDs, in order, offset and limit applied.
    /// - Throws: `StoreError.evaluation` when a pattern runs out of its budget.
    public func keys(for fetch: CompiledFetch) throws(StoreError) -> [ObjectID] {
        fetch.request.page(try matching(fetch)).map(\.id)
    }

    /// How many objects a compiled request selects.
    ///
    /// - Parameter fetch: The request, compiled by `compile(_:)`.
    /// - Returns: The number of objects, offset and limit applied.
    /// - Throws: `StoreError.evaluation` when a pattern runs out of its budget.
    public func count(for fetch: CompiledFetch) throws(StoreError) -> Int {
        fetch.request.page(try matching(fetch)).count
    }

    /// The rows of `entity` with these keys.
    ///
    /// - Parameters:
    ///   - entity: The entity (or an ancestor) of the rows.
    ///   - keys: Their primary keys.
    /// - Returns: The nodes of the rows the store holds.
    /// - Throws: Nothing: the rows are in memory.
    public func rows(_ entity: Entity, keys: [Int64]) throws(StoreError) -> [RowNode] {
        let snapshot = data.snapshot()
        return rowCache.storeFetched(keys.compactMap { snapshot.node(entity: entity.index, primaryKey: $0) })
    }

    /// The member keys of a to-many relationship for each owner.
    ///
    /// - Parameters:
    ///   - relationship: A to-many relationship of `entity`.
    ///   - owners: The owners' primary keys.
    ///   - entity: The owners' entity.
    ///   - loadingRows: Whether the members' rows are put in the row cache too.
    /// - Returns: Each owner's member keys.
    /// - Throws: Nothing: the rows are in memory.
    public func links(_ relationship: Relationship, of owners: [Int64], entity: Entity,
               loadingRows: Bool) throws(StoreError) -> [Int64: [Int64]] {
        let snapshot = data.snapshot()
        var links: [Int64: [Int64]] = [:]
        for owner in owners {
            links[owner] = snapshot.node(entity: entity.index, primaryKey: owner)?.toMany[relationship.slot] ?? []
        }
        if loadingRows {
            let destination = model.entity(named: relationship.destination)!
            _ = try rows(destination, keys: Array(Set(links.values.joined())))
        }
        return links
    }

    // MARK: Saving

    /// Applies a save request to the rows and writes a new file over the
    /// old one: all of it, or none of it.
    ///
    /// - Parameter request: The changes.
    /// - Returns: `.committed` with what was written, or `.conflicts` (nothing written).
    /// - Throws: `StoreError`: `.keysExhausted` when a table has no key left; `.cannotWrite` when the file
    ///   cannot be written (the old file is kept).
    public func apply(_ request: SaveRequest) throws(StoreError) -> SaveResponse {
        // One save at a time: the file and the rows change together.
        let response = try writing.withLock { _ throws(StoreError) in try applyAlone(request) }
        if case .committed(let result) = response {
            // Committed: the row cache holds what was written.
            rowCache.store(result.nodes.values)
            rowCache.remove(result.changes.deleted)
        }
        return response
    }

    /// Applies a save request; called with the store's write lock held.
    private func applyAlone(_ request: SaveRequest) throws(StoreError) -> SaveResponse {
        var result = SaveResult()
        let snapshot = data.snapshot()
        var tables = Self.tables(of: snapshot, model)

        // Optimistic locking: the versions the context read must still be current.
        var conflicts: [RowConflict] = []
        for update in request.updates {
            let current = tables[update.id.root][update.id.primaryKey]
            if current?.version != update.expectedVersion { conflicts.append(RowConflict(id: update.id, current: current)) }
        }
        for delete in request.deletes {
            guard let expected = delete.expectedVersion, let current = tables[delete.id.root][delete.id.primaryKey] else {
                continue  // already gone, or deleted whatever its version
            }
            if current.version != expected { conflicts.append(RowConflict(id: delete.id, current: current)) }
        }
        guard conflicts.isEmpty else { return .conflicts(conflicts) }

        // Permanent keys after each table's largest.
        var next: [Int: Int64] = [:]
        for insert in request.inserts where insert.id.primaryKey < 0 {
            let e = insert.id.root
            if next[e] == nil { next[e] = max(tables[e].keys.max() ?? 0, 0) }
            guard next[e]! < Int64.max else { throw StoreError.keysExhausted(entity: model.entities[e].name) }
            next[e]! += 1
            result.keys[insert.id.primaryKey] = next[e]!
        }
        let keys = result.keys
        func resolve(_ key: Int64?) -> Int64? { SaveRequest.resolve(key, keys) }
        let now = Date().timeIntervalSinceReferenceDate

        for insert in request.inserts {
            let entity = model.entities[insert.id.entity]
            let id = ObjectID(entity: entity, primaryKey: resolve(insert.id.primaryKey)!)
            tables[id.root][id.primaryKey] = RowNode(
                id: id, version: 1, fetchTimestamp: now, values: insert.values, toOne: insert.toOne.map(resolve),
                toMany: Array(repeating: [], count: entity.toManyCount))
            result.changes.inserted.insert(id)
        }
        for update in request.updates {
            let current = tables[update.id.root][update.id.primaryKey]!
            tables[update.id.root][update.id.primaryKey] = RowNode(
                id: current.id, version: update.expectedVersion &+ 1, fetchTimestamp: now, values: update.values,
                toOne: update.toOne.map(resolve), toMany: current.toMany)
            result.changes.updated.insert(update.id)
        }
        for change in request.links {
            let owner = ObjectID(entity: change.owner.entity, root: change.owner.root, primaryKey: resolve(change.owner.primaryKey)!)
            guard tables[owner.root][owner.primaryKey] != nil else { continue }
            let removed = change.removed.compactMap(resolve)
            let added = change.added.compactMap(resolve)
            Self.link(owner, change.relationship, adding: added, removing: removed, in: &tables)
            // A many-to-many link is one link: its other side changes with it (as one join-table row does),
            // even when the merge policy dropped the other side's own change.
            if let destination = model.entity(named: change.relationship.destination),
               let inverse = change.relationship.inverse.flatMap({ destination.relationship(named: $0) }), inverse.isToMany {
                for member in added where tables[destination.rootIndex][member] != nil {
                    Self.link(ObjectID(entity: destination, primaryKey: member), inverse, adding: [owner.primaryKey], removing: [],
                              in: &tables)
                }
                for member in removed where tables[destination.rootIndex][member] != nil {
                    Self.link(ObjectID(entity: destination, primaryKey: member), inverse, adding: [], removing: [owner.primaryKey],
                              in: &tables)
                }
            }
        }
        // The delete rules, worked out again over the rows as written so
        // far (SaveRules.swift), then the deletes.
        let plan: DeletionPlan?
        do {
            plan = try request.deletionPlan(keys: keys, model: model, reader: TableReader(tables: tables, model: model))
        } catch {
            throw StoreError(error)
        }
        for delete in request.deletes {
            // A row already gone is reported too: whoever caches it must drop it.
            tables[delete.id.root][delete.id.primaryKey] = nil
            result.changes.deleted.insert(delete.id)
        }
        if let plan {
            for id in plan.deleted where !result.changes.deleted.contains(id) {
                tables[id.root][id.primaryKey] = nil
                result.ruleChanges.deleted.insert(id)
            }
            result.ruleChanges.updated = clear(plan.cleared, in: &tables, now: now)
            result.ruleChanges.updated.formUnion(plan.touched.filter { tables[$0.root][$0.primaryKey] != nil })
        }
        // Links the request wrote to rows no longer there.
        let dangling: [(entity: Entity, relationship: Relationship, rows: [ObjectID], targets: [Int64])]
        do {
            dangling = try request.danglingLinks(keys: keys, model: model, reader: TableReader(tables: tables, model: model))
        } catch {
            throw StoreError(error)
        }
        result.ruleChanges.updated.formUnion(clear(dangling, in: &tables, now: now))
        result.changes.deleted.formUnion(result.ruleChanges.deleted)
        result.changes.deleted.formUnion(request.gone)
        result.changes.updated.formUnion(result.ruleChanges.updated.subtracting(result.changes.inserted))
        listingWhatPointsBack(&tables)
        let all = withoutDanglingLinks(tables)
        try write(all)
        data.replaceAll(with: all)
        // The written rows as contexts see them: to-many relationships not loaded.
        for insert in request.inserts {
            let id = ObjectID(entity: insert.id.entity, root: insert.id.root, primaryKey: resolve(insert.id.primaryKey)!)
            result.nodes[insert.id] = tables[id.root][id.primaryKey].map(Self.unloaded)
        }
        for update in request.updates {
            result.nodes[update.id] = tables[update.id.root][update.id.primaryKey].map(Self.unloaded)
        }
        return .committed(result)
    }

    /// The nodes of each root entity's table, by root index (other
    /// entities' tables empty).
    static func tables(of snapshot: RowSnapshot, _ model: DataModel) -> [[Int64: RowNode]] {
        model.entities.map { $0.rootIndex == $0.index ? snapshot.nodesByKey(entity: $0.index) : [:] }
    }

    /// A node as a fetch returns it: its to-many relationships not loaded.
    static func unloaded(_ node: RowNode) -> RowNode {
        RowNode(id: node.id, version: node.version, fetchTimestamp: node.fetchTimestamp, values: node.values,
                toOne: node.toOne, toMany: Array(repeating: nil, count: node.toMany.count))
    }

    /// Adds members to one to-many relationship of a row (once each, last)
    /// and removes others.
    private static func link(_ owner: ObjectID, _ relationship: Relationship, adding added: [Int64], removing removed: [Int64],
                             in tables: inout [[Int64: RowNode]]) {
        guard let node = tables[owner.root][owner.primaryKey], relationship.slot < node.toMany.count else { return }
        let gone = Set(removed).union(added)
        var toMany = node.toMany
        toMany[relationship.slot] = (toMany[relationship.slot] ?? []).filter { !gone.contains($0) } + added
        guard toMany != node.toMany else { return }
        tables[owner.root][owner.primaryKey] = RowNode(id: node.id, version: node.version, fetchTimestamp: node.fetchTimestamp,
                                                       values: node.values, toOne: node.toOne, toMany: toMany)
    }

    /// Each to-many relationship whose inverse is to-one lists exactly the
    /// rows whose key points back at its row: the key decides, as a SQL
    /// store's foreign key does (a merge policy may keep one side of a link
    /// and drop the other's change). Members stay in their order, new ones
    /// last; versions do not change (the keys' rows were written).
    private func listingWhatPointsBack(_ tables: inout [[Int64: RowNode]]) {
        for entity in model.entities {
            for relationship in entity.relationships where relationship.isToMany && !relationship.isTransient {
                guard let destination = model.entity(named: relationship.destination),
                      let inverse = relationship.inverse.flatMap({ destination.relationship(named: $0) }), !inverse.isToMany
                else { continue }
                // Who points at whom, read from the keys.
                var members: [Int64: [Int64]] = [:]
                for node in tables[destination.rootIndex].values
                where model.isEntity(at: node.id.entity, kindOf: destination.index) && inverse.slot < node.toOne.count {
                    if let owner = node.toOne[inverse.slot] { members[owner, default: []].append(node.id.primaryKey) }
                }
                for (key, node) in tables[entity.rootIndex] where node.id.entity == entity.index {
                    let pointing = members[key] ?? []
                    let listed = node.toMany[relationship.slot] ?? []
                    guard listed.count != pointing.count || Set(listed) != Set(pointing) else { continue }
                    let wanted = Set(pointing)
                    let kept = listed.filter(wanted.contains)
                    let keptSet = Set(kept)
                    var toMany = node.toMany
                    toMany[relationship.slot] = kept + pointing.filter { !keptSet.contains($0) }.sorted()
                    tables[entity.rootIndex][key] = RowNode(id: node.id, version: node.version, fetchTimestamp: node.fetchTimestamp,
                                                            values: node.values, toOne: node.toOne, toMany: toMany)
                }
            }
        }
    }

    /// Clears to-one keys, each row's version incremented once.
    ///
    /// - Returns: The rows changed.
    private func clear(_ cleared: [(entity: Entity, relationship: Relationship, rows: [ObjectID], targets: [Int64])],
                       in tables: inout [[Int64: RowNode]], now: Double) -> Set<ObjectID> {
        var changed: Set<ObjectID> = []
        for clear in cleared {
            let targets = Set(clear.targets)
            let slot = clear.relationship.slot
            for id in clear.rows {
                guard let node = tables[id.root][id.primaryKey], slot < node.toOne.count,
                      let target = node.toOne[slot], targets.contains(target) else { continue }
                var toOne = node.toOne
                toOne[slot] = nil
                let version = changed.contains(id) ? node.version : node.version &+ 1
                tables[id.root][id.primaryKey] = RowNode(id: node.id, version: version, fetchTimestamp: now, values: node.values,
                                                         toOne: toOne, toMany: node.toMany)
                changed.insert(node.id)
            }
        }
        return changed
    }

    /// Every row, with no link to a row that is gone.
    private func withoutDanglingLinks(_ tables: [[Int64: RowNode]]) -> [RowNode] {
        var all: [RowNode] = []
        for table in tables {
            for node in table.values {
                let entity = model.entities[node.id.entity]
                let toOne = node.toOne.enumerated().map { slot, target -> Int64? in
                    guard let target, let relationship = entity.relationships.first(where: { !$0.isToMany && $0.slot == slot }),
                          let destination = model.entity(named: relationship.destination) else { return target }
                    return tables[destination.rootIndex][target] == nil ? nil : target
                }
                let toMany = node.toMany.enumerated().map { slot, targets -> [Int64]? in
                    guard let relationship = entity.relationships.first(where: { $0.isToMany && $0.slot == slot }),
                          let destination = model.entity(named: relationship.destination) else { return targets }
                    return (targets ?? []).filter { tables[destination.rootIndex][$0] != nil }
                }
                all.append(toOne == node.toOne && toMany == node.toMany ? node
                    : RowNode(id: node.id, version: node.version, fetchTimestamp: node.fetchTimestamp,
                              values: node.values, toOne: toOne, toMany: toMany))
            }
        }
        return all
    }

    /// Writes every row to the file: a temporary file first, then a rename
    /// over the old one, so the file is always either the old or the new.
    func write(_ nodes: [RowNode]) throws(StoreError) {
        var objects: [String: [[String: Any]]] = [:]
        let encoder = JSONEncoder()
        for node in nodes.sorted(by: { ($0.id.entity, $0.id.primaryKey) < ($1.id.entity, $1.id.primaryKey) }) {
            let entity = model.entities[node.id.entity]
            var object: [String: Any] = ["id": node.id.primaryKey]
            for attribute in entity.attributes {
                let value = node.values[attribute.slot]
                guard let data = try? encoder.encode(value),
                      let json = try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed) else {
                    // Skipping it would write a file that no longer opens.
                    throw .cannotWrite(path: url.path, reason: "\(entity.name) \(node.id.primaryKey): "
                                       + "\(attribute.name) = \(value) has no JSON form")
                }
                object[attribute.name] = value == .null ? NSNull() : json
            }
            for relationship in entity.relationships {
                if relationship.isToMany {
                    object[relationship.name] = node.toMany[relationship.slot] ?? []
                } else {
                    object[relationship.name] = node.toOne[relationship.slot].map { $0 as Any } ?? NSNull()
                }
            }
            objects[entity.name, default: []].append(object)
        }
        do {
            let modelObject = try JSONSerialization.jsonObject(with: model.jsonData)
            let data = try JSONSerialization.data(withJSONObject: ["model": modelObject, "objects": objects],
                                                  options: [.sortedKeys])
            let temporary = url.deletingLastPathComponent()
                .appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
            try data.write(to: temporary)
            guard rename(temporary.path, url.path) == 0 else {
                let reason = String(cString: strerror(errno))
                try? FileManager.default.removeItem(at: temporary)
                throw StoreError.cannotWrite(path: url.path, reason: reason)
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .cannotWrite(path: url.path, reason: "\(error)")
        }
    }
}

/// Reads relationships from the atomic store's rows as a save has written
/// them so far. A to-many relationship's members are those its row lists
/// and those whose inverse points back (a save may have changed one side
/// of a link whose other side the merge policy kept).
private struct TableReader: DeletionReader {
    let tables: [[Int64: RowNode]]
    let model: DataModel

    func pairs(_ relationship: Relationship, of entity: Entity, owners: [Int64]) throws -> [(owner: Int64, member: Int64)] {
        let table = tables[entity.rootIndex]
        guard relationship.isToMany else {
            return owners.compactMap { owner in
                guard let node = table[owner], relationship.slot < node.toOne.count,
                      let member = node.toOne[relationship.slot] else { return nil }
                return (owner, member)
            }
        }
        var members: [Int64: [Int64]] = [:]
        for owner in owners {
            members[owner] = table[owner].flatMap { $0.toMany[relationship.slot] } ?? []
        }
        if let destination = model.entity(named: relationship.destination),
           let inverse = relationship.inverse.flatMap({ destination.relationship(named: $0) }) {
            let wanted = Set(owners)
            for node in tables[destination.rootIndex].values where model.isEntity(at: node.id.entity, kindOf: destination.index) {
                let pointing: [Int64] = inverse.isToMany
                    ? (inverse.slot < node.toMany.count ? node.toMany[inverse.slot] ?? [] : [])
                    : (inverse.slot < node.toOne.count ? [node.toOne[inverse.slot]].compactMap { $0 } : [])
                for owner in pointing where wanted.contains(owner) && members[owner]?.contains(node.id.primaryKey) == false {
                    members[owner, default: []].append(node.id.primaryKey)
                }
            }
        }
        return owners.flatMap { owner in (members[owner] ?? []).map { (owner, $0) } }
    }

    func entities(of keys: [Int64], in entity: Entity) throws -> [Int64: Int] {
        let table = tables[entity.rootIndex]
        var result: [Int64: Int] = [:]
        for key in keys { if let node = table[key] { result[key] = node.id.entity } }
        return result
    }
}
