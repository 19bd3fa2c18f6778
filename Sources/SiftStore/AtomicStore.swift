// Store stage: the atomic store — a whole file, loaded at open.
//
// The file is a JSON data set (a model and its objects). Opening reads every
// object into row nodes; every fetch is answered by the memory lowering over
// them; every save applies the changes (with the same optimistic locking and
// merge policies as the SQLite store) and writes the whole file again,
// atomically: a temporary file beside it, then a rename over it.

import Foundation
import Sift

/// A store kept in one JSON file, read whole and written whole.
///
/// ```swift
/// let store = try AtomicStore(url: URL(fileURLWithPath: "company.json"))
/// let context = ObjectContext(store: store)
/// ```
public final class AtomicStore: StoreBackend, @unchecked Sendable {
    public let model: DataModel
    /// The nodes contexts have read, shared by every context.
    public let rowCache: RowCache
    public let functions: FunctionRegistry
    /// The store's file.
    public let url: URL
    let observers = Observers()
    /// Every row of the store: what fetches evaluate and saves change.
    private let data: RowCache
    /// One save at a time.
    private let lock = NSLock()

    /// Opens the store at `url`: an existing data set file (made for `model`,
    /// when given), or a new, empty store for `model`.
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

    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (StoreChanges) -> Void) -> StoreObservation {
        let token = StoreObservation(observers: observers)
        observers.handlers.withLock { $0[token.id] = observer }
        return token
    }

    /// Adds a data set's objects to the store and writes the file.
    /// Objects whose keys the store already holds are replaced.
    public func importDataSet(_ dataSet: DataSet) throws(StoreError) {
        guard dataSet.model.versionHash == model.versionHash else {
            throw .modelMismatch(path: url.path, storeHash: model.versionHash, modelHash: dataSet.model.versionHash)
        }
        lock.lock()
        defer { lock.unlock() }
        let snapshot = data.snapshot()
        var tables = (0..<model.entities.count).map { snapshot.nodesByKey(entity: $0) }
        for node in dataSet.nodes { tables[node.id.entity][node.id.primaryKey] = node }
        let all = tables.flatMap(\.values)
        try write(all)
        data.replaceAll(with: all)
    }

    // MARK: Reading

    /// The rows of the entity that match, sorted, before offset and limit.
    func matching(_ request: FetchRequest) throws(StoreError) -> [RowNode] {
        let entity = try self.entity(request.entityName)
        let domain = RowNodeDomain(cache: data)
        var nodes = domain.snapshot.nodes(entity: entity.index)
        if let predicate = try boundPredicate(request) {
            let filter = MemoryPredicate(predicate, domain: domain)
            nodes = try StoreError.evaluating { () throws(EvaluationError) in try filter.filter(nodes) }
        }
        return try sortedNodes(nodes, request, domain: domain)
    }

    func page(_ nodes: [RowNode], _ request: FetchRequest) -> [RowNode] {
        var result = nodes
        if request.fetchOffset > 0 { result = Array(result.dropFirst(request.fetchOffset)) }
        if let limit = request.fetchLimit { result = Array(result.prefix(limit)) }
        return result
    }

    func rows(for request: FetchRequest) throws(StoreError) -> [RowNode] {
        rowCache.storeFetched(page(try matching(request), request))
    }

    func keys(for request: FetchRequest) throws(StoreError) -> [Int64] {
        page(try matching(request), request).map(\.id.primaryKey)
    }

    func count(for request: FetchRequest) throws(StoreError) -> Int {
        page(try matching(request), request).count
    }

    func rows(_ entity: Entity, keys: [Int64]) throws(StoreError) -> [RowNode] {
        let snapshot = data.snapshot()
        return rowCache.storeFetched(keys.compactMap { snapshot.node(entity: entity.index, primaryKey: $0) })
    }

    func links(_ relationship: Relationship, of owners: [Int64], entity: Entity,
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

    func commit(_ context: ObjectContext, inserted: [ManagedObject], updated: [ManagedObject], deleted: [ManagedObject],
                rows: [ObjectID: (values: [PredicateValue], toOne: [Int64?])]) throws(StoreError) -> ObjectContext.SaveOutcome {
        lock.lock()
        defer { lock.unlock() }
        let snapshot = data.snapshot()
        var outcome = ObjectContext.SaveOutcome()
        var tables = (0..<model.entities.count).map { snapshot.nodesByKey(entity: $0) }

        // Permanent keys after each table's largest.
        var next: [Int: Int64] = [:]
        for object in inserted {
            let e = object.entity.index
            if next[e] == nil { next[e] = (tables[e].keys.max() ?? 0) + 1 }
            outcome.keys[object.objectID.primaryKey] = next[e]!
            next[e]! += 1
        }
        func resolve(_ key: Int64) -> Int64 { key < 0 ? outcome.keys[key] ?? key : key }
        func key(_ object: ManagedObject) -> Int64 { resolve(object.objectID.primaryKey) }

        // Optimistic locking: the versions the context read must still be current.
        var conflicts: [SaveConflict] = []
        var conflicting: [ManagedObject] = []
        for object in updated + deleted {
            let current = tables[object.entity.index][key(object)]
            let read = object.node?.version ?? 0
            if current == nil && object.isDeleted { continue }  // already gone: nothing to do
            if current?.version != read {
                var contextValues: [String: PredicateValue] = [:]
                if let row = rows[object.objectID] {
                    for a in object.entity.attributes { contextValues[a.name] = row.values[a.slot] }
                }
                conflicts.append(SaveConflict(
                    objectID: object.objectID, entity: object.entity.name, contextVersion: read, contextValues: contextValues,
                    storeVersion: current?.version,
                    storeValues: current.map { node in
                        Dictionary(uniqueKeysWithValues: object.entity.attributes.map { ($0.name, node.values[$0.slot]) })
                    }))
                conflicting.append(object)
            }
        }
        if !conflicts.isEmpty, context.mergePolicy == .error { throw .conflicts(conflicts) }
        let conflictIDs = Set(conflicting.map(\.objectID))

        // The values each written object ends with, per the merge policy.
        func resolvedValues(_ object: ManagedObject) -> [PredicateValue]? {
            let mine = rows[object.objectID]!.values
            guard conflictIDs.contains(object.objectID) else { return mine }
            guard let current = tables[object.entity.index][key(object)] else {
                // Deleted in the store.
                return context.mergePolicy == .objectTrump || context.mergePolicy == .overwrite ? mine : nil
            }
            switch context.mergePolicy {
            case .overwrite: return mine
            case .rollback: return current.values
            case .objectTrump:
                var values = current.values
                for (slot, value) in object.changedValues { values[slot] = value }
                return values
            case .storeTrump, .error:
                var values = current.values
                for (slot, value) in object.changedValues where current.values[slot] == object.node?.values[slot] {
                    values[slot] = value
                }
                return values
            }
        }

        let now = Date().timeIntervalSinceReferenceDate
        func toManyArrays(_ object: ManagedObject, base: [[Int64]?]) -> [[Int64]?] {
            var toMany = base.map { $0 ?? [] }
            for relationship in object.entity.relationships where relationship.isToMany {
                let removed = object.removedToMany[relationship.slot] ?? []
                let added = (object.addedToMany[relationship.slot] ?? []).map(resolve)
                toMany[relationship.slot] = toMany[relationship.slot].filter { !removed.contains($0) && !added.contains($0) } + added
            }
            return toMany.map { Optional($0) }
        }

        for object in inserted {
            let row = rows[object.objectID]!
            let id = ObjectID(entity: object.entity.index, primaryKey: key(object))
            tables[id.entity][id.primaryKey] = RowNode(
                id: id, version: 1, fetchTimestamp: now, values: row.values, toOne: row.toOne.map { $0.map(resolve) },
                toMany: toManyArrays(object, base: Array(repeating: [], count: object.entity.toManyCount)))
        }
        for object in updated {
            let e = object.entity.index
            guard let values = resolvedValues(object) else {
                tables[e][key(object)] = nil
                outcome.gone.insert(object.objectID)
                continue
            }
            if context.mergePolicy == .rollback, conflictIDs.contains(object.objectID) {
                outcome.discarded.insert(object.objectID)
                outcome.reread.insert(object.objectID)
                continue
            }
            let current = tables[e][key(object)]
            let row = rows[object.objectID]!
            let version = (current?.version ?? 0) + 1
            tables[e][key(object)] = RowNode(
                id: object.objectID, version: version, fetchTimestamp: now, values: values,
                toOne: row.toOne.map { $0.map(resolve) },
                toMany: toManyArrays(object, base: current?.toMany ?? Array(repeating: [], count: object.entity.toManyCount)))
            if conflictIDs.contains(object.objectID) { outcome.reread.insert(object.objectID) } else {
                outcome.versions[object.objectID] = version
            }
        }
        for object in deleted {
            let e = object.entity.index
            if conflictIDs.contains(object.objectID), context.mergePolicy == .storeTrump || context.mergePolicy == .rollback,
               tables[e][key(object)] != nil {
                outcome.discarded.insert(object.objectID)
                outcome.reread.insert(object.objectID)
                continue
            }
            tables[e][key(object)] = nil
            if conflictIDs.contains(object.objectID) { outcome.gone.insert(object.objectID) }
        }
        // No row may point at a row that is gone.
        var all: [RowNode] = []
        for (e, table) in tables.enumerated() {
            for node in table.values {
                let toOne = node.toOne.enumerated().map { slot, target -> Int64? in
                    guard let target, let relationship = model.entities[e].relationships.first(where: { !$0.isToMany && $0.slot == slot })
                    else { return target }
                    return tables[model.entity(named: relationship.destination)!.index][target] == nil ? nil : target
                }
                let toMany = node.toMany.enumerated().map { slot, targets -> [Int64]? in
                    guard let relationship = model.entities[e].relationships.first(where: { $0.isToMany && $0.slot == slot })
                    else { return targets }
                    let destination = model.entity(named: relationship.destination)!.index
                    return (targets ?? []).filter { tables[destination][$0] != nil }
                }
                all.append(toOne == node.toOne && toMany == node.toMany ? node
                    : RowNode(id: node.id, version: node.version, fetchTimestamp: node.fetchTimestamp,
                              values: node.values, toOne: toOne, toMany: toMany))
            }
        }
        try write(all)
        data.replaceAll(with: all)
        return outcome
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
