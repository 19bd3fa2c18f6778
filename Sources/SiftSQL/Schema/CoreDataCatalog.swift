// Stage 6b (SQL lowering): the tables every store Core Data writes has —
// `Z_METADATA` (a binary property list), `Z_PRIMARYKEY` (the entities, their
// numbers and the keys handed out) and `Z_MODELCACHE` (the compiled model,
// compressed) — and the statements that read them, for opening and
// inspecting a store Apple's framework wrote. An entity's rows live in its
// root entity's table, `Z` and the upper-cased name, with `Z_ENT` telling
// which entity each row is.

import SiftModel

/// Core Data's catalog tables, and the statements that read them.
package enum CoreDataCatalog {
    /// The tables whose presence says a store is Core Data's.
    package static let requiredTables = ["Z_METADATA", "Z_PRIMARYKEY"]
    /// The table holding the compiled model, in newer stores.
    package static let modelCacheTable = "Z_MODELCACHE"
    /// The functions Core Data's derived-attribute triggers call. They exist
    /// only in Core Data's own connection; another writer registers them, with
    /// no effect, or a write to such a table fails.
    package static let triggerFunctions = ["NSCoreDataDATriggerUpdatedAffectedObjectValue",
                                          "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue"]
    /// The tables of persistent history tracking, whose rows Core Data
    /// writes with every save.
    package static let historyTables = ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"]

    /// The metadata: one row, the property list then the store's UUID.
    ///
    /// - Parameter dialect: The dialect the statement is written in.
    /// - Returns: The SELECT.
    package static func selectMetadata(in dialect: any SQLDialect) -> SQLQuery {
        SQLRenderer.render(.select(SQLSelect([.column("m", "Z_PLIST", nullable: true), .column("m", "Z_UUID", nullable: true)],
                                             from: .table("Z_METADATA", alias: "m"))),
                           in: dialect)
    }

    /// The model cache: one row, one column.
    ///
    /// - Parameter dialect: The dialect the statement is written in.
    /// - Returns: The SELECT.
    package static func selectModelCache(in dialect: any SQLDialect) -> SQLQuery {
        SQLRenderer.render(.select(SQLSelect([.column("c", "Z_CONTENT", nullable: true)],
                                             from: .table(modelCacheTable, alias: "c"))), in: dialect)
    }

    /// Every entity of the store: its number, name, parent's number (0 for
    /// a root) and the largest key handed out (on roots), by number.
    ///
    /// - Parameter dialect: The dialect the statement is written in.
    /// - Returns: The SELECT.
    package static func selectEntities(in dialect: any SQLDialect) -> SQLQuery {
        let columns = ["Z_ENT", "Z_NAME", "Z_SUPER", "Z_MAX"].map { SQLExpression.column("k", $0, nullable: true) }
        return SQLRenderer.render(.select(SQLSelect(columns, from: .table("Z_PRIMARYKEY", alias: "k"),
                                                    orderBy: [SQLOrdering(columns[0])])), in: dialect)
    }

    /// Every table of an SQLite store and its columns, in order: a row per
    /// column, the table's name then the column's (for matching a store's
    /// join tables to the model, `SQLSchema.matchingJoinTables(_:)`).
    package static let sqliteTableColumns =
        #"SELECT m."name", p."name" FROM "sqlite_master" AS m JOIN pragma_table_info(m."name") AS p ORDER BY m."name", p."cid""#

    /// The tables of `rows` (of `sqliteTableColumns`) that may be join
    /// tables (`Z_` and a name, the catalog's own aside), with their columns.
    ///
    /// - Parameter rows: Pairs of a table's name and a column's, as text.
    /// - Returns: Each table's columns, in order, by table name.
    package static func joinTableCandidates(_ rows: [(table: String, column: String)]) -> [String: [String]] {
        var tables: [String: [String]] = [:]
        for row in rows where row.table.hasPrefix("Z_") && !requiredTables.contains(row.table) && row.table != modelCacheTable {
            tables[row.table, default: []].append(row.column)
        }
        return tables
    }

    /// The table of a root entity's rows (and its subentities').
    ///
    /// - Parameter entityName: The root entity's name.
    /// - Returns: `Z` and the name, upper-cased.
    package static func table(ofRoot entityName: String) -> String { "Z" + entityName.uppercased() }

    /// How many rows of the root table are objects of entity number `entityNumber` itself.
    ///
    /// - Parameters:
    ///   - entityName: The root entity's name.
    ///   - entityNumber: The number of the entity whose rows are counted.
    ///   - dialect: The dialect the statement is written in.
    /// - Returns: A SELECT of one row, the count.
    package static func countRows(ofRoot entityName: String, entityNumber: Int, in dialect: any SQLDialect) -> SQLQuery {
        SQLRenderer.render(.select(SQLSelect(
            [.aggregate(.count)], from: .table(table(ofRoot: entityName), alias: "t"),
            where: [.equal(.column("t", "Z_ENT", nullable: true), .value(.integer(Int64(entityNumber))))])), in: dialect)
    }
}
