// Store stage: reading Core Data's persistent history — what each save of
// an application inserted, updated and deleted, and since when — from a
// store written with history tracking (by Core Data, or by Sift: see
// `HistoryRecorder`), and deleting what is no longer needed.

import Foundation
import Sift

/// A place in a store's history: the last transaction read. Pass it back
/// to read only what came after (Core Data's `NSPersistentHistoryToken`).
public struct PersistentHistoryToken: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The UUID of the store the token belongs to.
    public var storeUUID: String
    /// The number of the last transaction read.
    public var transactionNumber: Int64

    /// A token for transaction `transactionNumber` of the store `storeUUID`.
    ///
    /// - Parameters:
    ///   - storeUUID: The UUID of the store the token belongs to.
    ///   - transactionNumber: The number of the last transaction read.
    public init(storeUUID: String, transactionNumber: Int64) {
        self.storeUUID = storeUUID
        self.transactionNumber = transactionNumber
    }

    public var description: String { "\(storeUUID)/\(transactionNumber)" }
}

/// One save recorded in a store's history (Core Data's `NSPersistentHistoryTransaction`).
///
/// ```swift
/// var token: PersistentHistoryToken?                     // kept between runs: it is Codable
/// for transaction in try store.persistentHistory(after: token) {
///     print(transaction.transactionNumber, transaction.author ?? "no author", transaction.changes.count, "changes")
///     for change in transaction.changes where change.changeType == .update {
///         print("  update \(change.entityName) \(change.primaryKey):", change.updatedProperties ?? [])
///     }
///     token = transaction.token                           // the next call reads only what came after
/// }
/// ```
public struct PersistentHistoryTransaction: Hashable, Sendable {
    /// The transaction's number: increasing with each save.
    public let transactionNumber: Int64
    /// When the save happened.
    public let timestamp: Date
    /// The author the saving context named (`transactionAuthor`), if any.
    public let author: String?
    /// The bundle identifier of the application that saved.
    public let bundleID: String?
    /// The name of the context that saved, if it had one.
    public let contextName: String?
    /// The process that saved.
    public let processID: String?
    /// What the save changed, in the order recorded.
    public let changes: [PersistentHistoryChange]
    /// The token that reads what came after this transaction.
    public let token: PersistentHistoryToken
}

/// One object a save changed (Core Data's `NSPersistentHistoryChange`).
public struct PersistentHistoryChange: Hashable, Sendable {
    /// What happened to the object.
    public enum ChangeType: Int, Hashable, Sendable, CustomStringConvertible {
        /// The save inserted the object.
        case insert = 0
        /// The save changed the object's values or relationships.
        case update = 1
        /// The save deleted the object.
        case delete = 2

        public var description: String {
            switch self {
            case .insert: "insert"
            case .update: "update"
            case .delete: "delete"
            }
        }
    }

    /// The change's number in the store's history.
    public let changeID: Int64
    /// Insert, update or delete.
    public let changeType: ChangeType
    /// The changed object's entity, as the store names it.
    public let entityName: String
    /// The changed object's primary key.
    public let primaryKey: Int64
    /// The changed object's ID, when the store's model has its entity. A
    /// deleted object's ID names a row that is gone.
    public let objectID: ObjectID?
    /// For an update, the properties it changed, read from the recorded
    /// bitmap; nil when there is none or it does not fit the model. Core
    /// Data does not document the bitmap: Sift reads bit n (the highest
    /// bit of the first byte first) as the n-th of the entity's attributes
    /// and relationships sorted by name.
    public let updatedProperties: [String]?
    /// For a delete, the values the model preserves in history
    /// (`preservesValueInHistoryOnDeletion`), by attribute name: the
    /// attributes sorted by name, one recorded column each.
    public let tombstone: [String: PredicateValue]
}

extension SQLiteStore {
    /// Whether the store holds Core Data's persistent history.
    public var tracksPersistentHistory: Bool {
        let tables = (try? withConnection { try $0.query(SQLiteDialect().catalogQuery) }) ?? []
        let names = Set(tables.compactMap { row -> String? in if case .text(let name) = row[1] { name } else { nil } })
        return CoreDataCatalog.historyTables.contains(where: names.contains)
    }

