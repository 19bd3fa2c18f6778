// Store stage: the atomic store — a whole file, loaded at open.
//
// The file is in any format a store writer implements (`AtomicStoreFormat`:
// Sift's JSON data set is one, `DataSetFormat`). Opening reads every object
// into row nodes, each object's reference mapped to a primary key
// (`ReferenceTable`); every fetch is answered by the memory lowering over
// them; every save applies the changes (with the same optimistic locking
// and merge policies as the SQLite store, and the delete rules worked out
// again over its rows, SaveRules.swift), gives new objects their references,
// and writes the whole file again, atomically: a temporary file beside it,
// synced, then renamed over it.

import Foundation
import Sift

/// A store kept in one file, read whole and written whole, in any format:
/// Sift's JSON data set (``DataSetFormat``, the default), or one of your
/// own (``AtomicStoreFormat``), as Core Data's `NSAtomicStore` subclasses.
///
/// ```swift
/// let store = try AtomicStore(url: URL(fileURLWithPath: "company.json"))   // a JSON data set
/// let people = try AtomicStore(url: peopleFile, format: PeopleText(), model: peopleModel)
/// let context = ObjectContext(store: store)
/// ```
public final class AtomicStore<Format: AtomicStoreFormat>: PersistentStore, @unchecked Sendable {
    public let model: DataModel
    /// The nodes contexts have read, shared by every context.
    public let rowCache: RowCache
    public let functions: FunctionRegistry
    /// The store's file.
    public let url: URL
    /// The file's format.
    public let format: Format
    /// Who hears about the store's saves.
    public let observers = StoreObservers()
    /// The requests compiled so far, by shape.
    public let compiledFetches = CompiledFetchCache()
    /// The store's own fetch time limit (`fetchTimeLimit`).
    let storedFetchTimeLimit = LockedState<Duration?>(nil)
    /// The longest one of the store's fetches may work unless its request
    /// says otherwise (`FetchRequest.timeLimit`); nil (the default) for
    /// `PredicateLimits.standard.fetchTimeLimit`. Past it the fetch stops and
    /// ends with `StoreError.evaluation(.fetchTooCostly)`.
    public var fetchTimeLimit: Duration? {
        get { storedFetchTimeLimit.withLock { $0 } }
        set { storedFetchTimeLimit.withLock { $0 = newValue } }
    }
    /// Every row of the store: what fetches evaluate and saves change.
    private let data: RowCache
    /// Each object's reference and primary key, both ways.
    private let references: LockedState<ReferenceTable<Format.Reference>>
    /// One save at a time. (Its state is a count of the writes, not `()`:
    /// the thread sanitizer takes accesses to a zero-sized state, made
    /// under the lock, for a race.)
    private let writing = LockedState(0)
    /// The store's metadata, as read at open or last set; written with every save.
    private let storedMetadata = LockedState<[String: PredicateValue]>([:])

