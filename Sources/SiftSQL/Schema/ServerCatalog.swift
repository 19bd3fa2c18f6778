// SQL stage: the statements a store on a database server runs besides its
// tables' — a schema of its own, a lock while a store is made, whether a
// store is there, notifications of saves, plans, and removal. PostgreSQL's
// spelling; every name is quoted by the dialect and every value bound.

import Foundation
import SiftModel

/// Statements about a store on a server, rather than about its rows.
package enum ServerCatalog {
    static let dialect = PostgreSQLDialect()

    /// Creates the schema a store lives in, unless it is there.
    ///
    /// - Parameter name: The schema's name.
    /// - Returns: `CREATE SCHEMA IF NOT EXISTS` with the name quoted.
    package static func createSchema(_ name: String) -> SQLQuery {
        SQLQuery(sql: "CREATE SCHEMA IF NOT EXISTS " + dialect.quote(name), bindings: [])
    }

    /// Waits for, then holds until the transaction ends, the lock named after
    /// a store's schema: two processes making one store take turns.
    ///
    /// - Parameter schemaName: The name of the store's schema.
    /// - Returns: A SELECT that takes a transaction-level advisory lock.
    package static func lockStore(_ schemaName: String) -> SQLQuery {
        SQLQuery(sql: "SELECT pg_advisory_xact_lock(hashtext($1))", bindings: [.text("sift store " + schemaName)])
    }

    /// One row, TRUE when the schema holds a store (its metadata table).
    ///
    /// - Parameter schemaName: The name of the schema.
    /// - Returns: A SELECT of one row, one boolean.
    package static func storeExists(_ schemaName: String) -> SQLQuery {
        SQLQuery(sql: "SELECT to_regclass($1) IS NOT NULL",
                 bindings: [.text(dialect.quote(schemaName) + "." + dialect.quote("Z_METADATA"))])
    }

    /// Sends a notification on a channel (delivered when the transaction commits).
    ///
    /// - Parameters:
    ///   - channel: The channel's name.
    ///   - payload: The text sent.
    /// - Returns: A SELECT of `pg_notify`, the channel and payload bound.
    package static func notify(_ channel: String, _ payload: String) -> SQLQuery {
        SQLQuery(sql: "SELECT pg_notify($1, $2)", bindings: [.text(channel), .text(payload)])
    }

    /// Listens on a channel.
    ///
    /// - Parameter channel: The channel's name.
    /// - Returns: `LISTEN` with the name quoted.
    package static func listen(_ channel: String) -> SQLQuery {
        SQLQuery(sql: "LISTEN " + dialect.quote(channel), bindings: [])
    }

    /// Makes the schema the connection's search path.
    ///
    /// - Parameter name: The schema's name.
    /// - Returns: `SET search_path TO` with the name quoted.
    package static func useSchema(_ name: String) -> SQLQuery {
        SQLQuery(sql: "SET search_path TO " + dialect.quote(name), bindings: [])
    }

    /// The server's plan of a query, one line per row.
    ///
    /// - Parameter query: The query planned.
    /// - Returns: `EXPLAIN` and the query's text, with its bindings.
    package static func explain(_ query: SQLQuery) -> SQLQuery {
        SQLQuery(sql: "EXPLAIN " + query.sql, bindings: query.bindings)
    }

    /// Gathers the planner's statistics for tables.
    ///
    /// - Parameter tables: The tables' names.
    /// - Returns: `ANALYZE` with the names quoted.
    package static func analyze(_ tables: [String]) -> SQLQuery {
        SQLQuery(sql: "ANALYZE " + tables.map(dialect.quote).joined(separator: ", "), bindings: [])
    }

    /// Removes a schema and everything in it.
    ///
    /// - Parameter name: The schema's name.
    /// - Returns: `DROP SCHEMA IF EXISTS … CASCADE` with the name quoted.
    package static func dropSchema(_ name: String) -> SQLQuery {
        SQLQuery(sql: "DROP SCHEMA IF EXISTS " + dialect.quote(name) + " CASCADE", bindings: [])
    }

    /// Removes a table.
    ///
    /// - Parameter name: The table's name.
    /// - Returns: `DROP TABLE IF EXISTS … CASCADE` with the name quoted.
    package static func dropTable(_ name: String) -> SQLQuery {
        SQLQuery(sql: "DROP TABLE IF EXISTS " + dialect.quote(name) + " CASCADE", bindings: [])
    }
}
