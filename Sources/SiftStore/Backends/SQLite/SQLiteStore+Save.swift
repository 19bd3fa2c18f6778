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
    var writer: SQLSaveWriter {
        SQLSaveWriter(model: model, schema: schema, rowCache: rowCache, externalData: externalData, transformers: valueTransformers)
    }

    package func apply(_ request: SaveRequest) throws(StoreError) -> SaveResponse {
        if let writesRefused { throw .cannotWrite(path: path, reason: writesRefused) }
        var result = SaveResult()
        let writer = self.writer
        do {
            try withConnection { connection in
                try connection.transaction {
                    result = try writer.write(request, SQLiteExecutor(connection: connection))
                }
            }
        } catch let found as ConflictsFound {
            return .conflicts(found.conflicts)
        } catch {
            throw StoreError(error, path: path)
        }
        // Committed: the row cache holds what was written.
        rowCache.store(result.nodes.values)
        rowCache.remove(result.changes.deleted)
        return .committed(result)
    }
}

extension SQLiteStore {
    package func writeTransaction<T>(_ body: (any SQLExecutor) throws -> (T, StoreChanges)) throws(StoreError) -> T {
        if let writesRefused { throw .cannotWrite(path: path, reason: writesRefused) }
        do {
            return try withConnection { connection in
                try connection.transaction { try body(SQLiteExecutor(connection: connection)).0 }
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }
}