    /// The token of the last transaction in the store's history; nil when
    /// there is none.
    ///
    /// - Returns: A token for the store's last transaction; nil when its history holds none.
    /// - Throws: `StoreError.invalidRequest` when the store keeps no persistent history; the store's error (such
    ///   as `.sqlite` or `.locked`) when reading it fails.
    public func currentPersistentHistoryToken() throws(StoreError) -> PersistentHistoryToken? {
        try requireHistory()
        let rows = try historyQuery(HistoryStatements.selectLastTransaction(in: SQLiteDialect()))
        guard case .integer(let number)? = rows.first?.first else { return nil }
        return PersistentHistoryToken(storeUUID: try identifier, transactionNumber: number)
    }

    /// The transactions after `token` (all of them when nil), and at or
    /// after `date` when given, oldest first, each with its changes.
    /// A token of another store, or a store without history, is an error.
    ///
    /// - Parameters:
    ///   - token: The last transaction already read; nil to read from the first.
    ///   - date: When given, only transactions at or after it are read.
    ///   - number: When given, only transactions numbered below it are read (a page of older history).
    /// - Returns: The transactions, oldest first, each with its changes; empty when there are none.
    /// - Throws: `StoreError.invalidRequest` when the store keeps no persistent history or `token` is of another
    ///   store; the store's error (such as `.sqlite` or `.locked`) when reading it fails.
    public func persistentHistory(after token: PersistentHistoryToken? = nil, since date: Date? = nil,
                                  before number: Int64? = nil) throws(StoreError) -> [PersistentHistoryTransaction]
    {
        try requireHistory()
        let dialect = SQLiteDialect()
        let uuid = try identifier
        if let token, token.storeUUID != uuid {
            throw .invalidRequest(.historyTokenOfAnotherStore(token: token.storeUUID, store: uuid, path: path))
        }
        var strings: [Int64: String] = [:]
        for row in try historyQuery(HistoryStatements.selectStrings(in: dialect)) {
            if case .integer(let key) = row[0], case .text(let text) = row[1] { strings[key] = text }
        }
        let transactionRows = try historyQuery(HistoryStatements.selectTransactions(
            after: token?.transactionNumber ?? Int64.min, since: date?.timeIntervalSinceReferenceDate, before: number, in: dialect))
        guard !transactionRows.isEmpty else { return [] }
        let numbers = transactionRows.compactMap { row -> Int64? in if case .integer(let n) = row[0] { n } else { nil } }
        // The store's own names of its entities (history may name entities the model no longer has).
        var entityNames: [Int64: String] = [:]
        for row in try historyQuery(CoreDataCatalog.selectEntities(in: dialect)) {
            if case .integer(let number) = row[0], case .text(let name) = row[1] { entityNames[number] = name }
        }
        let columns = try historyQuery(HistoryStatements.changeColumns).compactMap { row -> String? in
            if case .text(let name) = row[0] { name } else { nil }
        }
        let tombstones = HistoryStatements.tombstoneColumns(columns)
        var changes: [Int64: [PersistentHistoryChange]] = [:]
        for row in try historyQuery(HistoryStatements.selectChanges(transactions: numbers, tombstones: tombstones, in: dialect)) {
            guard case .integer(let changeID) = row[0], case .integer(let transaction) = row[1],
                  case .integer(let type) = row[2], let changeType = PersistentHistoryChange.ChangeType(rawValue: Int(type)),
                  case .integer(let entityNumber) = row[3], case .integer(let key) = row[4] else { continue }
            let entity = schema.entity(number: entityNumber)
            var updated: [String]?
            if case .blob(let bitmap) = row[5], let entity { updated = Self.updatedProperties(bitmap, of: entity) }
            var tombstone: [String: PredicateValue] = [:]
            if let entity {
                let preserved = HistoryProperties.preserved(entity).map(\.name)
                for (index, name) in preserved.enumerated() where index < tombstones.count {
                    let value = PredicateValue(row[6 + index])
                    if value != .null { tombstone[name] = value }
                }
            }
            changes[transaction, default: []].append(PersistentHistoryChange(
                changeID: changeID, changeType: changeType, entityName: entity?.name ?? entityNames[entityNumber] ?? "entity \(entityNumber)",
                primaryKey: key, objectID: entity.map { ObjectID(entity: $0, primaryKey: key) }, updatedProperties: updated,
                tombstone: tombstone))
        }
        return transactionRows.compactMap { row -> PersistentHistoryTransaction? in
            guard case .integer(let number) = row[0] else { return nil }
            let seconds: Double = switch row[1] {
            case .real(let d): d
            case .integer(let i): Double(i)
            default: 0
            }
            // Each name: interned, or inline.
            func name(_ index: Int) -> String? {
                if case .integer(let key) = row[2 + index], let text = strings[key] { return text }
                if case .text(let text) = row[6 + index] { return text }
                return nil
            }
            return PersistentHistoryTransaction(
                transactionNumber: number, timestamp: Date(timeIntervalSinceReferenceDate: seconds), author: name(0),
                bundleID: name(1), contextName: name(2), processID: name(3), changes: changes[number] ?? [],
                token: PersistentHistoryToken(storeUUID: uuid, transactionNumber: number))
        }
    }

