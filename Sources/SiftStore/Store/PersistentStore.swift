// Store stage: what a context needs from a store. The SQLite store answers
// with SQL (and memory for residuals); the atomic store answers everything
// with the memory lowering over the rows it loaded from its file. A store
// never calls back into a context: fetches return rows, saves take a
// `SaveRequest` and answer with a `SaveResponse`.

import Foundation
import Sift

/// A store that contexts can work on: `SQLiteStore`, `AtomicStore`, or
/// `PostgresStore` (in the `SiftPostgres` product).
///
/// ```swift
/// func logSaves(of store: any PersistentStore) -> StoreObservation {
///     store.addObserver { changes in print("saved: \(changes.inserted.count) inserted, \(changes.updated.count) updated") }
/// }
/// let observation = logSaves(of: context.persistentStore)    // whichever kind of store the context is on
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
    /// Calls `observer` after every save, with what it changed.
    ///
    /// - Parameter observer: Called after each committed save with what it changed, on whatever thread the
    ///   store announces it from.
    /// - Returns: A token whose `cancel()` stops the observer.
    @discardableResult
    func addObserver(_ observer: @escaping @Sendable (StoreChanges) -> Void) -> StoreObservation
}

/// The operations behind a context.
package protocol StoreBackend: PersistentStore {
    /// The rows a request selects, in its order, offset and limit applied;
    /// stored in the row cache.
    func rows(for request: FetchRequest) throws(StoreError) -> [RowNode]
    /// The IDs of the objects a request selects, in its order, each of the
    /// object's own entity.
    func keys(for request: FetchRequest) throws(StoreError) -> [ObjectID]
    /// How many objects a request selects.
    func count(for request: FetchRequest) throws(StoreError) -> Int
    /// The rows of a bound dictionary fetch of `request`'s objects, values in column order.
    func results(_ fetch: BoundDictionaryFetch, request: FetchRequest, sort: [ResultSortKey]) throws(StoreError)
        -> [[PredicateValue]]
    /// Runs a batch update in one transaction (SQL, or memory and a save).
    func batchUpdate(_ update: BoundBatchUpdate) throws(StoreError) -> BatchResult
    /// Runs a batch delete of `entity`'s objects in one transaction, delete rules applied.
    func batchDelete(_ request: BatchDeleteRequest, entity: Entity) throws(StoreError) -> BatchResult
    /// The rows of `entity` with these keys (in no particular order); stored in the row cache.
    func rows(_ entity: Entity, keys: [Int64]) throws(StoreError) -> [RowNode]
    /// The member keys of a to-many relationship for each owner; with
    /// `loadingRows`, the members' rows are read into the row cache too.
    func links(_ relationship: Relationship, of owners: [Int64], entity: Entity,
               loadingRows: Bool) throws(StoreError) -> [Int64: [Int64]]
    /// Applies a save request in one transaction: all of it, or (on an
    /// error or a conflict) none of it. After a commit the row cache holds
    /// the written rows; the caller announces the changes.
    func apply(_ request: SaveRequest) throws(StoreError) -> SaveResponse
    /// Tells every observer what a save changed.
    func announce(_ changes: StoreChanges)
    /// Who hears about saves.
    var observers: Observers { get }
    /// The value transformers of transformable attributes (none: values are the stored bytes).
    var transformers: ValueTransformerRegistry? { get }
}

extension StoreBackend {
    /// Dictionary fetches run in memory, unless the store runs them itself.
    package func results(_ fetch: BoundDictionaryFetch, request: FetchRequest,
                         sort: [ResultSortKey]) throws(StoreError) -> [[PredicateValue]] {
        try resultsInMemory(fetch, request: request, sort: sort)
    }

    package func entity(_ name: String) throws(StoreError) -> Entity {
        guard let entity = model.entity(named: name) else { throw .unknownEntity(name) }
        return entity
    }

    /// The compiler for this store's predicates: its model, the standard
    /// optimizer and its functions.
    package var compiler: PredicateCompiler {
        var compiler = PredicateCompiler(model: model, functions: functions)
        compiler.requiresStoredAttributes = true
        return compiler
    }

    /// The binder for this store's predicates and sort keys: transient
    /// attributes, which the store holds no value of, are errors.
    package var binder: Binder {
        var binder = Binder(model: model, functions: functions)
        binder.requiresStoredAttributes = true
        return binder
    }

    /// The bound, optimized predicate of a request.
    package func boundPredicate(_ request: FetchRequest) throws(StoreError) -> BoundPredicate? {
        switch request.predicate {
        case nil:
            return nil
        case .bound(let bound):
            return Optimizer.standard.optimize(bound)
        case .format(let text, let arguments):
            do {
                return try compiler.bind(text, arguments: arguments, entity: request.entityName)
            } catch {
                throw .invalidPredicate(error, text: text)
            }
        }
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

    package func announce(_ changes: StoreChanges) {
        guard !changes.isEmpty else { return }
        for observer in observers.handlers.withLock({ Array($0.values) }) { observer(changes) }
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
    package func sortedNodes(_ nodes: [RowNode], _ request: FetchRequest, domain: RowNodeDomain) throws(StoreError) -> [RowNode] {
        let keys = try sortKeys(request)
        guard !keys.isEmpty else { return nodes.sorted { $0.id.primaryKey < $1.id.primaryKey } }
        return try sortedInMemory(nodes, by: keys, domain: domain) { $0.id.primaryKey < $1.id.primaryKey }
    }
}
