// Store stage: loading a data set into the SQLite store, in one transaction,
// with the statements the SQL stage builds (`SQLSaveWriter.importNodes`).

import Foundation
import Sift

extension SQLiteStore {
    /// Loads every object of a data set, in one transaction.
    ///
    /// - Parameters:
    ///   - dataSet: A data set of the store's model.
    ///   - progress: Called with the rows written so far and the total, every 10,000 rows and at the end.
    /// - Throws: `StoreError`, nothing written: `.modelMismatch` when the data set's model is not the store's;
    ///   `.locked`, `.readOnly`, `.full` or `.sqlite` when writing fails (a key the store already holds, say).
    public func importDataSet(_ dataSet: DataSet, progress: ((Int, Int) -> Void)? = nil) throws(StoreError) {
        guard dataSet.model.versionHash == model.versionHash else {
            throw .modelMismatch(path: url?.path ?? ":memory:", storeHash: model.versionHash, modelHash: dataSet.model.versionHash)
        }
        try importNodes(dataSet.nodes, progress: progress)
    }

    /// Inserts nodes of this store's model as new rows, with their
    /// relationships, in one transaction.
    ///
    /// - Parameters:
    ///   - nodes: Rows of the store's model, with keys the store does not hold yet.
    ///   - progress: Called with the rows written so far and the total, every 10,000 rows and at the end.
    /// - Throws: `StoreError`, nothing written: `.locked`, `.readOnly`, `.full` or `.sqlite` when writing fails
    ///   (a key the store already holds, say).
    public func importNodes(_ nodes: [RowNode], progress: ((Int, Int) -> Void)? = nil) throws(StoreError) {
        do {
            try insert(nodes, progress: progress)
        } catch {
            throw StoreError(error, path: path)
        }
    }

    private func insert(_ nodes: [RowNode], progress: ((Int, Int) -> Void)?) throws {
        let writer = self.writer
        try withConnection { connection in
            try connection.transaction {
                try writer.importNodes(nodes, SQLiteExecutor(connection: connection), progress: progress)
            }
        }
    }
}
