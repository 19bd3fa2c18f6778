// SQL stage: the statements a store on a database server runs besides its
// tables' — a schema of its own, a lock while a store is made, whether a
// store is there, notifications of saves, plans, and removal. PostgreSQL's
// spelling; every name is quoted by the dialect and every value bound.

import Foundation
import SiftModel

/// Statements about a store on a server, rather than about its rows.
public enum ServerCatalog {
    static let dialect = PostgreSQLDialect()

    /// Creates the schema a store lives in, unless it is there.
    public static func createSchema(_ name: String) -> SQLQuery {
        SQLQuery(sql: "CREATE SCHEMA IF NOT EXISTS " + dialect.quote(name), bindings: [])
    }

    /// Waits for, then holds until the transaction ends, the lock named after
    /// a store's schema: two processes making one store take turns.
    public static func lockStore(_ schemaName: String) -> SQLQuery {
        SQLQuery(sql: "SELECT pg_advisory_xact_lock(hashtext($1))", bindings: [.text("sift store " + schemaName)])
    }

    /// One row, TRUE when the schema holds a store (its metadata table).
    public static func storeExists(_ schemaName: String) -> SQLQuery {
        SQLQuery(sql: "SELECT to_regclass($1) IS NOT NULL",
                 bindings: [.text(dialect.quote(schemaName) + "." + dialect.quote("Z_METADATA"))])
    }

    /// Sends a notification on a channel (delivered when the transaction commits).
    public static func notify(_ channel: String, _ payload: String) -> SQLQuery {
        SQLQuery(sql: "SELECT pg_notify($1, $2)", bindings: [.text(channel), .text(payload)])
    }

    /// Listens on a channel.
    public static func listen(_ channel: String) -> SQLQuery {
        SQLQuery(sql: "LISTEN " + dialect.quote(channel), bindings: [])
    }

    /// Makes the schema the connection's search path.
    public static func useSchema(_ name: String) -> SQLQuery {
        SQLQuery(sql: "SET search_path TO " + dialect.quote(name), bindings: [])
    }

    /// The server's plan of a query, one line per row.
    public static func explain(_ query: SQLQuery) -> SQLQuery {
        SQLQuery(sql: "EXPLAIN " + query.sql, bindings: query.bindings)
    }

    /// Gathers the planner's statistics for tables.
    public static func analyze(_ tables: [String]) -> SQLQuery {
        SQLQuery(sql: "ANALYZE " + tables.map(dialect.quote).joined(separator: ", "), bindings: [])
    }

    /// Removes a schema and everything in it.
    public static func dropSchema(_ name: String) -> SQLQuery {
        SQLQuery(sql: "DROP SCHEMA IF EXISTS " + dialect.quote(name) + " CASCADE", bindings: [])
    }

    /// Removes a table.
    public static func dropTable(_ name: String) -> SQLQuery {
        SQLQuery(sql: "DROP TABLE IF EXISTS " + dialect.quote(name) + " CASCADE", bindings: [])
    }
}
