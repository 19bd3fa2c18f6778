// SQL stage: the statements of a PostgreSQL store's change history
// (`Z_SIFTCHANGE`): one row per write transaction that changed rows, with
// its number, when, its author, and the rows it inserted, updated and deleted
// (JSON: entity numbers and keys, pairwise). The number is handed out at the
// end of the transaction under a lock named after the store's schema, held
// until the commit, so numbers follow commit order: a reader that has seen
// number n has seen every number below it. Any process on the store reads
// what came after a number (a change feed that outlives its server, shared
// by every server on the store). PostgreSQL's spelling; every value bound.

import Foundation
import SiftModel

/// The statements of a PostgreSQL store's change history.
package enum ChangeHistoryStatements {
    static let dialect = PostgreSQLDialect()

    /// The table's name.
    package static let table = "Z_SIFTCHANGE"

    /// How many transactions the history keeps (the newest).
    package static let length: Int64 = 100_000

    /// Every how many transactions the oldest are deleted.
    package static let trimmingInterval: Int64 = 1_000

    private static func q(_ name: String) -> String { dialect.quote(name) }

    /// Creates the table, unless it is there.
    ///
    /// - Returns: The CREATE TABLE.
    package static func createTable() -> SQLQuery {
        SQLQuery(sql: "CREATE TABLE IF NOT EXISTS \(q(table)) (\(q("ZNUMBER")) BIGINT PRIMARY KEY, "
                    + "\(q("ZTIMESTAMP")) DOUBLE PRECISION NOT NULL, \(q("ZAUTHOR")) TEXT, \(q("ZCHANGES")) TEXT NOT NULL)")
    }

    /// Waits for, then holds until the transaction ends, the lock that
    /// orders the history's numbers: one writer at a time numbers its
    /// transaction and commits.
    ///
    /// - Parameter schemaName: The name of the store's schema.
    /// - Returns: A SELECT that takes a transaction-level advisory lock.
    package static func lock(_ schemaName: String) -> SQLQuery {
        SQLQuery(sql: "SELECT pg_advisory_xact_lock(hashtext($1))", bindings: [.text("sift changes " + schemaName)])
    }

    /// Records a transaction under the number after the largest; returns
    /// that number (one row, one column). Run under ``lock(_:)``.
    ///
    /// - Parameters:
    ///   - timestamp: When, in seconds since 2001.
    ///   - author: Who wrote it (the transaction's author), if known.
    ///   - changes: The rows it changed, as JSON.
    /// - Returns: The INSERT … RETURNING.
    package static func insert(timestamp: Double, author: String?, changes: String) -> SQLQuery {
        SQLQuery(sql: "INSERT INTO \(q(table)) (\(q("ZNUMBER")), \(q("ZTIMESTAMP")), \(q("ZAUTHOR")), \(q("ZCHANGES"))) "
                    + "SELECT COALESCE(MAX(\(q("ZNUMBER"))), 0) + 1, $1, $2, $3 FROM \(q(table)) RETURNING \(q("ZNUMBER"))",
                 bindings: [.real(timestamp), author.map(SQLValue.text) ?? .null, .text(changes)])
    }

    /// Deletes the transactions numbered at most `number`.
    ///
    /// - Parameter number: The last number deleted.
    /// - Returns: The DELETE.
    package static func delete(through number: Int64) -> SQLQuery {
        SQLQuery(sql: "DELETE FROM \(q(table)) WHERE \(q("ZNUMBER")) <= $1", bindings: [.integer(number)])
    }

    /// The oldest and the newest number kept: one row, NULLs when there is none.
    ///
    /// - Returns: The SELECT.
    package static func selectBounds() -> SQLQuery {
        SQLQuery(sql: "SELECT MIN(\(q("ZNUMBER"))), MAX(\(q("ZNUMBER"))) FROM \(q(table))")
    }

    /// The transactions after `number`, oldest first, at most `limit`:
    /// number, author, changes.
    ///
    /// - Parameters:
    ///   - number: The last number already read.
    ///   - limit: The most rows.
    /// - Returns: The SELECT.
    package static func select(after number: Int64, limit: Int) -> SQLQuery {
        SQLQuery(sql: "SELECT \(q("ZNUMBER")), \(q("ZAUTHOR")), \(q("ZCHANGES")) FROM \(q(table)) WHERE \(q("ZNUMBER")) > $1 "
                    + "ORDER BY \(q("ZNUMBER")) LIMIT $2",
                 bindings: [.integer(number), .integer(Int64(max(limit, 0)))])
    }
}
