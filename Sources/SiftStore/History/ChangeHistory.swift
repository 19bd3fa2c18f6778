// Store stage: a store's write transactions, numbered in the database itself
// in commit order, read back by number — what a change feed needs to outlive
// the process that serves it and to be shared by every process on the store.
// An SQLite store that keeps Core Data's persistent history reads it here
// (the transaction's number, its changes, its author); a PostgreSQL store
// keeps a change history of its own (SiftPostgres). A store without history
// has none: a reader of its changes keeps them in memory.

import Foundation
import Sift

/// One numbered write transaction of a store's change history.
package struct ChangeHistoryEntry: Sendable, Hashable {
    /// Its number: larger for each later commit.
    package var number: Int64
    /// What it inserted, updated and deleted.
    package var changes: StoreChanges
    /// Who wrote it (the transaction's author), if it was named.
    package var author: String?

    package init(number: Int64, changes: StoreChanges, author: String?) {
        self.number = number
        self.changes = changes
        self.author = author
    }
}

/// A store whose write transactions are numbered, in commit order, in the
/// database: any process on the store can read what came after a number.
package protocol ChangeHistoryStore: PersistentStore {
    /// The history's name, the same for every process on the store and new
    /// when the store is made again (numbers of another history mean
    /// nothing here); nil when the store keeps no history.
    ///
    /// - Throws: `StoreError` when the store cannot be read.
    func changeHistoryIdentity() throws(StoreError) -> String?

    /// The oldest and the newest number the history holds; nils when it holds none.
    ///
    /// - Throws: `StoreError` when the store cannot be read.
    func changeHistoryBounds() throws(StoreError) -> (oldest: Int64?, newest: Int64?)

    /// The transactions numbered after `number`, oldest first, at most `limit` of them.
    ///
    /// - Throws: `StoreError` when the store cannot be read.
    func changeHistory(after number: Int64, limit: Int) throws(StoreError) -> [ChangeHistoryEntry]
}

extension StoreChanges {
    /// Adds one recorded change, as it sums with those before it: an insert
    /// then an update is an insert, an insert then a delete is nothing.
    package mutating func record(_ change: PersistentHistoryChange) {
        guard let id = change.objectID else { return }
        switch change.changeType {
        case .insert:
            inserted.insert(id)
        case .update:
            if !inserted.contains(id) { updated.insert(id) }
        case .delete:
            if inserted.remove(id) == nil { deleted.insert(id) }
            updated.remove(id)
        }
    }
}

extension SQLiteStore: ChangeHistoryStore {
    /// The store's UUID, when it keeps persistent history.
    package func changeHistoryIdentity() throws(StoreError) -> String? {
        tracksPersistentHistory ? try identifier : nil
    }

    package func changeHistoryBounds() throws(StoreError) -> (oldest: Int64?, newest: Int64?) {
        let query = HistoryStatements.selectTransactionBounds(in: SQLiteDialect())
        let row: [SQLValue]
        do {
            row = try withConnection { try $0.query(query) }.first ?? []
        } catch {
            throw StoreError(error, path: path)
        }
        func number(_ index: Int) -> Int64? {
            guard index < row.count, case .integer(let value) = row[index] else { return nil }
            return value
        }
        return (number(0), number(1))
    }

    /// The transactions of the store's persistent history after `number`:
    /// those numbered up to `number + limit` (a transaction's number is one
    /// more than the last's, but where history was deleted).
    package func changeHistory(after number: Int64, limit: Int) throws(StoreError) -> [ChangeHistoryEntry] {
        let (end, overflow) = number.addingReportingOverflow(Int64(max(limit, 1)) + 1)
        let uuid = try identifier
        let transactions = try persistentHistory(after: PersistentHistoryToken(storeUUID: uuid, transactionNumber: number),
                                                 before: overflow ? nil : end)
        return transactions.prefix(max(limit, 1)).map { transaction in
            var changes = StoreChanges()
            for change in transaction.changes { changes.record(change) }
            return ChangeHistoryEntry(number: transaction.transactionNumber, changes: changes, author: transaction.author)
        }
    }
}
