// Store stage: loading a data set into the SQLite store, in one transaction,
// with the statements the SQL stage builds (`SQLSaveWriter.importNodes`).

import Foundation
import Sift

extension SQLiteStore {
    /// Loads every object of a data set, in one transaction.
    public func importDataSet(_ dataSet: DataSet, progress: ((Int, Int) -> Void)? = nil) throws(StoreError) {
        guard dataSet.model.versionHash == model.versionHash else {
            throw .modelMismatch(path: url?.path ?? ":memory:", storeHash: model.versionHash, modelHash: dataSet.model.versionHash)
        }
        try importNodes(dataSet.nodes, progress: progress)
    }

    /// Inserts nodes of this store's model as new rows, with their
    /// relationships, in one transaction.
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
