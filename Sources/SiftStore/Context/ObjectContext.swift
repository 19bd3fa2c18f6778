// Store stage: contexts and their objects — uniquing, faults, batch faulting,
// relationship faults, prefetching, refresh.
//
// A context holds at most one object per object ID (uniquing): every fetch and
// relationship returns that same instance. An object is a fault until its
// values are needed; reading its ID, entity or `isFault` does not fire it.
// Firing reads the row cache when it holds a fresh node (within the context's
// staleness interval), and SQL otherwise, many faults at once when they came
// from one batch. A context registers with the row cache the objects whose
// values it holds, and unregisters them when it refreshes or resets them.

import CSwiftRuntime
import Foundation
import Sift

/// Faults fetched together (one batch of a batched fetch), fired together.
final class FaultBatch {
    let members: [ObjectID]
    init(_ members: [ObjectID]) { self.members = members }
}

/// A controller a context tells of its changes, without keeping it alive.
struct WeakResultsController {
    weak var controller: FetchedResultsController?
}

/// A scratch pad of objects over a store: uniquing, faulting, fetching.
///
/// ```swift
/// let context = ObjectContext(store: store)
/// let sales = try context.fetch(FetchRequest(entityName: "Employee", predicate: "department.name == %@",
///                                            arguments: ["Sales"]))
/// try sales[0].setValue(.double(90_000), forKey: "salary")
/// let hire = try context.insert("Employee")
/// try hire.setValue(.string("Dee"), forKey: "name")
/// try context.save()                          // one transaction, versions checked
/// ```
///
/// A context is confined to one thread or task at a time: use it from one,
/// or run work on it with ``perform(_:)`` (from any task) and
/// ``performAndWait(_:)`` (from any thread), which run one at a time on the
/// context's own queue, as Core Data's contexts do.
public final class ObjectContext: @unchecked Sendable {
    /// The store the context reads and saves to.
    let store: any PersistentStore
    /// How old, in seconds, a cached row may be and still fire a fault without
    /// SQL. The default, infinity, always trusts the row cache.
    @exclusivity(unchecked) public var stalenessInterval: Double = .infinity
    /// How a save resolves conflicts with changes other contexts saved.
    public var mergePolicy: MergePolicy = .error
    /// The context's name, recorded with its saves in a store that keeps
    /// persistent history (Core Data's context `name`); nil for none.
    public var name: String?
    /// The author recorded with the context's saves and batch changes in a
    /// store that keeps persistent history (Core Data's `transactionAuthor`);
    /// nil for none.
    public var transactionAuthor: String?

    /// Whether the context merges what the store announces as it is
    /// announced: other contexts' saves and batch changes, and other
    /// processes' saves (Core Data's `automaticallyMergesChangesFromParent`).
    /// The merges run on the context's queue, one at a time with the work
    /// given to ``perform(_:)``: use the context through `perform` and
    /// ``performAndWait(_:)`` while it merges automatically.
    public var automaticallyMergesChangesFromStore = false {
        didSet {
            guard automaticallyMergesChangesFromStore != oldValue else { return }
            mergeObservation?.cancel()
            mergeObservation = nil
            guard automaticallyMergesChangesFromStore else { return }
            let me = ObjectIdentifier(self)
            mergeObservation = store.addObserver { [weak self] changes in
                // Not its own save, which it holds already.
                guard let self, ObjectContext.announcing != me else { return }
                self.queue.async { [weak self] in try? self?.mergeChanges(from: changes) }
            }
        }
    }
    var mergeObservation: StoreObservation?
    /// The context whose save is being announced, on the thread that announces it.
    @TaskLocal static var announcing: ObjectIdentifier?

    /// Announces the context's own committed changes to the store's observers.
    func announceOwn(_ changes: StoreChanges) {
        ObjectContext.$announcing.withValue(ObjectIdentifier(self)) { store.announce(changes) }
    }

