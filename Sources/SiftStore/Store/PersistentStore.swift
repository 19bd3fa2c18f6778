// Store stage: what a context needs from a store. The SQLite store answers
// with SQL (and memory for residuals); the atomic store answers everything
// with the memory lowering over the rows it loaded from its file. A store
// never calls back into a context: fetches return rows, saves take a
// `SaveRequest` and answer with a `SaveResponse`.

import Foundation
import Sift

/// A store that contexts work on: the one protocol every store implements —
/// `SQLiteStore`, `AtomicStore`, `PostgresStore` (in the `SiftPostgres`
/// product), and a store of your own.
///
/// A store answers a context with rows: it reads them into its ``rowCache``
/// as `RowNode`s (values in slots, to-one relationships as keys, a version
/// for optimistic locking), and applies a ``SaveRequest`` in one transaction,
/// all or nothing. It never calls back into a context. What stores share is
/// written once in this protocol's extensions: observers
/// (``addObserver(_:)``), compiling requests (``compile(_:)``, cached per
/// request shape), dictionary fetches and batch changes in memory for a
/// store that does not run them itself, and loading relationship paths.
///
/// ```swift
/// func logSaves(of store: any PersistentStore) -> StoreObservation {
///     store.addObserver { changes in print("saved: \(changes.inserted.count) inserted, \(changes.updated.count) updated") }
/// }
/// let context = ObjectContext(store: store)                   // any store
/// let observation = logSaves(of: context.persistentStore)
/// let hire = try context.insert("Employee")
/// try hire.setValue(.string("Dee"), forKey: "name")
/// try hire.setValue(.int(35), forKey: "age")
/// try context.save()                                          // saved: 1 inserted, 0 updated
/// observation.cancel()
/// ```
public protocol PersistentStore: AnyObject, Sendable {
    /// The model the store holds.
    var model: DataModel { get }
    /// The nodes of the rows read so far, shared by every context.
    var rowCache: RowCache { get }
    /// Functions the application registered.
    var functions: FunctionRegistry { get }
    /// Who hears about the store's saves (``addObserver(_:)`` adds to them).
    var observers: StoreObservers { get }
    /// The requests compiled so far, by shape (``compile(_:)`` fills it).
    var compiledFetches: CompiledFetchCache { get }
    /// The value transformers of transformable attributes; nil when values
    /// are the stored bytes (the default).
    var transformers: ValueTransformerRegistry? { get }
    /// The longest one of the store's fetches (a fetch, count, dictionary
    /// fetch or batch change) may work unless its request says otherwise
    /// (`FetchRequest.timeLimit`); nil for `PredicateLimits.standard.fetchTimeLimit`.
    /// Past it the fetch ends with `StoreError.evaluation(.fetchTooCostly)`.
    var fetchTimeLimit: Duration? { get }

