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
}

extension PersistentStore {
    /// Every object of the store, by its root entity's table (subentities
    /// included), each with its key, values, to-one keys and to-many
    /// members (in order, for an ordered relationship).
    ///
    /// - Returns: The objects, with the store's model.
    /// - Throws: `StoreError`: the store's own error when reading fails.
    public func allObjects() throws(StoreError) -> DataSet {
        var nodes: [RowNode] = []
        for root in model.entities where root.superentity == nil {
            let rows = try rows(for: try compile(FetchRequest(entityName: root.name)))
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
        guard destination.model.versionHash == model.versionHash else {
            throw .modelMismatch(path: "the destination", storeHash: destination.model.versionHash, modelHash: model.versionHash)
        }
        for root in destination.model.entities where root.superentity == nil {
            if try destination.count(for: try destination.compile(FetchRequest(entityName: root.name))) > 0 {
                throw .keysInUse(path: "the destination", entity: root.name)
            }
        }
        let objects = try allObjects()
        try destination.importDataSet(objects)
        return objects.nodes.count
    }
}

extension AtomicStore: ImportingStore {}
