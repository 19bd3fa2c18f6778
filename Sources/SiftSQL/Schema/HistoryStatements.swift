// Stage 6b (SQL lowering): the statements that read Core Data's persistent
// history — `ATRANSACTION` (one row per save: its number, time and who
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
    package static func selectTransactions(after: Int64, since: Double?, in dialect: any SQLDialect) -> SQLQuery {
        let t = { (name: String) in SQLExpression.column("t", name, nullable: true) }
        var conditions: [SQLExpression] = [.compare(.greater, t("Z_PK"), .value(.integer(after)))]
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
}