    /// Deletes the transactions before `token`'s (numbered below it), with
    /// their changes: what every reader has read. The token's own
    /// transaction stays. (Core Data's `deleteHistory(before:)`.)
    ///
    /// - Parameter token: A token of this store's history.
    /// - Returns: How many transactions were deleted.
    /// - Throws: `StoreError.invalidRequest` when the store keeps no persistent history or `token` is of another
    ///   store; `.cannotWrite` when the store refuses saves; the store's error (such as `.readOnly` or `.locked`)
    ///   when writing fails.
    @discardableResult
    public func deleteHistory(before token: PersistentHistoryToken) throws(StoreError) -> Int {
        try deleteHistory(before: token, progress: nil)
    }

    /// Deletes the transactions before `token`'s, with their changes, as
    /// ``deleteHistory(before:)-(PersistentHistoryToken)`` does, telling
    /// `progress` how many are deleted: they are deleted a batch at a time
    /// (about a hundredth of them, at most ten thousand), in one database
    /// transaction.
    ///
    /// - Parameters:
    ///   - token: A token of this store's history.
    ///   - progress: Told how many transactions are deleted (``WorkProgress/Step/deletingHistory``); nil for
    ///     no reports (the transactions are then deleted in one statement).
    /// - Returns: How many transactions were deleted.
    /// - Throws: `StoreError.invalidRequest` when the store keeps no persistent history or `token` is of another
    ///   store; `.cannotWrite` when the store refuses saves; the store's error (such as `.readOnly` or `.locked`)
    ///   when writing fails.
    @discardableResult
    public func deleteHistory(before token: PersistentHistoryToken, progress: ((WorkProgress) -> Void)?) throws(StoreError) -> Int {
        try requireHistory()
        let uuid = try identifier
        guard token.storeUUID == uuid else {
            throw .invalidRequest(.historyTokenOfAnotherStore(token: token.storeUUID, store: uuid, path: path))
        }
        return try deleteTransactions(through: token.transactionNumber &- 1, progress: progress)
    }

    /// Deletes the transactions made before `date`, with their changes.
    /// (Core Data's `deleteHistory(before:)` with a date.)
    ///
    /// - Parameter date: Transactions with an earlier timestamp are deleted.
    /// - Returns: How many transactions were deleted.
    /// - Throws: `StoreError.invalidRequest` when the store keeps no persistent history; `.cannotWrite` when
    ///   the store refuses saves; the store's error (such as `.readOnly` or `.locked`) when writing fails.
    @discardableResult
    public func deleteHistory(before date: Date) throws(StoreError) -> Int {
        try deleteHistory(before: date, progress: nil)
    }

