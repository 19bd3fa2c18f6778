// Store stage: how the SQLite store applies a save request — one
// transaction, written by `SQLSaveWriter` with a SQLite executor: prepared
// statements, the changed-row count SQLite keeps, and keys after each
// table's largest (one writer at a time: SQLite locks the file). After a
// commit the row cache holds the written rows, then observers are told.

import Foundation
import Sift

/// The SQLite connection inside a save's transaction.
struct SQLiteExecutor: SQLExecutor {
    let connection: SQLiteConnection
    /// What the transaction records in the store's history, when it keeps one.
    var history: HistoryRecorder?

    func prepare(_ sql: String) throws -> SQLiteStatement {
        try connection.statement(sql)
    }

    @discardableResult
    func run(_ statement: SQLiteStatement, _ bindings: [SQLValue]) throws -> Int {
        try connection.run(statement, bindings)
        return connection.changes
    }

    func rows(_ sql: String, _ bindings: [SQLValue]) throws -> [[SQLValue]] {
        try connection.query(sql, bindings)
    }

    func reserveKeys(_ count: Int64, root: Entity, schema: SQLSchema) throws -> Int64 {
        // After the largest key handed out (Core Data's record) and the largest in the table.
        var largest: Int64 = 0
        for query in [schema.selectKeyMaximum(root), schema.selectLargestKey(root)] {
            if case .integer(let m)? = try connection.query(query).first?.first { largest = max(largest, m) }
        }
        guard largest <= Int64.max - count else { throw StoreError.keysExhausted(entity: root.name) }
        try connection.run(schema.updateKeyMaximum(root, to: largest + count))
        return largest + count
    }
}

extension SQLiteStore {
    package var writer: SQLSaveWriter {
        SQLSaveWriter(model: model, schema: schema, rowCache: rowCache, externalData: externalData, transformers: valueTransformers)
    }

    /// SQLite hands out keys inside the transaction (one writer at a time:
    /// SQLite locks the file), so `reservingKeys` is not read.
    package func inWriteTransaction<T>(reservingKeys: [Int: Int64],
                                       _ body: (any SQLExecutor) throws -> (T, StoreChanges)) throws -> T {
        try withConnection { connection in
            var written: Int64?
            let value = try connection.transaction {
                // A store that keeps history writes it before the commit, in the same transaction.
                let recorder = historyTombstones.map { HistoryRecorder(model: model, schema: schema, tombstoneColumns: $0) }
                let executor = SQLiteExecutor(connection: connection, history: recorder)
                let value = try body(executor).0
                written = try recorder?.write(executor, names: TransactionNames.current, at: Date().timeIntervalSinceReferenceDate)
                return value
            }
            // Committed: the watcher of other processes' saves is not to announce this one
            // (marked while the connection is still held, before the watcher can read it).
            if let written { otherProcesses?.ownTransactions.withLock { _ = $0.insert(written) } }
            return value
        }
    }

    package func storeError(_ error: any Error) -> StoreError {
        let converted = StoreError(error, path: path)
        // A key the store holds already: the entity whose table SQLite names
        // ("UNIQUE constraint failed: ZAUTHOR.Z_PK").
        if case .keysInUse(let path, nil) = converted, let sqlite = error as? SQLiteError,
           let failed = sqlite.message.range(of: "failed: ") {
            let table = sqlite.message[failed.upperBound...].prefix { $0 != "." }
            let entity = model.entities.first { $0.superentity == nil && schema.table($0) == table }
            return .keysInUse(path: path, entity: entity?.name)
        }
        return converted
    }
}
