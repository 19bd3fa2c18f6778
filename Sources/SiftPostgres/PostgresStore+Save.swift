// PostgreSQL: how the store applies a save request — one transaction on
// one connection of the pool, written by `SQLSaveWriter` as on SQLite: every
// UPDATE and DELETE checked against the version the context read, a row that
// moved a conflict (the transaction rolled back). Keys are reserved before
// the transaction, one `UPDATE … RETURNING` per table, so many writers get
// distinct keys without holding a lock for their whole save (a save that
// rolls back leaves a gap, as a sequence does). The changes are recorded in
// the store's change history (PostgresStore+ChangeHistory.swift) and go to
// other processes as notifications sent inside the transaction: PostgreSQL
// delivers them at commit, and never for a rollback.

#if PostgreSQL  // the package trait that brings postgres-nio (on by default)
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
    package var writer: SQLSaveWriter {
        SQLSaveWriter(model: model, schema: schema, rowCache: rowCache, externalData: nil, transformers: valueTransformers)
    }

    /// Runs `body` in a transaction on one connection, the one way this
    /// store writes: keys reserved first, outside the transaction (one
    /// `UPDATE … RETURNING` per table, so no writer waits on another's save
    /// for them); the changes `body` gives recorded in the change history,
    /// numbered last (the lock that orders the numbers is held for the
    /// commit alone), and sent to other processes as notifications inside
    /// the transaction (delivered at commit, never for a rollback);
    /// committed when it returns, rolled back when it throws (its error
    /// rethrown as it is).
    package func inWriteTransaction<T>(reservingKeys counts: [Int: Int64],
                                       _ body: (any SQLExecutor) throws -> (T, StoreChanges)) throws -> T {
        let notifications = { (changes: StoreChanges) in self.notifications(for: changes) }
        let channel = self.channel
        var reserved: [Int: Int64] = [:]
        if !counts.isEmpty {
            try pool.withConnection { connection in
                for (root, count) in counts.sorted(by: { $0.key < $1.key }) {
                    reserved[root] = try PostgresExecutor.reserve(count, root: model.entities[root], schema: schema,
                                                                  on: connection, logger: logger)
                }
            }
        }
        return try pool.withConnection { connection in
            let executor = PostgresExecutor(connection: connection, logger: logger, reserved: reserved, store: self)
            try executor.run("BEGIN", [])
            do {
                let (result, changes) = try body(executor)
                try recordInHistory(changes, executor)
                for payload in notifications(changes) {
                    let notify = ServerCatalog.notify(channel, payload)
                    try executor.run(notify.sql, notify.bindings)
                }
                try executor.run("COMMIT", [])
                return result
            } catch {
                _ = try? executor.run("ROLLBACK", [])
                throw error
            }
        }
    }

    package func storeError(_ error: any Error) -> StoreError {
        if let error = error as? PostgresDatabaseError, error.code == PostgresDatabaseError.SQLState.numericValueOutOfRange {
            // numeric_value_out_of_range: an integer expression passed 64 bits.
            return .validation([SaveValidationFailure(object: "<batch update>", property: "",
                                                      reason: "an integer expression passed the 64-bit integers (an integer overflow)")])
        }
        if let error = error as? PostgresDatabaseError, error.code == PostgresDatabaseError.SQLState.uniqueViolation {
            // Sift's tables have no unique constraint but their primary keys: the store has data already.
            let entity = model.entities.first { $0.superentity == nil && schema.table($0) == error.table }
            return .keysInUse(path: location, entity: entity?.name)
        }
        return Self.storeError(error)
    }

    package func didImport() throws(StoreError) {
        // The planner's statistics, for the rows just loaded.
        _ = try run(ServerCatalog.analyze(schema.tableNames))
    }
}
#endif