    /// The rows a compiled request selects, in its order, offset and limit
    /// applied; stored in the row cache.
    ///
    /// - Parameter fetch: The request, compiled by ``compile(_:)``.
    /// - Returns: The rows' nodes, as the row cache now holds them.
    /// - Throws: `StoreError`: `.evaluation` when a pattern runs out of its budget; the store's own error when
    ///   reading fails.
    func rows(for fetch: CompiledFetch) throws(StoreError) -> [RowNode]
    /// The IDs of the objects a compiled request selects, in its order, each
    /// of the object's own entity.
    ///
    /// - Parameter fetch: The request, compiled by ``compile(_:)``.
    /// - Returns: The IDs, offset and limit applied.
    /// - Throws: `StoreError`, as ``rows(for:)`` does.
    func keys(for fetch: CompiledFetch) throws(StoreError) -> [ObjectID]
    /// How many objects a compiled request selects.
    ///
    /// - Parameter fetch: The request, compiled by ``compile(_:)``.
    /// - Returns: The number of objects, offset and limit applied.
    /// - Throws: `StoreError`, as ``rows(for:)`` does.
    func count(for fetch: CompiledFetch) throws(StoreError) -> Int
    /// The rows of a bound dictionary fetch of a compiled request's objects,
    /// values in column order. By default, memory runs it over ``rows(for:)``.
    ///
    /// - Parameters:
    ///   - results: The dictionary fetch's columns, grouping and having predicate, bound.
    ///   - fetch: The objects it reads, compiled (unsorted; its limit and offset apply to the results).
    ///   - sort: The order of the results, by column.
    /// - Returns: One row of values per result, in column order.
    /// - Throws: `StoreError`, as ``rows(for:)`` does.
    func results(_ results: BoundDictionaryFetch, of fetch: CompiledFetch, sort: [ResultSortKey]) throws(StoreError)
        -> [[PredicateValue]]
    /// Runs a batch update in one transaction. By default, memory works it out
    /// over the rows and ``apply(_:)`` saves it.
    ///
    /// - Parameter update: The update, its assignments bound.
    /// - Returns: The objects changed, and the changes as observers hear them.
    /// - Throws: `StoreError`: `.validation` when a value does not fit its attribute; `.conflicts` when rows
    ///   kept changing under it; the store's own error when writing fails.
    func batchUpdate(_ update: BoundBatchUpdate) throws(StoreError) -> BatchResult
    /// Runs a batch delete of `entity`'s objects in one transaction, delete
    /// rules applied. By default, memory works it out and ``apply(_:)`` saves it.
    ///
    /// - Parameters:
    ///   - request: The objects to delete, by predicate or by ID.
    ///   - entity: Their entity.
    /// - Returns: The objects deleted, and every change as observers hear it.
    /// - Throws: `StoreError`: `.validation` when a deny rule refuses; `.invalidRequest` when an ID is of
    ///   another entity; the store's own error when writing fails.
    func batchDelete(_ request: BatchDeleteRequest, entity: Entity) throws(StoreError) -> BatchResult
    /// The rows of `entity` with these keys (in no particular order); stored
    /// in the row cache.
    ///
    /// - Parameters:
    ///   - entity: The entity (or an ancestor) of the rows.
    ///   - keys: Their primary keys.
    /// - Returns: The nodes of the rows the store holds; keys it does not hold are left out.
    /// - Throws: `StoreError`: the store's own error when reading fails.
    func rows(_ entity: Entity, keys: [Int64]) throws(StoreError) -> [RowNode]
    /// The member keys of a to-many relationship for each owner; with
    /// `loadingRows`, the members' rows are read into the row cache too.
    ///
    /// - Parameters:
    ///   - relationship: A to-many relationship of `entity`.
    ///   - owners: The owners' primary keys.
    ///   - entity: The owners' entity.
    ///   - loadingRows: Whether the members' rows are read into the row cache too.
    /// - Returns: Each owner's member keys (in order, for an ordered relationship); an owner with none maps
    ///   to an empty array.
    /// - Throws: `StoreError`: `.unknownRelationship` when `relationship` is not one of `entity`'s; the store's
    ///   own error when reading fails.
    func links(_ relationship: Relationship, of owners: [Int64], entity: Entity,
               loadingRows: Bool) throws(StoreError) -> [Int64: [Int64]]
    /// Applies a save request in one transaction: all of it, or (on an
    /// error or a conflict) none of it. After a commit the row cache holds
    /// the written rows; the caller announces the changes.
    ///
    /// - Parameter request: The changes: inserts, updates with the versions read, deletes, link changes.
    /// - Returns: `.committed` with what was written, or `.conflicts` with the rows whose versions moved
    ///   (nothing written).
    /// - Throws: `StoreError`: `.keysExhausted` when a table has no key left; the store's own error when
    ///   writing fails (nothing written).
    func apply(_ request: SaveRequest) throws(StoreError) -> SaveResponse
}

