// Stage 6b (SQL lowering): the statements that read and write Core Data's
// persistent history — `ATRANSACTION` (one row per save: its number, time and who
// made it, the names interned in `ATRANSACTIONSTRING`) and `ACHANGE` (one
// row per object a save inserted, updated or deleted: the entity's number,
// the row's key, a bitmap of the properties an update changed, and for a
// delete the values the model preserves, in `ZTOMBSTONE<n>` columns).

/// The statements that read a store's persistent history.
package enum HistoryStatements {
    /// The columns of the change table (the tombstone columns vary with the model).
    package static var changeColumns: SQLQuery {
        SQLQuery(sql: #"SELECT "name" FROM pragma_table_info('ACHANGE')"#)
    }

    /// The tombstone columns among `columns`, in their order (`ZTOMBSTONE0`, `ZTOMBSTONE1`, …).
    ///
    /// - Parameter columns: The change table's column names (`changeColumns`).
    /// - Returns: Those that start with `ZTOMBSTONE`, by their number.
    package static func tombstoneColumns(_ columns: [String]) -> [String] {
        columns.filter { $0.hasPrefix("ZTOMBSTONE") }
            .sorted { Int($0.dropFirst("ZTOMBSTONE".count)) ?? 0 < Int($1.dropFirst("ZTOMBSTONE".count)) ?? 0 }
    }

    /// Every interned string: key, then text.
    ///
    /// - Parameter dialect: The dialect the statement is written in.
    /// - Returns: The SELECT.
    package static func selectStrings(in dialect: any SQLDialect) -> SQLQuery {
        SQLRenderer.render(.select(SQLSelect([.column("s", "Z_PK", nullable: false), .column("s", "ZNAME", nullable: true)],
                                             from: .table("ATRANSACTIONSTRING", alias: "s"))), in: dialect)
    }

    /// The transactions after transaction number `after` and at or after
    /// `since` (seconds since 2001), in order: number, timestamp, then the
    /// interned keys and inline texts of author, bundle ID, context name and
    /// process ID.
    ///
    /// - Parameters:
    ///   - after: The number of the last transaction already read; those
    ///     after it are selected.
    ///   - since: The earliest timestamp, in seconds since 2001, or nil for
    ///     any.
    ///   - dialect: The dialect the statement is written in.
    /// - Returns: The SELECT.
    package static func selectTransactions(after: Int64, since: Double?, before: Int64? = nil, in dialect: any SQLDialect) -> SQLQuery {
        let t = { (name: String) in SQLExpression.column("t", name, nullable: true) }
        var conditions: [SQLExpression] = [.compare(.greater, t("Z_PK"), .value(.integer(after)))]
        if let before { conditions.append(.compare(.less, t("Z_PK"), .value(.integer(before)))) }
        if let since { conditions.append(.compare(.greaterOrEqual, t("ZTIMESTAMP"), .value(.real(since)))) }
        let names = ["AUTHOR", "BUNDLEID", "CONTEXTNAME", "PROCESSID"]
        return SQLRenderer.render(.select(SQLSelect(
            [t("Z_PK"), t("ZTIMESTAMP")] + names.map { t("Z\($0)TS") } + names.map { t("Z\($0)") },
            from: .table("ATRANSACTION", alias: "t"), where: conditions, orderBy: [SQLOrdering(t("Z_PK"))])), in: dialect)
    }

    /// The largest transaction number, or nothing when there is none.
    ///
    /// - Parameter dialect: The dialect the statement is written in.
    /// - Returns: A SELECT of one row and one column, NULL when there is no
    ///   transaction.
    package static func selectLastTransaction(in dialect: any SQLDialect) -> SQLQuery {
        SQLRenderer.render(.select(SQLSelect([.aggregate(.maximum, .column("t", "Z_PK", nullable: false))],
                                             from: .table("ATRANSACTION", alias: "t"))), in: dialect)
    }

    /// The smallest and the largest transaction number, in one row (NULLs
    /// when there is no transaction).
    ///
    /// - Parameter dialect: The dialect the statement is written in.
    /// - Returns: A SELECT of one row and two columns.
    package static func selectTransactionBounds(in dialect: any SQLDialect) -> SQLQuery {
        let key = SQLExpression.column("t", "Z_PK", nullable: false)
        return SQLRenderer.render(.select(SQLSelect([.aggregate(.minimum, key), .aggregate(.maximum, key)],
                                                    from: .table("ATRANSACTION", alias: "t"))), in: dialect)
    }

    /// The changes of the transactions numbered `transactions`, by
    /// transaction then change: key, transaction, type, entity number, row
    /// key, updated-properties bitmap, then the tombstone columns.
    ///
    /// - Parameters:
    ///   - transactions: The transaction numbers, bound as one array.
    ///   - tombstones: The tombstone columns to read (`tombstoneColumns(_:)`).
    ///   - dialect: The dialect the statement is written in.
    /// - Returns: The SELECT.
    package static func selectChanges(transactions: [Int64], tombstones: [String], in dialect: any SQLDialect) -> SQLQuery {
        let c = { (name: String) in SQLExpression.column("c", name, nullable: true) }
        return SQLRenderer.render(.select(SQLSelect(
            ["Z_PK", "ZTRANSACTIONID", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZCOLUMNS"].map(c) + tombstones.map(c),
            from: .table("ACHANGE", alias: "c"),
            where: [.in(c("ZTRANSACTIONID"), array: .value(.array(transactions.map(SQLValue.integer))))],
            orderBy: [SQLOrdering(c("ZTRANSACTIONID")), SQLOrdering(c("Z_PK"))])), in: dialect)
    }

    // MARK: Writing history, as Core Data lays it out

    /// The entity numbers Core Data gives its history tables in
    /// `Z_PRIMARYKEY` (past any model's): changes, transactions, strings.
    package static let changeEntity: Int64 = 16001
    package static let transactionEntity: Int64 = 16002
    package static let stringEntity: Int64 = 16003

    /// The statements that add the history tables to a store, as Core Data
    /// makes them (with `tombstones` columns of preserved values), and
    /// their rows in `Z_PRIMARYKEY`: those the store has already stay.
    ///
    /// - Parameter tombstones: How many `ZTOMBSTONE<n>` columns the change table has.
    /// - Returns: The statements, in order.
    package static func createTables(tombstones: Int) -> [String] {
        let tombstoneColumns = (0..<max(tombstones, 0)).map { ", ZTOMBSTONE\($0) BLOB" }.joined()
        return [
            "CREATE TABLE IF NOT EXISTS ACHANGE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER, "
                + "ZENTITY INTEGER, ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB\(tombstoneColumns) )",
            "CREATE TABLE IF NOT EXISTS ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, "
                + "ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, "
                + "ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB )",
            "CREATE TABLE IF NOT EXISTS ATRANSACTIONSTRING ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR )",
            "CREATE INDEX IF NOT EXISTS ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID)",
            "CREATE INDEX IF NOT EXISTS ATRANSACTION_ZAUTHORTS_INDEX ON ATRANSACTION (ZAUTHORTS)",
            "CREATE INDEX IF NOT EXISTS ATRANSACTION_ZBUNDLEIDTS_INDEX ON ATRANSACTION (ZBUNDLEIDTS)",
            "CREATE INDEX IF NOT EXISTS ATRANSACTION_ZCONTEXTNAMETS_INDEX ON ATRANSACTION (ZCONTEXTNAMETS)",
            "CREATE INDEX IF NOT EXISTS ATRANSACTION_ZPROCESSIDTS_INDEX ON ATRANSACTION (ZPROCESSIDTS)",
            "CREATE INDEX IF NOT EXISTS Z_TRANSACTION_TransactionAuthorIndex ON ATRANSACTION (ZAUTHOR COLLATE BINARY ASC)",
            "CREATE INDEX IF NOT EXISTS Z_TRANSACTION_TransactionTimestampIndex ON ATRANSACTION (ZTIMESTAMP COLLATE BINARY ASC)",
            "CREATE UNIQUE INDEX IF NOT EXISTS Z_TRANSACTIONSTRING_UNIQUE_NAME ON ATRANSACTIONSTRING (ZNAME COLLATE BINARY ASC)",
            "INSERT OR IGNORE INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES "
                + "(\(changeEntity), 'CHANGE', 0, 0), (\(transactionEntity), 'TRANSACTION', 0, 0), "
                + "(\(stringEntity), 'TRANSACTIONSTRING', 0, 0)",
        ]
    }

    /// Adds tombstone column `number` to the change table (a model that
    /// preserves more attributes than the table has columns for).
    ///
    /// - Parameter number: The column's number: `ZTOMBSTONE<number>`.
    /// - Returns: The ALTER TABLE.
    package static func addTombstoneColumn(_ number: Int) -> String {
        "ALTER TABLE ACHANGE ADD COLUMN ZTOMBSTONE\(number) BLOB"
    }

    /// The largest key handed out of a history table (`Z_MAX`) and its
    /// largest key, in one row.
    ///
    /// - Parameters:
    ///   - entity: The history table's entity number (`changeEntity`, …).
    ///   - table: Its table.
    /// - Returns: The SELECT.
    package static func selectKeyMaximum(entity: Int64, table: String) -> SQLQuery {
        SQLQuery(sql: "SELECT (SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?1), (SELECT MAX(Z_PK) FROM \(table))",
                 bindings: [.integer(entity)])
    }

    /// Records `maximum` as the largest key handed out of a history table.
    package static func updateKeyMaximum(entity: Int64, to maximum: Int64) -> SQLQuery {
        SQLQuery(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ?1 WHERE Z_ENT = ?2", bindings: [.integer(maximum), .integer(entity)])
    }

    /// The key of an interned string.
    package static let selectString = "SELECT Z_PK FROM ATRANSACTIONSTRING WHERE ZNAME = ?1"
    /// Interns a string under a key: key, text.
    package static let insertString = "INSERT INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?1, \(stringEntity), NULL, ?2)"
    /// A transaction: number, author, bundle ID, context name and process
    /// keys (interned; their inline columns stay NULL, as Core Data leaves
    /// them), timestamp.
    package static let insertTransaction = "INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZBUNDLEIDTS, "
        + "ZCONTEXTNAMETS, ZPROCESSIDTS, ZTIMESTAMP) VALUES (?1, \(transactionEntity), NULL, ?2, ?3, ?4, ?5, ?6)"

    /// A change: key, type, entity number, row key, transaction, bitmap,
    /// then `tombstones` preserved values.
    ///
    /// - Parameter tombstones: How many tombstone columns the change table has.
    /// - Returns: The INSERT.
    package static func insertChange(tombstones: Int) -> String {
        let columns = (0..<tombstones).map { ", ZTOMBSTONE\($0)" }.joined()
        let parameters = (0..<tombstones).map { ", ?\($0 + 7)" }.joined()
        return "INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS\(columns)) "
            + "VALUES (?1, \(changeEntity), NULL, ?2, ?3, ?4, ?5, ?6\(parameters))"
    }

    /// Deletes the changes, then the transactions, numbered at most `number`
    /// (the interned strings stay, as Core Data leaves them).
    ///
    /// - Parameter number: The last transaction number to delete.
    /// - Returns: The two DELETEs, in order.
    package static func deleteTransactions(through number: Int64) -> [SQLQuery] {
        [SQLQuery(sql: "DELETE FROM ACHANGE WHERE ZTRANSACTIONID <= ?1", bindings: [.integer(number)]),
         SQLQuery(sql: "DELETE FROM ATRANSACTION WHERE Z_PK <= ?1", bindings: [.integer(number)])]
    }

    /// How many transactions are numbered at most `number`: one row.
    ///
    /// - Parameter number: The last transaction number counted.
    /// - Returns: The SELECT.
    package static func countTransactions(through number: Int64) -> SQLQuery {
        SQLQuery(sql: "SELECT COUNT(*) FROM ATRANSACTION WHERE Z_PK <= ?1", bindings: [.integer(number)])
    }

    /// The number of the transaction `offset` places after the first one
    /// numbered at most `number` (in number order): one row, or none when
    /// fewer are left.
    ///
    /// - Parameters:
    ///   - number: The last transaction number considered.
    ///   - offset: How many transactions to pass over.
    /// - Returns: The SELECT.
    package static func selectTransactionNumber(through number: Int64, offset: Int) -> SQLQuery {
        SQLQuery(sql: "SELECT Z_PK FROM ATRANSACTION WHERE Z_PK <= ?1 ORDER BY Z_PK LIMIT 1 OFFSET ?2",
                 bindings: [.integer(number), .integer(Int64(offset))])
    }

    /// The number of the last transaction made before `date` (seconds since
    /// 2001): one row, NULL when there is none.
    package static func selectLastTransaction(before date: Double) -> SQLQuery {
        SQLQuery(sql: "SELECT MAX(Z_PK) FROM ATRANSACTION WHERE ZTIMESTAMP < ?1", bindings: [.real(date)])
    }

    /// The preserved columns of one row of `table`, by its key (`?1`),
    /// read before it is deleted.
    ///
    /// - Parameters:
    ///   - columns: The preserved attributes' columns, in tombstone order.
    ///   - table: The entity's table.
    /// - Returns: The SELECT.
    package static func selectTombstone(columns: [String], from table: String) -> String {
        "SELECT " + columns.map { "\"\($0)\"" }.joined(separator: ", ") + " FROM \"\(table)\" WHERE \"Z_PK\" = ?1"
    }

    // MARK: Copying history (a migration)

    /// Every column of the string table, in order.
    package static let stringColumns = ["Z_PK", "Z_ENT", "Z_OPT", "ZNAME"]
    /// Every column of the transaction table, in order.
    package static let transactionColumns = ["Z_PK", "Z_ENT", "Z_OPT", "ZAUTHORTS", "ZBUNDLEIDTS", "ZCONTEXTNAMETS", "ZPROCESSIDTS",
                                             "ZTIMESTAMP", "ZAUTHOR", "ZBUNDLEID", "ZCONTEXTNAME", "ZPROCESSID", "ZQUERYGEN"]
    /// The columns of a change a copy reads, before its tombstones: key, type, entity number, row key, transaction, bitmap.
    package static let copiedChangeColumns = ["Z_PK", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZTRANSACTIONID", "ZCOLUMNS"]

    /// Every row of a history table, by key: `columns` of `table`.
    package static func selectAll(_ columns: [String], from table: String) -> String {
        "SELECT \(columns.joined(separator: ", ")) FROM \(table) ORDER BY Z_PK"
    }

    /// A row of a history table as it was read: `columns` of `table`.
    package static func insertRow(_ columns: [String], into table: String) -> String {
        "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES ("
            + (1...max(columns.count, 1)).map { "?\($0)" }.joined(separator: ", ") + ")"
    }

    /// The largest key handed out of each history table: entity number, `Z_MAX`.
    package static let selectKeyMaxima = "SELECT Z_ENT, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT > 16000"

    /// SQLite's count of commits by other connections to the file, as this
    /// connection sees it: it changes when another connection (another
    /// process) commits, and not for this connection's own commits.
    package static let dataVersion = "PRAGMA data_version"

    /// How many of the three history tables a store has, and how many of
    /// their rows in `Z_PRIMARYKEY`: one row, two counts (3 and 3 when whole).
    package static let countHistoryTables = "SELECT (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN "
        + "('ACHANGE', 'ATRANSACTION', 'ATRANSACTIONSTRING')), (SELECT COUNT(*) FROM Z_PRIMARYKEY WHERE Z_ENT IN "
        + "(\(changeEntity), \(transactionEntity), \(stringEntity)))"
}
