// PostgreSQL: how the store applies a save request — one transaction on
// one connection of the pool, written by `SQLSaveWriter` as on SQLite: every
// UPDATE and DELETE checked against the version the context read, a row that
// moved a conflict (the transaction rolled back). Keys are reserved before
// the transaction, one `UPDATE … RETURNING` per table, so many writers get
// distinct keys without holding a lock for their whole save (a save that
// rolls back leaves a gap, as a sequence does). The changes go to other
// processes as notifications sent inside the transaction: PostgreSQL
// delivers them at commit, and never for a rollback.

import Foundation
import Logging
import PostgresNIO
import Sift
import SiftStore
import Synchronization

/// A connection inside a save's transaction.
struct PostgresExecutor: SQLExecutor {
    let connection: PostgresConnection
    let logger: Logger
    /// The largest key reserved for each root entity before the transaction.
    let reserved: [Int: Int64]
    /// The store, whose statements are counted.
    let store: PostgresStore

    func prepare(_ sql: String) throws -> String { sql }

    @discardableResult
    func run(_ statement: String, _ bindings: [SQLValue]) throws -> Int {
        store.statements.add(1, ordering: .relaxed)
        return try connection.run(statement, bindings, logger: logger).changed
    }

    func rows(_ sql: String, _ bindings: [SQLValue]) throws -> [[SQLValue]] {
        store.statements.add(1, ordering: .relaxed)
        return try connection.run(sql, bindings, logger: logger).rows
    }

    func reserveKeys(_ count: Int64, root: Entity, schema: SQLSchema) throws -> Int64 {
        if let largest = reserved[root.index] { return largest }
        return try Self.reserve(count, root: root, schema: schema, on: connection, logger: logger)
    }

    /// Moves the largest key handed out for `root`'s table up by `count`.
    static func reserve(_ count: Int64, root: Entity, schema: SQLSchema, on connection: PostgresConnection,
                        logger: Logger) throws -> Int64 {
        let query = schema.reserveKeys(root, count: count)
        do {
            guard case .integer(let largest)? = try connection.run(query.sql, query.bindings, logger: logger).rows.first?.first else {
                throw StoreError.damaged(path: schema.model.root(of: root).name, reason: "Z_PRIMARYKEY has no row for it")
            }
            return largest
        } catch let error as PostgresDatabaseError where error.code == PostgresDatabaseError.SQLState.numericValueOutOfRange {
            // numeric_value_out_of_range: the table's keys are used up.
            throw StoreError.keysExhausted(entity: root.name)
        }
    }
}

extension PostgresStore {
    var writer: SQLSaveWriter {
        SQLSaveWriter(model: model, schema: schema, rowCache: rowCache, externalData: nil, transformers: valueTransformers)
    }

    /// Runs `body` in a transaction on one connection: committed when it
    /// returns, rolled back when it throws (its error rethrown as it is).
    func transaction<T>(reservedKeys: [Int: Int64], _ body: (PostgresExecutor) throws -> T) throws -> T {
        try pool.withConnection { connection in
            let executor = PostgresExecutor(connection: connection, logger: logger, reserved: reservedKeys, store: self)
            try executor.run("BEGIN", [])
            do {
                let result = try body(executor)
                try executor.run("COMMIT", [])
                return result
            } catch {
                _ = try? executor.run("ROLLBACK", [])
                throw error
            }
        }
    }

    package func apply(_ request: SaveRequest) throws(StoreError) -> SaveResponse {
        var counts: [Int: Int64] = [:]
        for insert in request.inserts where insert.id.primaryKey < 0 { counts[insert.id.root, default: 0] += 1 }
        let writer = self.writer
        let notifications = { (changes: StoreChanges) in self.notifications(for: changes) }
        let channel = self.channel
        let result: SaveResult
        do {
            // Keys first, outside the transaction: no writer waits on another's save for them.
            var reserved: [Int: Int64] = [:]
            if !counts.isEmpty {
                try pool.withConnection { connection in
                    for (root, count) in counts.sorted(by: { $0.key < $1.key }) {
                        reserved[root] = try PostgresExecutor.reserve(count, root: model.entities[root], schema: schema,
                                                                      on: connection, logger: logger)
                    }
                }
            }
            result = try transaction(reservedKeys: reserved) { executor in
                let result = try writer.write(request, executor)
                for payload in notifications(result.changes) {
                    let notify = ServerCatalog.notify(channel, payload)
                    try executor.run(notify.sql, notify.bindings)
                }
                return result
            }
        } catch let found as ConflictsFound {
            return .conflicts(found.conflicts)
        } catch {
            throw Self.storeError(error)
        }
        // Committed: the row cache holds what was written.
        rowCache.store(result.nodes.values)
        rowCache.remove(result.changes.deleted)
        return .committed(result)
    }
}

extension PostgresStore {
    package func writeTransaction<T>(_ body: (any SQLExecutor) throws -> (T, StoreChanges)) throws(StoreError) -> T {
        let notifications = { (changes: StoreChanges) in self.notifications(for: changes) }
        let channel = self.channel
        do {
            return try transaction(reservedKeys: [:]) { executor in
                let (result, changes) = try body(executor)
                for payload in notifications(changes) {
                    let notify = ServerCatalog.notify(channel, payload)
                    try executor.run(notify.sql, notify.bindings)
                }
                return result
            }
        } catch let error as PostgresDatabaseError where error.code == PostgresDatabaseError.SQLState.numericValueOutOfRange {
            // numeric_value_out_of_range: an integer expression passed 64 bits.
            throw .validation([SaveValidationFailure(object: "<batch update>", property: "",
                                                     reason: "an integer expression passed the 64-bit integers (an integer overflow)")])
        } catch {
            throw Self.storeError(error)
        }
    }
}
