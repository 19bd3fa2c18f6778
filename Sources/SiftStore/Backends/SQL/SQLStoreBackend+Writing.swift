// Store stage: how every SQL store writes — a save request, a batch
// change's statements and an import, each in one write transaction that the
// backend begins and ends (`inWriteTransaction`). A conflict rolls the save
// back and comes back as the rows that moved; after a commit the row cache
// holds what was written.

import Foundation
import Sift

extension SQLStoreBackend {
    /// Applies a save request in one transaction, written by `SQLSaveWriter`:
    /// every UPDATE and DELETE checked against the version the context read.
    public func apply(_ request: SaveRequest) throws(StoreError) -> SaveResponse {
        if let writesRefused { throw .cannotWrite(path: location, reason: writesRefused) }
        var counts: [Int: Int64] = [:]
        for insert in request.inserts where insert.id.primaryKey < 0 { counts[insert.id.root, default: 0] += 1 }
        let writer = self.writer
        let result: SaveResult
        do {
            result = try inWriteTransaction(reservingKeys: counts) { executor in
                let result = try writer.write(request, on: executor)
                return (result, result.changes)
            }
        } catch let found as ConflictsFound {
            return .conflicts(found.conflicts)
        } catch {
            throw storeError(error)
        }
        // Committed: the row cache holds what was written.
        rowCache.store(result.writtenNodes)
        rowCache.remove(result.changes.deleted)
        return .committed(result)
    }

    /// Runs `body` in one write transaction: committed when it returns (the
    /// changes it gives sent to other processes with the commit, where the
    /// database does that), rolled back when it throws.
    package func writeTransaction<T>(_ body: (any SQLExecutor) throws -> (T, StoreChanges)) throws(StoreError) -> T {
        if let writesRefused { throw .cannotWrite(path: location, reason: writesRefused) }
        do {
            return try inWriteTransaction(reservingKeys: [:], body)
        } catch {
            throw storeError(error)
        }
    }

    /// Loads every object of a data set, in one transaction.
    ///
    /// - Parameters:
    ///   - dataSet: A data set of the store's model.
    ///   - progress: Told how many objects are written (``WorkProgress/Step/writingObjects``), as
    ///     ``WorkProgress`` says; nil for no reports.
    /// - Throws: `StoreError`, nothing written: `.modelMismatch` when the data set's model is not the store's;
    ///   the database's error when writing fails (a key the store already holds, say; on PostgreSQL,
    ///   `.validation` for a string holding U+0000, which its text cannot hold).
    public func importDataSet(_ dataSet: DataSet, progress: ((WorkProgress) -> Void)?) throws(StoreError) {
        guard dataSet.model.versionHash == model.versionHash else {
            throw .modelMismatch(path: location, storeHash: model.versionHash, modelHash: dataSet.model.versionHash)
        }
        try importNodes(dataSet.nodes, progress: progress)
    }

    /// Inserts nodes of this store's model as new rows, with their
    /// relationships, in one transaction.
    ///
    /// - Parameters:
    ///   - nodes: Rows of the store's model, with keys the store does not hold yet.
    ///   - progress: Told how many objects are written (``WorkProgress/Step/writingObjects``), as
    ///     ``WorkProgress`` says; nil for no reports.
    /// - Throws: `StoreError`, nothing written: the database's error when writing fails (a key the store
    ///   already holds, say).
    public func importNodes(_ nodes: [RowNode], progress: ((WorkProgress) -> Void)?) throws(StoreError) {
        let writer = self.writer
        try writeTransaction { executor in
            try writer.importNodes(nodes, executor, progress: progress)
            return ((), StoreChanges())
        }
        try didImport()
    }

    /// Writes `nodes` as the rows the store holds under their keys, with
    /// their versions, replacing the rows it held under those keys, and
    /// deletes the rows `deleted` names: no delete rules, no version checks,
    /// in one transaction. For a store kept as a copy of rows another store
    /// gave (a remote store's disk cache); to-many links without a to-one
    /// inverse are not written.
    ///
    /// - Parameters:
    ///   - nodes: Rows of the store's model, as the other store holds them.
    ///   - deleted: Rows to drop.
    ///   - alongside: More work in the same transaction, before the rows are written (a remote store's
    ///     queue of saves made offline, kept beside the rows it changed).
    /// - Throws: `StoreError`, nothing written: the database's error when writing fails.
    package func mirror(_ nodes: [RowNode], deleting deleted: [ObjectID],
                        alongside: ((any SQLExecutor) throws -> Void)? = nil) throws(StoreError) {
        guard !nodes.isEmpty || !deleted.isEmpty || alongside != nil else { return }
        let writer = self.writer
        let schema = self.schema
        let model = self.model
        try writeTransaction { executor -> ((), StoreChanges) in
            try alongside?(executor)
            var byRoot: [Int: [Int64]] = [:]
            for id in deleted { byRoot[id.root, default: []].append(id.primaryKey) }
            for node in nodes { byRoot[node.id.root, default: []].append(node.id.primaryKey) }
            try deleteRows(byRoot, executor, schema: schema, model: model)
            try writer.importNodes(nodes, executor, progress: nil)
            return ((), StoreChanges())
        }
        rowCache.remove(Set(deleted + nodes.map(\.id)))
    }

    package func didImport() throws(StoreError) {}
    public func close() {}
    package var writesRefused: String? { nil }
}

/// Deletes rows by key, root table by root table, without delete rules.
private func deleteRows<E: SQLExecutor>(_ keys: [Int: [Int64]], _ executor: E, schema: SQLSchema, model: DataModel) throws {
    for (root, keys) in keys {
        let entity = model.entities[root]
        let statement = try executor.prepare(schema.deleteRowByKey(entity))
        for key in keys { _ = try executor.run(statement, [.integer(key)]) }
    }
}