    /// Runs a write of the store's with this context's names current, for
    /// the history the store writes (`TransactionNames`).
    func writing<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        let names = TransactionNames(author: transactionAuthor, contextName: name)
        let result = TransactionNames.$current.withValue(names) { Result { () throws(StoreError) -> T in try body() } }
        return try result.get()
    }
    // (A context is used by one thread at a time: the state every read
    // touches skips the runtime's exclusivity bookkeeping, a check per access.)
    @exclusivity(unchecked) var objects = ObjectRegistry()
    /// The faults fetched together (a batched fetch's batches), by ID:
    /// fired together. Kept here, not in each object.
    @exclusivity(unchecked) var faultBatches: [ObjectID: FaultBatch] = [:]
    /// The row cache's count of replacements before the earliest fetch
    /// whose faults hold their rows (`ManagedObject.isPendingFault`).
    @exclusivity(unchecked) var pendingFaultGeneration: UInt64?
    /// Objects with unsaved changes (inserted, updated, deleted, marked for conflict detection).
    var changed = ChangedObjects()
    /// Deletes that a deny rule refuses, reported at save (if the object is
    /// still deleted then).
    var denied: [ObjectID: [SaveValidationFailure]] = [:]
    /// Values a `@Managed` property refused to set (a property cannot throw),
    /// thrown by the next save.
    var refusedChanges: [StoreError] = []
    /// The last temporary key given to an inserted object.
    var nextTemporaryKey: Int64 = 0

    /// Each entity of the model with its lookups, by index.
    let descriptions: [EntityDescription]
    /// Each entity's index in `descriptions`, by name.
    let descriptionIndexes: [String: Int]
    /// The store's row cache, read without a call through the store's protocol.
    let rowCache: RowCache
    /// The store, when it hands fetches' rows over as batches.
    let batchFetching: (any BatchFetchingStore)?
    /// The fetched results controllers following this context, held weakly.
    private var resultsControllers: [WeakResultsController] = []

    /// A context on a store: SQLite, atomic, PostgreSQL, or one of your own.
    ///
    /// - Parameter store: The store the context reads and saves to.
    public init(store: any PersistentStore) {
        self.store = store
        self.rowCache = store.rowCache
        self.batchFetching = store as? any BatchFetchingStore
        self.descriptions = EntityDescription.all(in: store.model)
        descriptionIndexes = Dictionary(descriptions.enumerated().map { ($1.entity.name, $0) }, uniquingKeysWith: { first, _ in first })
        for description in descriptions { description.context = self }
        queue.setSpecific(key: Self.queueKey, value: ObjectIdentifier(self))
    }

    /// The serial queue `perform` and `performAndWait` run work on.
    let queue = DispatchQueue(label: "sift.context")
    static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

    /// The store the context reads and saves to.
    public var persistentStore: any PersistentStore { store }

    /// The model of the context's store.
    public var model: DataModel { store.model }

    deinit {
        for description in descriptions { description.context = nil }
        mergeObservation?.cancel()
        unregisterAllObjects()
    }

    /// Gives the row cache back the registration of every object that holds
    /// one, an array of the registry's at a time (no array of IDs made).
    private func unregisterAllObjects() {
        objects.forEachArray { rowCache.unregister(objects: $0) }
    }

    /// How many objects the context holds.
    public var registeredObjectCount: Int { objects.count }

    /// The context's object for `id`: the one it holds, or a new fault.
    ///
    /// - Parameter id: The object's ID, of the context's store.
    /// - Returns: The context's one object for `id`; a fault when the context did not hold it.
    public func object(for id: ObjectID) -> ManagedObject {
        if let object = objects[id] {
            if id.entity != object.objectID.entity { learnEntity(of: id, for: object) }
            return object
        }
        let object = ManagedObject(objectID: id, description: descriptions[id.entity])
        objects[id] = object
        return object
    }

    /// Gives `object` the entity of `id` when that knows it better (a
    /// subentity of the one it had).
    @inline(never)
    private func learnEntity(of id: ObjectID, for object: ManagedObject) {
        if store.model.isEntity(at: id.entity, kindOf: object.objectID.entity) { object.learnEntity(of: id, in: self) }
    }

    /// Has `controller` hear of every save and merge from now on.
    func addResultsController(_ controller: FetchedResultsController) {
        resultsControllers.removeAll { $0.controller == nil }
        resultsControllers.append(WeakResultsController(controller: controller))
    }

    /// Tells the controllers what a save or merge changed.
    func resultsDidChange(_ changes: StoreChanges) {
        guard !changes.isEmpty else { return }
        for box in resultsControllers { box.controller?.contextDidChange(changes) }
    }

    func register(_ object: ManagedObject) {
        objects[object.objectID] = object
    }

    func unregisterObject(_ object: ManagedObject) {
        objects[object.objectID] = nil
        forgetFaultBatch(of: object)
        if object.holdsRegistration {
            object.node = nil
            rowCache.unregister(object.objectID)
        }
    }

    // MARK: Fetching

    /// Fetches the objects a request selects.
    ///
    /// - Parameter request: What to fetch: the entity, predicate, order, limit, offset, batching and
    ///   prefetching (with `fetchBatchSize` set, `relationshipKeyPathsForPrefetching` is not used).
    /// - Returns: The context's objects for the matching rows, in the request's order, unsaved changes counted
    ///   when `includesPendingChanges`.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidPredicate` when the
    ///   predicate or a sort key does not parse or fit the model; `.unknownRelationship` when a prefetching key
    ///   path is not one of relationships (and no batch size is set); `.evaluation` when a `MATCHES` or `LIKE`
    ///   runs out of its budget, on one value or over the whole fetch (`regularExpressionStepLimit`:
    ///   `.fetchTooCostly`); the store's error (such as `.sqlite` or `.locked`) when reading fails.
    public func fetch(_ request: FetchRequest) throws(StoreError) -> [ManagedObject] {
        // One budget for the patterns of the whole fetch: SQL, residual and unsaved changes.
        try EvaluationBudget.run(steps: request.patternStepBudget, timeLimit: request.timeBudget(in: store)) { () throws(StoreError) in try fetchUnderBudget(request) }
    }

    func fetchUnderBudget(_ request: FetchRequest) throws(StoreError) -> [ManagedObject] {
        let fetch = try store.compile(request)
        if needsPendingChanges(request, fetch.entity) { return try fetchIncludingChanges(fetch) }
        return try fetchSaved(fetch)
    }

    /// Fetches the objects a request compiled before selects (a fetched
    /// results controller's, a template's), as `fetch(_:)` does.
    func fetch(_ fetch: CompiledFetch) throws(StoreError) -> [ManagedObject] {
        try EvaluationBudget.run(steps: fetch.request.patternStepBudget, timeLimit: fetch.request.timeBudget(in: store)) { () throws(StoreError) in
            if needsPendingChanges(fetch.request, fetch.entity) { return try fetchIncludingChanges(fetch) }
            return try fetchSaved(fetch)
        }
    }

    /// The objects a compiled request selects from what the store holds.
    func fetchSaved(_ fetch: CompiledFetch) throws(StoreError) -> [ManagedObject] {
        let request = fetch.request
        if request.fetchBatchSize > 0 {
            let ids = try store.keys(for: fetch)
            var result: [ManagedObject] = []
            result.reserveCapacity(ids.count)
            for start in stride(from: 0, to: ids.count, by: request.fetchBatchSize) {
                let batch = FaultBatch(Array(ids[start..<min(start + request.fetchBatchSize, ids.count)]))
                for id in batch.members {
                    let object = object(for: id)
                    if object.isFault { faultBatches[id] = batch }
                    result.append(object)
                }
            }
            return result
        }
        // The cache's count of replacements before the fetch stores its rows:
        // while it stays the same, the faults fetched fire with their rows.
        let generation = rowCache.replacementCount
        if let batchFetching, request.relationshipKeyPathsForPrefetching.isEmpty {
            switch try batchFetching.fetchedRows(for: fetch) {
            case .nodes(let nodes):
                return try realize(nodes, request, fetch.entity, fetchedAt: generation)
            case .batches(let batches, let count):
                if let made = realizeNew(batches: batches, count: count, request, fetch.entity, fetchedAt: generation) {
                    return made
                }
                return try realize(RowNode.nodes(of: batches), request, fetch.entity, fetchedAt: generation)
            }
        }
        return try realize(try store.rows(for: fetch), request, fetch.entity, fetchedAt: generation)
    }

    /// The context's objects for fetched nodes: faults backed by the row
    /// cache, or realized when the request says so; then the prefetching.
    func realize(_ nodes: [RowNode], _ request: FetchRequest, _ entity: Entity,
                 fetchedAt generation: UInt64? = nil) throws(StoreError) -> [ManagedObject] {
        if let made = realizeNew(nodes, request, entity, fetchedAt: generation) {
            for keyPath in request.relationshipKeyPathsForPrefetching {
                try prefetch(keyPath, from: nodes, entity: entity)
            }
            return made
        }
        var newlyRealized: [ObjectID] = []
        let result = nodes.map { node -> ManagedObject in
            let object = object(for: node.id)
            if !request.returnsObjectsAsFaults {
                if !object.holdsRegistration { newlyRealized.append(node.id) }
                // A refetch refreshes an unchanged object; one with unsaved
                // changes keeps the snapshot its save will be checked against.
                if object.node == nil || !object.hasChanges { object.node = node }
                forgetFaultBatch(of: object)
            }
            return object
        }
        rowCache.register(newlyRealized)
        for keyPath in request.relationshipKeyPathsForPrefetching {
            try prefetch(keyPath, from: nodes, entity: entity)
        }
        return result
    }

    /// The objects for fetched nodes of a table the context holds no object
    /// of, made and registered without a lookup each; nil (nothing done)
    /// when the context holds objects of the table, or the nodes are not
    /// all of it with increasing keys (so distinct). Faults keep the row
    /// they were fetched with, registered, when the cache's count of
    /// replacements before the fetch is known (`generation`).
    private func realizeNew(_ nodes: [RowNode], _ request: FetchRequest, _ entity: Entity,
                            fetchedAt generation: UInt64?) -> [ManagedObject]? {
        let root = entity.rootIndex
        guard nodes.count > 1, objects.isEmpty(root: root), nodes.haveDistinctKeys(root: root) else { return nil }
        var made: [ManagedObject] = []
        made.reserveCapacity(nodes.count)
        let asFaults = request.returnsObjectsAsFaults
        nodes.withUnsafeBufferPointer { nodes in
            // By runs of one batch: its description found once, and each
            // object's retain of the batch its only reference count operation.
            var index = 0
            while index < nodes.count {
                let batch = nodes[index].batch
                let held = Unmanaged.passUnretained(batch)
                let description = descriptions[batch.entity]
                while index < nodes.count, nodes[index].batch === batch {
                    let row = nodes[index].row
                    let object = ManagedObject(primaryKey: batch.primaryKey(at: row), description: description)
                    object.adopt(held.retain(), row: row, asFault: asFaults)
                    made.append(object)
                    index += 1
                }
            }
        }
        if request.returnsObjectsAsFaults {
            guard let generation else {
                for object in made { object.storedNode = nil; object.isPendingFault = false }
                objects.addUnhashed(made, root: root)
                return made
            }
            // The earliest fetch's count: a fault of a later fetch is checked against it too (safe, if stricter).
            if pendingFaultGeneration == nil { pendingFaultGeneration = generation }
        }
        rowCache.register(nodes: nodes)
        objects.addUnhashed(made, root: root)
        return made
    }

    /// `realizeNew` for the rows of batches the row cache keeps as they are
    /// (`FetchedRows.batches`: `count` rows, keys increasing): no node made
    /// or walked per row.
    private func realizeNew(batches: [RowBatch], count: Int, _ request: FetchRequest, _ entity: Entity,
                            fetchedAt generation: UInt64) -> [ManagedObject]? {
        let root = entity.rootIndex
        guard count > 1, objects.isEmpty(root: root), batches.allSatisfy({ $0.root == root }) else { return nil }
        let asFaults = request.returnsObjectsAsFaults
        // Each object made in place in the array (no retain and release of it
        // to append it). The batch and the description are retained once for
        // all of the batch's objects: one atomic operation each, not one an object.
        let made = [ManagedObject](unsafeUninitializedCapacity: count) { buffer, initialized in
            for batch in batches {
                let rows = min(batch.count, buffer.count &- initialized)
                let held = Unmanaged.passUnretained(batch)
                let description = Unmanaged.passUnretained(descriptions[batch.entity])
                retain(held.toOpaque(), times: rows)
                retain(description.toOpaque(), times: rows)
                for row in 0..<rows {
                    buffer.initializeElement(at: initialized, to: ManagedObject(
                        primaryKey: batch.primaryKey(at: row), retained: description, batch: held, row: row, asFault: asFaults))
                    initialized &+= 1
                }
            }
        }
        // The earliest fetch's count: a fault of a later fetch is checked against it too (safe, if stricter).
        if asFaults, pendingFaultGeneration == nil { pendingFaultGeneration = generation }
        rowCache.register(batches: batches, count: count)
        objects.addUnhashed(made, root: root)
        return made
    }

    /// The number of objects a request selects (one `COUNT(*)` statement
    /// when SQL can run the whole predicate).
    ///
    /// - Parameter request: What to count: the entity, predicate, limit and offset.
    /// - Returns: How many objects the request selects.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidPredicate` when the
    ///   predicate does not parse or fit the model; `.evaluation` when a `MATCHES` or `LIKE` runs out of its
    ///   budget, on one value or over the whole count (`regularExpressionStepLimit`: `.fetchTooCostly`); the
    ///   store's error (such as `.sqlite` or `.locked`) when reading fails.
    public func count(for request: FetchRequest) throws(StoreError) -> Int {
        try EvaluationBudget.run(steps: request.patternStepBudget, timeLimit: request.timeBudget(in: store)) { () throws(StoreError) in
            var counted = request
            counted.sortDescriptors = []
            let fetch = try store.compile(counted)
            if needsPendingChanges(request, fetch.entity) { return try fetchIncludingChanges(fetch).count }
            return try store.count(for: fetch)
        }
    }

    /// The IDs of the objects a request selects.
    ///
    /// - Parameter request: What to fetch: the entity, predicate, order, limit and offset.
    /// - Returns: The IDs of the matching objects, in the request's order, each of its object's own entity.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidPredicate` when the
    ///   predicate or a sort key does not parse or fit the model; `.evaluation` when a `MATCHES` or `LIKE` runs
    ///   out of its budget, on one value or over the whole fetch (`regularExpressionStepLimit`:
    ///   `.fetchTooCostly`); the store's error (such as `.sqlite` or `.locked`) when reading fails.
    public func fetchObjectIDs(_ request: FetchRequest) throws(StoreError) -> [ObjectID] {
        try EvaluationBudget.run(steps: request.patternStepBudget, timeLimit: request.timeBudget(in: store)) { () throws(StoreError) in
            let fetch = try store.compile(request)
            if needsPendingChanges(request, fetch.entity) { return try fetchIncludingChanges(fetch).map(\.objectID) }
            return try store.keys(for: fetch)
        }
    }

    /// The named properties of the objects a request selects, as dictionaries:
    /// attributes as values, to-one relationships as object references.
    ///
    /// - Parameters:
    ///   - request: What to fetch: the entity, predicate, order, limit and offset.
    ///   - properties: The names of the attributes and to-one relationships to return; to-many relationships
    ///     are left out.
    /// - Returns: One dictionary per matching row, in the request's order, its values by property name.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.unknownKey` when a
    ///   property is not one of the entity's; `.invalidPredicate` when the predicate or a sort key does not
    ///   parse or fit the model; `.evaluation` when a `MATCHES` or `LIKE` runs out of its budget, on one value
    ///   or over the whole fetch (`regularExpressionStepLimit`: `.fetchTooCostly`); the store's error (such as
    ///   `.sqlite` or `.locked`) when reading fails.
    public func fetchDictionaries(_ request: FetchRequest, properties: [String]) throws(StoreError) -> [[String: PredicateValue]] {
        let entity = try store.entity(request.entityName)
        for name in properties where entity.property(named: name) == nil {
            throw .unknownKey(name, entity: entity.name)
        }
        let fetch = try store.compile(request)
        let nodes = try EvaluationBudget.run(steps: request.patternStepBudget, timeLimit: request.timeBudget(in: store)) { () throws(StoreError) in
            try store.rows(for: fetch)
        }
        return nodes.map { node in
            var dictionary: [String: PredicateValue] = [:]
            for name in properties {
                switch entity.property(named: name)! {
                case .attribute(let a):
                    dictionary[name] = node.value(at: a.slot)
                case .relationship(let r) where !r.isToMany:
                    dictionary[name] = node.toOneKey(at: r.slot).map {
                        .object(ObjectReference(entity: r.destination, id: $0))
                    } ?? .null
                case .relationship:
                    break
                }
            }
            return dictionary
        }
    }

    // MARK: Faults

    func attach(_ node: RowNode, to object: ManagedObject) {
        if !object.holdsRegistration { rowCache.register(object.objectID) }
        if node.id.entity != object.objectID.entity { object.learnEntity(of: node.id, in: self) }
        object.node = node
        forgetFaultBatch(of: object)
    }

    /// Takes an object out of its batch of faults, if it is in one.
    @inline(__always)
    func forgetFaultBatch(of object: ManagedObject) {
        if !faultBatches.isEmpty { faultBatches[object.objectID] = nil }
    }

    /// Whether a cached node is fresh enough to fire a fault with.
    func isFresh(_ node: RowNode) -> Bool {
        stalenessInterval.isInfinite || Date().timeIntervalSinceReferenceDate - node.fetchTimestamp <= stalenessInterval
    }

    /// Fires a fault fetched with its row, registered, in place: while the
    /// cache has replaced no node since the fetch, that row is the cache's,
    /// and no lookup is needed. False (nothing done) otherwise.
    @inline(__always)
    func firePendingInPlace(_ object: ManagedObject) -> Bool {
        guard object.isPendingFault, let batch = object.storedBatch, let generation = pendingFaultGeneration,
              rowCache.replacementCount == generation,
              stalenessInterval.isInfinite
                || Date().timeIntervalSinceReferenceDate - batch.takeUnretainedValue().fetchTimestamp <= stalenessInterval
        else { return false }
        object.isPendingFault = false
        return true
    }

    /// Fires an object's fault, and the faults of its batch with it.
    func fire(_ object: ManagedObject) throws(StoreError) {
        if firePendingInPlace(object) { return }
        if object.isPendingFault, object.storedNode != nil {
            // Fetched with its row, but the cache has replaced nodes since:
            // the cache's row now, keeping the registration.
            if let node = rowCache.node(object.objectID), isFresh(node) {
                if node.id.entity != object.objectID.entity { object.learnEntity(of: node.id, in: self) }
                object.node = node
                return
            }
            // None fresh: read as any fault is, giving the registration back first.
            object.node = nil
            rowCache.unregister(object.objectID)
        }
        // A fault alone (fetched as a fault, reached through a relationship) whose row the
        // cache holds fresh: read and registered under one lock.
        let batch = faultBatches.isEmpty ? nil : faultBatches[object.objectID]
        if batch == nil, object.isFault, let node = rowCache.registeredNode(object.objectID, where: isFresh) {
            if node.id.entity != object.objectID.entity { object.learnEntity(of: node.id, in: self) }
            object.node = node
            return
        }
        let members = batch?.members.compactMap { objects[$0] }.filter(\.isFault) ?? [object]
        try fireFaults(members.contains { $0 === object } ? members : members + [object])
    }

    /// Fires many faults with at most one statement per entity: those whose
    /// rows the cache holds fresh need none.
    ///
    /// - Parameter faults: Objects of this context; those that are not faults are skipped.
    /// - Throws: `StoreError`: `.objectNotFound` when an object's row is no longer in the store; the store's
    ///   error (such as `.sqlite` or `.locked`) when reading fails.
    public func fireFaults(_ faults: [ManagedObject]) throws(StoreError) {
        var missing: [Int: [ManagedObject]] = [:]
        for object in faults where object.isFault {
            if let node = rowCache.node(object.objectID), isFresh(node) {
                attach(node, to: object)
            } else {
                missing[object.objectID.entity, default: []].append(object)
            }
        }
        for (entityIndex, objects) in missing {
            let entity = store.model.entities[entityIndex]
            let nodes = try store.rows(entity, keys: objects.map(\.objectID.primaryKey))
            let byKey = Dictionary(nodes.map { ($0.id.primaryKey, $0) }, uniquingKeysWith: { a, _ in a })
            for object in objects {
                if let node = byKey[object.objectID.primaryKey] { attach(node, to: object) }
            }
        }
        for object in faults where object.isFault {
            // The row is gone from the store: the object is not there any more.
            throw .objectNotFound(object.reference)
        }
    }

    /// Turns an object back into a fault, releasing its values (and its
    /// unsaved changes, unless `keepingChanges`).
    ///
    /// - Parameters:
    ///   - object: An object of this context.
    ///   - keepingChanges: Whether its unsaved changes are kept; an inserted object's always are.
    public func refresh(_ object: ManagedObject, keepingChanges: Bool = false) {
        if !keepingChanges, !object.isInserted {
            object.discardChanges()
            if !object.isDeleted { changed.remove(object) }
        }
        guard object.holdsRegistration else { return }
        object.node = nil
        rowCache.unregister(object.objectID)
    }

    /// Forgets every object and every unsaved change: the context holds none.
    public func reset() {
        unregisterAllObjects()
        objects.forEach { object in
            object.node = nil
            object.discardChanges()
        }
        objects.removeAll()
        faultBatches = [:]
        pendingFaultGeneration = nil
        changed.removeAll()
        denied = [:]
        refusedChanges = []
    }

    // MARK: Relationships

    /// The primary keys of a to-many relationship of `object`, loaded with one
    /// statement the first time and kept in the object's node.
    func toManyKeys(of object: ManagedObject, _ relationship: Relationship) throws(StoreError) -> [Int64] {
        let node = try object.values()
        if let keys = node.toManyKeys(at: relationship.slot) { return keys }
        let keys = try loadToMany(relationship, of: [node], entity: object.description_.entity)[node.id.primaryKey] ?? []
        return keys
    }

    /// Loads a to-many relationship for several nodes with one read; the
    /// nodes are updated in the row cache (and in their objects).
    @discardableResult
    func loadToMany(_ relationship: Relationship, of nodes: [RowNode], entity: Entity,
                    destinationRows: Bool = false) throws(StoreError) -> [Int64: [Int64]] {
        let links = try store.links(relationship, of: nodes.map(\.id.primaryKey), entity: entity, loadingRows: destinationRows)
        // Keep the loaded keys in the cached nodes (as they are now: other
        // loads may have filled other slots), so memory evaluation and later
        // reads see them.
        let updated = rowCache.setToMany(
            slot: relationship.slot,
            Dictionary(uniqueKeysWithValues: nodes.map { ($0.id, links[$0.id.primaryKey] ?? []) }))
        for node in updated {
            if let object = objects[node.id] { adoptToMany(from: node, into: object) }
        }
        return links
    }

    /// Gives an object that holds a snapshot the to-many keys a cached node
    /// has loaded. When the cache holds a newer version of the row (another
    /// context saved it), the object keeps the values and version it read, so
    /// that its save is still checked against that version.
    func adoptToMany(from node: RowNode, into object: ManagedObject) {
        guard let current = object.node else { return }
        guard current.version != node.version else {
            object.node = node
            return
        }
        var toMany = current.toMany
        for slot in toMany.indices where node.toManyKeys(at: slot) != nil { toMany[slot] = node.toManyKeys(at: slot) }
        object.node = RowNode(id: current.id, version: current.version, fetchTimestamp: current.fetchTimestamp,
                              values: current.values, toOne: current.toOne, toMany: toMany)
    }

    // MARK: Prefetching

    /// Fetches the objects along a relationship key path for `nodes`, one
    /// read per key of the path, and makes them the context's objects.
    func prefetch(_ keyPath: String, from nodes: [RowNode], entity: Entity) throws(StoreError) {
        var current = nodes
        var currentEntity = entity
        for key in keyPath.split(separator: ".").map(String.init) {
            let rows = try store.loadPath(key, from: current, entity: currentEntity)
            for node in current {
                // Objects holding a node see the to-many keys just loaded.
                if let object = objects[node.id], let cached = rowCache.node(node.id) {
                    adoptToMany(from: cached, into: object)
                }
            }
            for node in rows { _ = object(for: node.id) }
            current = rows
            currentEntity = store.model.entity(named: currentEntity.relationship(named: key)!.destination)!
        }
    }
}

/// Adds `count` strong references to the object at `object` (none when
/// `count` is not positive), with one atomic operation per 2^32 - 1.
@inline(__always)
private func retain(_ object: UnsafeMutableRawPointer, times count: Int) {
    var left = count
    while left > 0 {
        let some = UInt32(clamping: left)
        _ = swift_retain_n(object, some)
        left &-= Int(some)
    }
}
