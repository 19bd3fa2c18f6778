// Store stage: a store copied into a store of another type (Core Data's
// `migratePersistentStore(_:to:options:type:)`): every object with its key,
// values and relationships, read from any store and written to one that
// imports, in one transaction (or one atomic write).

import Foundation
import Sift

/// A store that takes a copy of another store's objects, keys kept, all at
/// once: SQLite and PostgreSQL in one transaction, an atomic store in one
/// write of its file.
public protocol ImportingStore: PersistentStore {
    /// Adds every object of a data set, keys kept, all or nothing.
    ///
    /// - Parameter dataSet: Objects of the store's model.
    /// - Throws: `StoreError`, nothing written: `.modelMismatch` for another model, `.keysInUse` when the
    ///   store holds some of the keys, the store's own error when writing fails.
    func importDataSet(_ dataSet: DataSet) throws(StoreError)
    /// Adds every object of a data set, keys kept, all or nothing, telling
    /// `progress` how many objects are written.
    ///
    /// By default the store reports none written, imports with
    /// ``importDataSet(_:)``, then reports every one written; a store that
    /// writes a row at a time reports as ``WorkProgress`` says.
    ///
    /// - Parameters:
    ///   - dataSet: Objects of the store's model.
    ///   - progress: Told how many objects are written (``WorkProgress/Step/writingObjects``); nil for no reports.
    /// - Throws: `StoreError`, nothing written, as ``importDataSet(_:)`` does.
    func importDataSet(_ dataSet: DataSet, progress: ((WorkProgress) -> Void)?) throws(StoreError)
}

extension ImportingStore {
    /// Adds every object of a data set with ``importDataSet(_:)``, reporting
    /// none written before and every one written after.
    ///
    /// - Parameters:
    ///   - dataSet: Objects of the store's model.
    ///   - progress: Told that no object is written, then that every one is; nil for no reports.
    /// - Throws: `StoreError`, nothing written, as ``ImportingStore/importDataSet(_:)`` does.
    public func importDataSet(_ dataSet: DataSet, progress: ((WorkProgress) -> Void)?) throws(StoreError) {
        let reporter = ProgressReporter(progress, .writingObjects, total: dataSet.nodes.count)
        try importDataSet(dataSet)
        reporter.finish()
    }
}

extension PersistentStore {
    /// Every object of the store, by its root entity's table (subentities
    /// included), each with its key, values, to-one keys and to-many
    /// members (in order, for an ordered relationship).
    ///
    /// - Returns: The objects, with the store's model.
    /// - Throws: `StoreError`: the store's own error when reading fails.
    public func allObjects() throws(StoreError) -> DataSet {
        try allObjects(progress: nil)
    }

    /// Every object of the store, as ``allObjects()`` reads them, telling
    /// `progress` how many are read: none first, then after each root
    /// entity's table (its objects counted first, when there is a closure).
    ///
    /// - Parameter progress: Told how many objects are read (``WorkProgress/Step/readingObjects``); nil
    ///   for no reports.
    /// - Returns: The objects, with the store's model.
    /// - Throws: `StoreError`: the store's own error when reading fails.
    public func allObjects(progress: ((WorkProgress) -> Void)?) throws(StoreError) -> DataSet {
        let roots = model.entities.filter { $0.superentity == nil }
        var total = 0
        if progress != nil {
            for root in roots { total += try count(for: try compile(FetchRequest(entityName: root.name))) }
        }
        var reporter = ProgressReporter(progress, .readingObjects, total: total, interval: 1)
        var nodes: [RowNode] = []
        for root in roots {
            let rows = try rows(for: try compile(FetchRequest(entityName: root.name)))
            defer { reporter.advance(by: rows.count) }
            guard !rows.isEmpty else { continue }
            var toMany: [ObjectID: [[Int64]?]] = [:]
            for row in rows { toMany[row.id] = Array(repeating: [], count: model.entities[row.id.entity].toManyCount) }
            // Each to-many relationship of each entity of the table, for the rows of that entity.
            for entity in model.entities where entity.rootIndex == root.index {
                let owners = rows.filter { model.isEntity(at: $0.id.entity, kindOf: entity.index) }.map(\.id)
                guard !owners.isEmpty else { continue }
                for relationship in entity.declaredRelationships where relationship.isToMany && !relationship.isTransient {
                    let links = try links(relationship, of: owners.map(\.primaryKey), entity: entity, loadingRows: false)
                    for owner in owners { toMany[owner]?[relationship.slot] = links[owner.primaryKey] ?? [] }
                }
            }
            for row in rows {
                nodes.append(RowNode(id: row.id, version: 1, values: row.values, toOne: row.toOne,
                                     toMany: toMany[row.id] ?? row.toMany))
            }
        }
        reporter.finish()
        return DataSet(model: model, nodes: nodes)
    }

    /// Copies every object into `destination`, a store of any type with the
    /// same model (Core Data's `migratePersistentStore(_:to:options:type:)`):
    /// keys, values and relationships as they are, written all at once.
    ///
    /// ```swift
    /// let source = try SQLiteStore(url: URL(fileURLWithPath: "company.sqlite"))
    /// let copy = try AtomicStore(url: URL(fileURLWithPath: "company.json"), model: source.model)
    /// try source.copy(to: copy)
    /// ```
    ///
    /// - Parameter destination: An empty store of the same model.
    /// - Returns: How many objects were copied.
    /// - Throws: `StoreError`, nothing written: `.modelMismatch` when the models differ; `.keysInUse` when the
    ///   destination holds objects already; the stores' own errors when reading or writing fails.
    @discardableResult
    public func copy(to destination: some ImportingStore) throws(StoreError) -> Int {
        try copy(to: destination, progress: nil)
    }

    /// Copies every object into `destination`, as ``copy(to:)`` does,
    /// telling `progress` how far it has got: the objects read (a root
    /// entity's table at a time), then the objects written.
    ///
    /// ```swift
    /// try source.copy(to: copy) { progress in
    ///     print(progress.step, progress.done, "of", progress.total)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - destination: An empty store of the same model.
    ///   - progress: Told how many objects are read (``WorkProgress/Step/readingObjects``), then written
    ///     (``WorkProgress/Step/writingObjects``); nil for no reports.
    /// - Returns: How many objects were copied.
    /// - Throws: `StoreError`, nothing written: `.modelMismatch` when the models differ; `.keysInUse` when the
    ///   destination holds objects already; the stores' own errors when reading or writing fails.
    @discardableResult
    public func copy(to destination: some ImportingStore, progress: ((WorkProgress) -> Void)?) throws(StoreError) -> Int {
        guard destination.model.versionHash == model.versionHash else {
            throw .modelMismatch(path: "the destination", storeHash: destination.model.versionHash, modelHash: model.versionHash)
        }
        for root in destination.model.entities where root.superentity == nil {
            if try destination.count(for: try destination.compile(FetchRequest(entityName: root.name))) > 0 {
                throw .keysInUse(path: "the destination", entity: root.name)
            }
        }
        let objects = try allObjects(progress: progress)
        try destination.importDataSet(objects, progress: progress)
        return objects.nodes.count
    }
}

extension AtomicStore: ImportingStore {}
