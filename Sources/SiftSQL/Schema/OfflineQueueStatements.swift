// SQL stage: the statements of a remote store's queue of saves made offline,
// kept in its disk cache (an SQLite store in Core Data's layout, which
// ignores these tables) and written in the same transactions as the cache's
// rows: `Z_SIFTOFFLINEQUEUE` (each queued change set in order, with its
// identity and its changes as JSON), `Z_SIFTOFFLINESTATE` (the queue's
// origin and counters, by name) and `Z_SIFTOFFLINEMAP` (keys and versions
// given offline, mapped to those the server gave when it applied them).
// Names are quoted by the dialect, every value is bound.

import SiftModel
import SiftValues

/// The statements of a remote store's queue of saves made offline.
package enum OfflineQueueStatements {
    /// The queued change sets.
    package static let queue = "Z_SIFTOFFLINEQUEUE"
    /// The queue's origin and counters.
    package static let state = "Z_SIFTOFFLINESTATE"
    /// Keys and versions given offline, and those the server gave.
    package static let map = "Z_SIFTOFFLINEMAP"

    /// Creates the tables, unless they are there.
    ///
    /// - Parameter dialect: The dialect the statements are written in.
    /// - Returns: The statements, in order.
    package static func createTables(in dialect: any SQLDialect) -> [SQLQuery] {
        let q = dialect.quote
        return [
            SQLQuery(sql: "CREATE TABLE IF NOT EXISTS \(q(queue)) (\(q("ZORDER")) INTEGER PRIMARY KEY, \(q("ZORIGIN")) TEXT NOT NULL, "
                + "\(q("ZSEQUENCE")) BIGINT NOT NULL, \(q("ZCHANGES")) TEXT NOT NULL)"),
            SQLQuery(sql: "CREATE TABLE IF NOT EXISTS \(q(state)) (\(q("ZNAME")) TEXT PRIMARY KEY, \(q("ZVALUE")) TEXT NOT NULL)"),
            SQLQuery(sql: "CREATE TABLE IF NOT EXISTS \(q(map)) (\(q("ZROOT")) TEXT NOT NULL, \(q("ZKEY")) BIGINT NOT NULL, "
                + "\(q("ZLOCAL")) BIGINT NOT NULL, \(q("ZSERVER")) BIGINT NOT NULL, "
                + "PRIMARY KEY (\(q("ZROOT")), \(q("ZKEY")), \(q("ZLOCAL"))))"),
        ]
    }

    /// Queues a change set after the others.
    ///
    /// - Parameters:
    ///   - origin: Its origin.
    ///   - sequence: Its sequence number.
    ///   - changes: Its changes, as JSON text.
    ///   - dialect: The dialect the statement is written in.
    /// - Returns: The INSERT.
    package static func insertEntry(origin: String, sequence: Int64, changes: String, in dialect: any SQLDialect) -> SQLQuery {
        let q = dialect.quote
        let columns = ["ZORIGIN", "ZSEQUENCE", "ZCHANGES"].map(q).joined(separator: ", ")
        let placeholders = (1...3).map(dialect.placeholder).joined(separator: ", ")
        return SQLQuery(sql: "INSERT INTO \(q(queue)) (\(columns)) VALUES (\(placeholders))",
                        bindings: [.text(origin), .integer(sequence), .text(changes)])
    }

    /// The first queued change set: one row of (order, origin, sequence, changes), or none.
    ///
    /// - Parameter dialect: The dialect the statement is written in.
    /// - Returns: The SELECT.
    package static func selectFirstEntry(in dialect: any SQLDialect) -> SQLQuery {
        let q = dialect.quote
        let columns = ["ZORDER", "ZORIGIN", "ZSEQUENCE", "ZCHANGES"].map(q).joined(separator: ", ")
        return SQLQuery(sql: "SELECT \(columns) FROM \(q(queue)) ORDER BY \(q("ZORDER")) LIMIT 1")
    }

    /// How many change sets wait: one row of one integer.
    ///
    /// - Parameter dialect: The dialect the statement is written in.
    /// - Returns: The SELECT.
    package static func countEntries(in dialect: any SQLDialect) -> SQLQuery {
        SQLQuery(sql: "SELECT COUNT(*) FROM \(dialect.quote(queue))")
    }

    /// Gives a queued change set new changes under a new sequence number (a conflict resolved).
    ///
    /// - Parameters:
    ///   - order: Its place in the queue.
    ///   - sequence: Its new sequence number.
    ///   - changes: Its new changes, as JSON text.
    ///   - dialect: The dialect the statement is written in.
    /// - Returns: The UPDATE.
    package static func updateEntry(order: Int64, sequence: Int64, changes: String, in dialect: any SQLDialect) -> SQLQuery {
        let q = dialect.quote
        return SQLQuery(sql: "UPDATE \(q(queue)) SET \(q("ZSEQUENCE")) = \(dialect.placeholder(1)), \(q("ZCHANGES")) = \(dialect.placeholder(2)) "
                            + "WHERE \(q("ZORDER")) = \(dialect.placeholder(3))",
                        bindings: [.integer(sequence), .text(changes), .integer(order)])
    }

    /// Takes a change set out of the queue.
    ///
    /// - Parameters:
    ///   - order: Its place in the queue.
    ///   - dialect: The dialect the statement is written in.
    /// - Returns: The DELETE.
    package static func deleteEntry(order: Int64, in dialect: any SQLDialect) -> SQLQuery {
        let q = dialect.quote
        return SQLQuery(sql: "DELETE FROM \(q(queue)) WHERE \(q("ZORDER")) = \(dialect.placeholder(1))", bindings: [.integer(order)])
    }

    /// Every value of the queue's state: rows of (name, value).
    ///
    /// - Parameter dialect: The dialect the statement is written in.
    /// - Returns: The SELECT.
    package static func selectState(in dialect: any SQLDialect) -> SQLQuery {
        let q = dialect.quote
        return SQLQuery(sql: "SELECT \(q("ZNAME")), \(q("ZVALUE")) FROM \(q(state))")
    }

    /// Sets one value of the queue's state.
    ///
    /// - Parameters:
    ///   - name: The value's name.
    ///   - value: The value.
    ///   - dialect: The dialect the statements are written in.
    /// - Returns: The DELETE of the old value and the INSERT of the new, in order.
    package static func setState(_ name: String, to value: String, in dialect: any SQLDialect) -> [SQLQuery] {
        let q = dialect.quote
        return [
            SQLQuery(sql: "DELETE FROM \(q(state)) WHERE \(q("ZNAME")) = \(dialect.placeholder(1))", bindings: [.text(name)]),
            SQLQuery(sql: "INSERT INTO \(q(state)) (\(q("ZNAME")), \(q("ZVALUE"))) VALUES (\(dialect.placeholder(1)), \(dialect.placeholder(2)))",
                     bindings: [.text(name), .text(value)]),
        ]
    }

    /// Records what the server made of a key or a version given offline: a
    /// key (`key` 0) of a root entity, or a version of the row with `key`.
    ///
    /// - Parameters:
    ///   - root: The root entity's name.
    ///   - key: The row's key for a version; 0 for a key.
    ///   - local: The key or version given offline.
    ///   - server: The one the server gave.
    ///   - dialect: The dialect the statement is written in.
    /// - Returns: The INSERT.
    package static func insertMapping(root: String, key: Int64, local: Int64, server: Int64, in dialect: any SQLDialect) -> SQLQuery {
        let q = dialect.quote
        let columns = ["ZROOT", "ZKEY", "ZLOCAL", "ZSERVER"].map(q).joined(separator: ", ")
        let placeholders = (1...4).map(dialect.placeholder).joined(separator: ", ")
        return SQLQuery(sql: "INSERT INTO \(q(map)) (\(columns)) VALUES (\(placeholders))",
                        bindings: [.text(root), .integer(key), .integer(local), .integer(server)])
    }

    /// Every mapping: rows of (root, key, local, server).
    ///
    /// - Parameter dialect: The dialect the statement is written in.
    /// - Returns: The SELECT.
    package static func selectMappings(in dialect: any SQLDialect) -> SQLQuery {
        let q = dialect.quote
        let columns = ["ZROOT", "ZKEY", "ZLOCAL", "ZSERVER"].map(q).joined(separator: ", ")
        return SQLQuery(sql: "SELECT \(columns) FROM \(q(map))")
    }

    /// Forgets every mapping (the queue is empty: nothing refers to them).
    ///
    /// - Parameter dialect: The dialect the statement is written in.
    /// - Returns: The DELETE.
    package static func deleteMappings(in dialect: any SQLDialect) -> SQLQuery {
        SQLQuery(sql: "DELETE FROM \(dialect.quote(map))")
    }
}

extension SQLSchema {
    /// Points a to-one relationship of the rows of `entity` that point at
    /// the row `old` at the row `new` instead (a row given another key),
    /// their versions left as they are.
    ///
    /// - Parameters:
    ///   - relationship: The to-one relationship.
    ///   - entity: The entity whose objects have it.
    ///   - old: The key the destination had.
    ///   - new: The key it has now.
    /// - Returns: The UPDATE.
    package func retargetToOne(_ relationship: Relationship, of entity: Entity, from old: Int64, to new: Int64) -> SQLQuery {
        let foreignKey = foreignKey(relationship, of: entity)
        return render(.update(SQLUpdate(
            table: table(entity),
            assignments: [(foreignKey, .value(.integer(new)))],
            conditions: [.equal(.column("", foreignKey, nullable: true), .value(.integer(old)))])))
    }
}