    /// Deletes the transactions made before `date`, with their changes, as
    /// ``deleteHistory(before:)-(Date)`` does, telling `progress` how many
    /// are deleted, a batch at a time, in one database transaction.
    ///
    /// - Parameters:
    ///   - date: Transactions with an earlier timestamp are deleted.
    ///   - progress: Told how many transactions are deleted (``WorkProgress/Step/deletingHistory``); nil for
    ///     no reports (the transactions are then deleted in one statement).
    /// - Returns: How many transactions were deleted.
    /// - Throws: `StoreError.invalidRequest` when the store keeps no persistent history; `.cannotWrite` when
    ///   the store refuses saves; the store's error (such as `.readOnly` or `.locked`) when writing fails.
    @discardableResult
    public func deleteHistory(before date: Date, progress: ((WorkProgress) -> Void)?) throws(StoreError) -> Int {
        try requireHistory()
        let last = try historyQuery(HistoryStatements.selectLastTransaction(before: date.timeIntervalSinceReferenceDate))
        guard case .integer(let number)? = last.first?.first else {
            ProgressReporter(progress, .deletingHistory, total: 0).finish()
            return 0
        }
        return try deleteTransactions(through: number, progress: progress)
    }

    /// Deletes the transactions numbered at most `number`, and their
    /// changes, in one transaction: with `progress`, a batch of transactions
    /// at a time (their count is read first), reporting after each batch.
    private func deleteTransactions(through number: Int64, progress: ((WorkProgress) -> Void)?) throws(StoreError) -> Int {
        func delete<E: SQLExecutor>(_ executor: E) throws -> Int {
            guard let progress else {
                var deleted = 0
                for query in HistoryStatements.deleteTransactions(through: number) {
                    deleted = try executor.run(try executor.prepare(query.sql), query.bindings)
                }
                return deleted
            }
            let count = HistoryStatements.countTransactions(through: number)
            let total: Int = if case .integer(let n)? = try executor.rows(count.sql, count.bindings).first?.first { Int(n) } else { 0 }
            var reporter = ProgressReporter(progress, .deletingHistory, total: total, interval: 1)
            // About a hundredth of them a batch, so the reports come regularly whatever the count.
            let batch = min(10_000, max(1, (total + 99) / 100))
            var deleted = 0
            while deleted < total {
                // The last transaction of the next batch: the batch-th left, or the last of all.
                let end = HistoryStatements.selectTransactionNumber(through: number, offset: batch - 1)
                let upper: Int64 = if case .integer(let n)? = try executor.rows(end.sql, end.bindings).first?.first { n } else { number }
                var removed = 0
                for query in HistoryStatements.deleteTransactions(through: upper) {
                    removed = try executor.run(try executor.prepare(query.sql), query.bindings)
                }
                guard removed > 0 else { break }
                deleted += removed
                reporter.advance(by: removed)
            }
            reporter.finish()
            return deleted
        }
        return try writeTransaction { executor in (try delete(executor), StoreChanges()) }
    }

    /// The names an update's bitmap marks: bit n, highest bit first, is the
    /// n-th property by name; nil when a bit is past the last property.
    static func updatedProperties(_ bitmap: Data, of entity: Entity) -> [String]? {
        HistoryProperties(entity).names(in: bitmap)
    }

    private func requireHistory() throws(StoreError) {
        guard tracksPersistentHistory else {
            throw .invalidRequest(.noPersistentHistory(path: path))
        }
    }

    /// The store's UUID, as Core Data records it (`NSPersistentStore.identifier`):
    /// it names the store in history tokens and object URIs.
    ///
    /// - Throws: `StoreError` when the store's metadata cannot be read.
    public var identifier: String {
        get throws(StoreError) {
            let row = try historyQuery(CoreDataCatalog.selectMetadata(in: SQLiteDialect())).first
            if case .text(let uuid)? = row?.dropFirst().first { return uuid }
            if case .blob(let data)? = row?.first, let uuid = StoreMetadata.read(data)?["NSStoreUUID"] as? String { return uuid }
            return ""
        }
    }

    private func historyQuery(_ query: SQLQuery) throws(StoreError) -> [[SQLValue]] {
        do {
            return try withConnection { try $0.query(query) }
        } catch {
            throw StoreError(error, path: path)
        }
    }
}

extension PredicateValue {
    /// A column's value as it is, with no attribute type to read it by.
    init(_ value: SQLValue) {
        switch value {
        case .null, .array: self = .null
        case .integer(let i): self = .int(i)
        case .real(let d): self = .double(d)
        case .text(let s): self = .string(s)
        case .blob(let d): self = .data(d)
        }
    }
}