extension PersistentStore {
    /// Calls `observer` with the changes of every committed save and batch
    /// change, on the thread that made it (or, for another process's save,
    /// the thread that heard of it), until the returned observation is
    /// cancelled (releasing it does not stop it: call `cancel()`).
    ///
    /// - Parameter observer: Hears each `StoreChanges`; hand it to a context's
    ///   own thread before merging.
    /// - Returns: The observation, whose `cancel()` stops it.
    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (StoreChanges) -> Void) -> StoreObservation {
        observers.add(observer)
    }

    /// No value transformers: values are the stored bytes.
    public var transformers: ValueTransformerRegistry? { nil }

    /// No time limit of the store's own: `PredicateLimits.standard.fetchTimeLimit`.
    public var fetchTimeLimit: Duration? { nil }

    /// Runs a dictionary fetch in memory over the rows of its objects (the
    /// default, for a store that does not run it itself).
    ///
    /// - Parameters:
    ///   - results: The dictionary fetch's columns, grouping and having predicate, bound.
    ///   - fetch: The objects it reads, compiled.
    ///   - sort: The order of the results, by column.
    /// - Returns: One row of values per result, in column order.
    /// - Throws: `StoreError`, as ``rows(for:)`` does.
    public func results(_ results: BoundDictionaryFetch, of fetch: CompiledFetch,
                        sort: [ResultSortKey]) throws(StoreError) -> [[PredicateValue]] {
        try resultsInMemory(results, of: fetch, sort: sort)
    }

    /// Works a batch update out in memory and saves it with ``apply(_:)``
    /// (the default, for a store that does not run it itself).
    ///
    /// - Parameter update: The update, its assignments bound.
    /// - Returns: The objects changed, and the changes as observers hear them.
    /// - Throws: `StoreError`, as the requirement says.
    public func batchUpdate(_ update: BoundBatchUpdate) throws(StoreError) -> BatchResult {
        try batchUpdateInMemory(update)
    }

    /// Works a batch delete out in memory, delete rules applied, and saves
    /// it with ``apply(_:)`` (the default, for a store that does not run it
    /// itself).
    ///
    /// - Parameters:
    ///   - request: The objects to delete, by predicate or by ID.
    ///   - entity: Their entity.
    /// - Returns: The objects deleted, and every change as observers hear it.
    /// - Throws: `StoreError`, as the requirement says.
    public func batchDelete(_ request: BatchDeleteRequest, entity: Entity) throws(StoreError) -> BatchResult {
        try batchDeleteInMemory(request, entity: entity)
    }

    package func entity(_ name: String) throws(StoreError) -> Entity {
        guard let entity = model.entity(named: name) else { throw .unknownEntity(name) }
        return entity
    }

    /// The binder for this store's predicates and sort keys: transient
    /// attributes, which the store holds no value of, are errors.
    package var binder: Binder {
        var binder = Binder(model: model, functions: functions)
        binder.requiresStoredAttributes = true
        return binder
    }

    /// The sort keys of a request, bound.
    package func sortKeys(_ request: FetchRequest) throws(StoreError) -> [SQLSortKey] {
        var keys: [SQLSortKey] = []
        for descriptor in request.sortDescriptors {
            do {
                let syntax = try PredicateParser.parseExpression(descriptor.keyPath)
                let bound = try binder.bind(syntax, entity: request.entityName)
                keys.append(SQLSortKey(bound, ascending: descriptor.ascending, caseInsensitive: descriptor.caseInsensitive))
            } catch let error as PredicateSyntaxError {
                throw .invalidPredicate(.syntax(error), text: descriptor.keyPath)
            } catch let error as PredicateValidationError {
                throw .invalidPredicate(.validation(error), text: descriptor.keyPath)
            } catch {
                throw .unknownKey(descriptor.keyPath, entity: request.entityName)
            }
        }
        return keys
    }

    /// Tells every observer what a save changed.
    package func announce(_ changes: StoreChanges) {
        observers.announce(changes)
    }

    /// Reads the rows along a relationship key path from `nodes`, one read per
    /// key of the path; to-many keys are kept in the cached nodes. Returns the
    /// rows at the end of the path.
    @discardableResult
    package func loadPath(_ keyPath: String, from nodes: [RowNode], entity: Entity) throws(StoreError) -> [RowNode] {
        var current = nodes
        var currentEntity = entity
        for key in keyPath.split(separator: ".").map(String.init) {
            guard let relationship = currentEntity.relationship(named: key) else {
                throw .unknownRelationship(keyPath, entity: entity.name)
            }
            let destination = model.entity(named: relationship.destination)!
            if relationship.isToMany {
                let links = try links(relationship, of: current.map(\.id.primaryKey), entity: currentEntity, loadingRows: true)
                rowCache.setToMany(slot: relationship.slot, Dictionary(uniqueKeysWithValues: current.map {
                    ($0.id, links[$0.id.primaryKey] ?? [])
                }))
                let keys = Set(links.values.joined())
                current = keys.compactMap { rowCache.node(ObjectID(entity: destination, primaryKey: $0)) }
            } else {
                let keys = Array(Set(current.compactMap { $0.toOne[relationship.slot] })).sorted()
                current = keys.isEmpty ? [] : try rows(destination, keys: keys)
            }
            currentEntity = destination
        }
        return current
    }

    /// Sorts nodes as SQL would: by each key (nil first when ascending, `[c]`
    /// folding when asked), then by primary key.
    package func sortedNodes(_ nodes: [RowNode], _ fetch: CompiledFetch, domain: RowNodeDomain) throws(StoreError) -> [RowNode] {
        let keys = fetch.sortKeys
        guard !keys.isEmpty else { return nodes.sorted { $0.id.primaryKey < $1.id.primaryKey } }
        return try sortedInMemory(nodes, by: keys, domain: domain) { $0.id.primaryKey < $1.id.primaryKey }
    }
}