    /// Opens the store at `url` in `format`: an existing file (made for
    /// `model`, when given and the file carries a model), or a new, empty
    /// store for `model` when the file is missing or empty.
    ///
    /// - Parameters:
    ///   - url: The store's file; it need not exist yet.
    ///   - format: The file's format.
    ///   - model: The store's model; nil to open a file that carries its own.
    ///   - functions: The application's functions predicates may call.
    /// - Throws: `StoreError`: `.unreadableStoreFile` when the format cannot read the file (or
    ///   `.invalidDataSet`, for Sift's JSON data set); `.modelMismatch` when the file carries another model;
    ///   `.noModel` when neither the file nor the caller gives a model; `.notAStoreFile` for a folder.
    public init(url: URL, format: Format, model: DataModel? = nil,
                functions: FunctionRegistry = FunctionRegistry()) throws(StoreError) {
        self.url = url
        self.format = format
        self.functions = functions
        var isFolder: ObjCBool = false
        var contents: Data?
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) {
            guard !isFolder.boolValue else { throw .notAStoreFile(path: url.path, problem: .folder) }
            do {
                contents = try Data(contentsOf: url)
            } catch {
                throw .unreadableStoreFile(path: url.path, reason: "\(error)")
            }
        }
        if let contents, !contents.isEmpty {
            let fileModel = try Self.reading(url) { () throws in try format.model(in: contents) }
            if let model, let fileModel, model.versionHash != fileModel.versionHash {
                throw .modelMismatch(path: url.path, storeHash: fileModel.versionHash, modelHash: model.versionHash)
            }
            guard let storeModel = model ?? fileModel else { throw .noModel(path: url.path) }
            self.model = storeModel
            let objects = try Self.reading(url) { () throws in try format.read(contents, model: storeModel) }
            let (nodes, table) = try Self.rows(of: objects, format: format, model: storeModel, path: url.path)
            self.data = RowCache(model: storeModel)
            data.replaceAll(with: nodes)
            self.references = LockedState(table)
            let metadata = try Self.reading(url) { () throws in try format.metadata(at: url) } ?? [:]
            storedMetadata.withLock { $0 = metadata }
        } else {
            guard let model else {
                throw contents == nil ? .noModel(path: url.path) : .notAStoreFile(path: url.path, problem: .empty)
            }
            self.model = model
            self.data = RowCache(model: model)
            self.references = LockedState(ReferenceTable(roots: model.entities.count))
        }
        self.rowCache = RowCache(model: self.model)
    }

    /// Runs a format's read, its errors reported as the store's.
    private static func reading<T>(_ url: URL, _ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch let error as DataSetError {
            // The file named, as a data set read from a file names it.
            throw .invalidDataSet(error.message.contains(url.path) ? error : DataSetError("'\(url.path)': \(error.message)"))
        } catch {
            throw .unreadableStoreFile(path: url.path, reason: "\(error)")
        }
    }

    /// Adds a data set's objects to the store and writes the file.
    /// Objects whose keys the store already holds are replaced; the others
    /// get references from the format.
    ///
    /// - Parameter dataSet: A data set of the store's model.
    /// - Throws: `StoreError`: `.modelMismatch` when the data set's model is not the store's; `.cannotWrite`
    ///   when the file cannot be written (the old file is kept); `.duplicateReference` when the format gives
    ///   two objects one reference.
    public func importDataSet(_ dataSet: DataSet) throws(StoreError) {
        guard dataSet.model.versionHash == model.versionHash else {
            throw .modelMismatch(path: url.path, storeHash: model.versionHash, modelHash: dataSet.model.versionHash)
        }
        try writing.withLock { _ throws(StoreError) in
            let snapshot = data.snapshot()
            var tables = Self.tables(of: snapshot, model)
            for node in dataSet.nodes { tables[node.id.root][node.id.primaryKey] = node }
            let all = tables.flatMap(\.values)
            var table = references.withLock { $0 }
            try referencing(dataSet.nodes.map(\.id), in: tables, table: &table)
            try write(all, references: table)
            references.withLock { $0 = table }
            data.replaceAll(with: all)
        }
    }

    // MARK: References

    /// The ID of the object the format calls `reference`, in `entityName`'s
    /// table (an entity and its subentities share their root's references).
    ///
    /// - Parameters:
    ///   - reference: The object's reference.
    ///   - entityName: Its entity, or an ancestor.
    /// - Returns: The object's ID, or nil when the store holds no such object.
    public func objectID(for reference: Format.Reference, entityName: String) -> ObjectID? {
        guard let entity = model.entity(named: entityName),
              let key = references.withLock({ $0.key(for: reference, root: entity.rootIndex) }),
              let node = data.snapshot().node(entity: entity.rootIndex, primaryKey: key) else { return nil }
        return node.id
    }

    /// The format's reference of an object: what it was read with, or what
    /// ``AtomicStoreFormat/newReference(entityName:values:primaryKey:)`` gave it at its first save.
    ///
    /// - Parameter objectID: A saved object's ID (a temporary ID has no reference yet).
    /// - Returns: Its reference, or nil.
    public func reference(for objectID: ObjectID) -> Format.Reference? {
        references.withLock { $0.reference(for: objectID.primaryKey, root: objectID.root) }
    }

    /// The metadata a format keeps in a store file, read without opening the store.
    ///
    /// - Parameters:
    ///   - url: The store's file.
    ///   - format: Its format.
    /// - Returns: The metadata, or nil when the format keeps none.
    /// - Throws: `StoreError.unreadableStoreFile` when the format cannot read it.
    public static func metadata(at url: URL, format: Format) throws(StoreError) -> [String: PredicateValue]? {
        try reading(url) { () throws in try format.metadata(at: url) }
    }

    /// Writes metadata into a store file its format keeps metadata in,
    /// without opening the store (``AtomicStoreFormat/setMetadata(_:at:)``).
    ///
    /// - Parameters:
    ///   - metadata: The new metadata.
    ///   - url: The store's file.
    ///   - format: Its format.
    /// - Throws: `StoreError.cannotWrite` when the format keeps none or cannot write it; the file is left as it was.
    public static func setMetadata(_ metadata: [String: PredicateValue], at url: URL, format: Format) throws(StoreError) {
        do {
            try format.setMetadata(metadata, at: url)
        } catch let error as StoreError {
            throw error
        } catch {
            throw .cannotWrite(path: url.path, reason: "\(error)")
        }
    }

    /// The store's metadata: as its file had it when the store opened, or as last set.
    public var metadata: [String: PredicateValue] { storedMetadata.withLock { $0 } }

    /// Sets the store's metadata and writes the file (with every object: the store has them all).
    ///
    /// - Parameter metadata: The new metadata.
    /// - Throws: `StoreError.cannotWrite` when the file cannot be written; the store keeps its old metadata.
    public func setMetadata(_ metadata: [String: PredicateValue]) throws(StoreError) {
        try writing.withLock { _ throws(StoreError) in
            let old = storedMetadata.withLock { $0 }
            storedMetadata.withLock { $0 = metadata }
            do {
                try write(Self.tables(of: data.snapshot(), model).flatMap(\.values), references: references.withLock { $0 })
            } catch let error as StoreError {
                storedMetadata.withLock { $0 = old }
                throw error
            } catch {
                storedMetadata.withLock { $0 = old }
                throw .cannotWrite(path: url.path, reason: "\(error)")
            }
        }
    }

    // MARK: Reading

    /// The rows of the entity that match, sorted, before offset and limit.
    func matching(_ fetch: CompiledFetch) throws(StoreError) -> [RowNode] {
        // Evaluated by columns: the file's rows change only when it is saved, so the columns a
        // fetch lays out serve the fetches after it.
        let domain = RowNodeDomain(cache: data)
        let table = domain.snapshot.table(entity: fetch.entity.index)
        var nodes = table.nodes
        if let predicate = fetch.predicate {
            let filter = MemoryPredicate(predicate, domain: domain)
            nodes = try StoreError.evaluating { () throws(EvaluationError) in try filter.filter(table) }
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
        let response = try writing.withLock { writes throws(StoreError) in
            writes &+= 1
            return try applyAlone(request)
        }
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
        // New objects get their references from the format; deleted ones give theirs up. The table
        // changes only when the file is written.
        var table = references.withLock { $0 }
        for id in result.changes.deleted where tables[id.root][id.primaryKey] == nil { table.remove(key: id.primaryKey, root: id.root) }
        try referencing(request.inserts.compactMap { insert in
            resolve(insert.id.primaryKey).map { ObjectID(entity: insert.id.entity, root: insert.id.root, primaryKey: $0) }
        }, in: tables, table: &table)
        try write(all, references: table)
        references.withLock { $0 = table }
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
                    if let owner = node.toOneKey(at: inverse.slot) { members[owner, default: []].append(node.id.primaryKey) }
                }
                for (key, node) in tables[entity.rootIndex] where node.id.entity == entity.index {
                    let pointing = members[key] ?? []
                    let listed = node.toManyKeys(at: relationship.slot) ?? []
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
                      let target = node.toOneKey(at: slot), targets.contains(target) else { continue }
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

    // MARK: The file

    /// The rows of the objects a format read, each reference given a key.
    private static func rows(of objects: [AtomicNode<Format.Reference>], format: Format, model: DataModel,
                             path: String) throws(StoreError) -> ([RowNode], ReferenceTable<Format.Reference>) {
        var table = ReferenceTable<Format.Reference>(roots: model.entities.count)
        var entities: [Entity] = []
        entities.reserveCapacity(objects.count)
        for object in objects {
            guard let entity = model.entity(named: object.entityName) else {
                throw .unreadableStoreFile(path: path, reason: "an object of '\(object.entityName)', which is not an entity of the model")
            }
            guard table.add(object.reference, root: entity.rootIndex, preferred: format.primaryKey(for: object.reference)) != nil else {
                throw .unreadableStoreFile(path: path, reason: "two objects of '\(model.entities[entity.rootIndex].name)' "
                                           + "have the reference \(object.reference)")
            }
            entities.append(entity)
        }
        // As a data set's objects (ids for references), so that one reader checks every value and link.
        var listed: [String: [(id: Int64, properties: [String: PredicateValue])]] = [:]
        for (object, entity) in zip(objects, entities) {
            var row = object.values
            for (name, target) in object.toOne {
                row[name] = .int(try key(of: target, through: name, of: entity, table, model, path))
            }
            for (name, targets) in object.toMany {
                var keys: [PredicateValue] = []
                for target in targets { keys.append(.int(try key(of: target, through: name, of: entity, table, model, path))) }
                row[name] = .array(keys)
            }
            listed[entity.name, default: []].append((table.key(for: object.reference, root: entity.rootIndex) ?? 0, row))
        }
        do {
            return (try DataSet(model: model, keyedObjects: listed).nodes, table)
        } catch {
            throw .unreadableStoreFile(path: path, reason: error.message)
        }
    }

    /// The key of a relationship's destination, by its reference.
    private static func key(of target: Format.Reference, through name: String, of entity: Entity,
                            _ table: ReferenceTable<Format.Reference>, _ model: DataModel,
                            _ path: String) throws(StoreError) -> Int64 {
        guard let relationship = entity.relationship(named: name), let destination = model.entity(named: relationship.destination)
        else { throw .unreadableStoreFile(path: path, reason: "'\(entity.name)' has no relationship '\(name)'") }
        guard let key = table.key(for: target, root: destination.rootIndex) else {
            throw .unreadableStoreFile(path: path, reason: "'\(entity.name).\(name)' points to \(target), "
                                       + "which is no \(destination.name) of the file")
        }
        return key
    }

    /// An object of the file as its format sees it: values by name, links by reference.
    private func object(_ node: RowNode, _ table: ReferenceTable<Format.Reference>) -> AtomicNode<Format.Reference>? {
        guard let reference = table.reference(for: node.id.primaryKey, root: node.id.root) else { return nil }
        let entity = model.entities[node.id.entity]
        var object = AtomicNode<Format.Reference>(entityName: entity.name, reference: reference)
        for attribute in entity.attributes where node.value(at: attribute.slot) != .null {
            object.values[attribute.name] = node.value(at: attribute.slot)
        }
        for relationship in entity.relationships {
            guard let destination = model.entity(named: relationship.destination) else { continue }
            if relationship.isToMany {
                let members = (node.toManyKeys(at: relationship.slot) ?? []).compactMap { table.reference(for: $0, root: destination.rootIndex) }
                if !members.isEmpty { object.toMany[relationship.name] = members }
            } else if let target = node.toOneKey(at: relationship.slot),
                      let reference = table.reference(for: target, root: destination.rootIndex) {
                object.toOne[relationship.name] = reference
            }
        }
        return object
    }

    /// Gives each of `ids` that has none a reference from the format, as its row is in `tables`.
    private func referencing(_ ids: [ObjectID], in tables: [[Int64: RowNode]],
                             table: inout ReferenceTable<Format.Reference>) throws(StoreError) {
        for id in ids where table.reference(for: id.primaryKey, root: id.root) == nil {
            guard let node = tables[id.root][id.primaryKey] else { continue }
            let entity = model.entities[node.id.entity]
            var values: [String: PredicateValue] = [:]
            for attribute in entity.attributes where node.value(at: attribute.slot) != .null {
                values[attribute.name] = node.value(at: attribute.slot)
            }
            let reference: Format.Reference
            do {
                reference = try format.newReference(entityName: entity.name, values: values, primaryKey: id.primaryKey)
            } catch {
                throw .cannotWrite(path: url.path, reason: "no reference for the new \(entity.name): \(error)")
            }
            guard table.set(reference, key: id.primaryKey, root: id.root) else {
                throw .duplicateReference(entity: model.entities[id.root].name, reference: "\(reference)")
            }
        }
    }

    /// Writes every row to the file in the store's format: a temporary file
    /// first, synced, then a rename over the old one, so the file is always
    /// either the old or the new, byte for byte.
    func write(_ nodes: [RowNode], references table: ReferenceTable<Format.Reference>) throws(StoreError) {
        var objects: [AtomicNode<Format.Reference>] = []
        objects.reserveCapacity(nodes.count)
        for node in nodes.sorted(by: { ($0.id.entity, $0.id.primaryKey) < ($1.id.entity, $1.id.primaryKey) }) {
            guard let object = object(node, table) else {
                throw .cannotWrite(path: url.path, reason: "\(model.entities[node.id.entity].name) \(node.id.primaryKey) has no reference")
            }
            objects.append(object)
        }
        let contents: Data
        do {
            contents = try format.write(objects, metadata: storedMetadata.withLock { $0 }, model: model)
        } catch {
            throw .cannotWrite(path: url.path, reason: (error as? DataSetError)?.message ?? "\(error)")
        }
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        do {
            try contents.write(to: temporary)
            let handle = try FileHandle(forWritingTo: temporary)
            defer { try? handle.close() }
            try handle.synchronize()
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw .cannotWrite(path: url.path, reason: "\(error)")
        }
        guard rename(temporary.path, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw .cannotWrite(path: url.path, reason: reason)
        }
    }
}

extension AtomicStore where Format == DataSetFormat {
    /// Opens the store at `url` in Sift's JSON data set format: an existing
    /// data set file (made for `model`, when given), or a new, empty store
    /// for `model` when the file is missing or empty.
    ///
    /// - Parameters:
    ///   - url: The data set file; it need not exist yet.
    ///   - model: The model the file must have been made for, or the model of a new store; nil to open an
    ///     existing file with its own model.
    ///   - functions: The application's functions predicates may call.
    /// - Throws: `StoreError`: `.invalidDataSet` when the file does not read as a data set; `.modelMismatch`
    ///   when it was made for another model; `.noModel` when there is no file and no model to make one.
    public convenience init(url: URL, model: DataModel? = nil, functions: FunctionRegistry = FunctionRegistry()) throws(StoreError) {
        try self.init(url: url, format: DataSetFormat(), model: model, functions: functions)
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
                      let member = node.toOneKey(at: relationship.slot) else { return nil }
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
                    ? (inverse.slot < node.toMany.count ? node.toManyKeys(at: inverse.slot) ?? [] : [])
                    : (inverse.slot < node.toOne.count ? [node.toOneKey(at: inverse.slot)].compactMap { $0 } : [])
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
