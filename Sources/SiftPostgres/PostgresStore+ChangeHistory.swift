// PostgreSQL: the store's change history (`Z_SIFTCHANGE`, made with the
// store). Every write transaction that changes rows — a save, a batch change,
// through any store on the schema, in any process — records what it changed
// in the same transaction, at its end, under a number handed out under a lock
// held until the commit: numbers follow commit order, so a reader that has
// read up to n has missed nothing below n. The history keeps the newest
// `ChangeHistoryStatements.length` transactions. It is what makes a served
// store's change feed durable and shared: any server on the schema answers
// "the changes after n" from it, and a restarted server numbers on.
//
// The changes are JSON: per kind, the entity's number (`Z_ENT`) and the key,
// pairwise, as the notifications carry them (those with model indices).

#if PostgreSQL  // the package trait that brings postgres-nio (on by default)
import Foundation
import Sift
import SiftStore

/// The rows one transaction changed, as the history records them.
struct RecordedChanges: Codable {
    /// Inserted, updated and deleted rows: entity number, key, entity number, key…
    var i: [Int64] = []
    var u: [Int64] = []
    var d: [Int64] = []
}

extension PostgresStore: ChangeHistoryStore {
    /// Records `changes` in the history, inside the write transaction of
    /// `executor` (nothing for no change): the transaction's number is the
    /// next one, and the lock that orders numbers is held until it ends.
    func recordInHistory(_ changes: StoreChanges, _ executor: PostgresExecutor) throws {
        guard !changes.isEmpty else { return }
        func flat(_ ids: Set<ObjectID>) -> [Int64] {
            ids.sorted { ($0.entity, $0.primaryKey) < ($1.entity, $1.primaryKey) }
                .flatMap { [Int64(schema.entityNumber(model.entities[$0.entity])), $0.primaryKey] }
        }
        let recorded = RecordedChanges(i: flat(changes.inserted), u: flat(changes.updated), d: flat(changes.deleted))
        let text = String(decoding: try JSONEncoder().encode(recorded), as: UTF8.self)
        let lock = ChangeHistoryStatements.lock(schemaName)
        _ = try executor.rows(lock.sql, lock.bindings)
        let insert = ChangeHistoryStatements.insert(timestamp: Date().timeIntervalSinceReferenceDate,
                                                    author: TransactionNames.current.author, changes: text)
        guard case .integer(let number)? = try executor.rows(insert.sql, insert.bindings).first?.first else { return }
        if number % ChangeHistoryStatements.trimmingInterval == 0, number > ChangeHistoryStatements.length {
            let trim = ChangeHistoryStatements.delete(through: number - ChangeHistoryStatements.length)
            try executor.run(trim.sql, trim.bindings)
        }
    }

    /// The store's UUID (its metadata's): every store on the schema shares
    /// it, and a store made again in the schema has a new one.
    package func changeHistoryIdentity() throws(StoreError) -> String? {
        guard case .text(let uuid)? = try run(CoreDataCatalog.selectMetadata(in: schema.dialect)).first?.dropFirst().first,
              !uuid.isEmpty else { return nil }
        return uuid
    }

    package func changeHistoryBounds() throws(StoreError) -> (oldest: Int64?, newest: Int64?) {
        let row = try run(ChangeHistoryStatements.selectBounds()).first ?? []
        func number(_ index: Int) -> Int64? {
            guard index < row.count, case .integer(let value) = row[index] else { return nil }
            return value
        }
        return (number(0), number(1))
    }

    package func changeHistory(after number: Int64, limit: Int) throws(StoreError) -> [ChangeHistoryEntry] {
        try run(ChangeHistoryStatements.select(after: number, limit: max(limit, 1))).compactMap { row in
            guard row.count == 3, case .integer(let number) = row[0], case .text(let text) = row[2],
                  let recorded = try? JSONDecoder().decode(RecordedChanges.self, from: Data(text.utf8)) else { return nil }
            func ids(_ numbers: [Int64]) -> Set<ObjectID> {
                var result = Set<ObjectID>()
                for pair in stride(from: 0, to: numbers.count - 1, by: 2) {
                    guard let entity = schema.entity(number: numbers[pair]) else { continue }
                    result.insert(ObjectID(entity: entity, primaryKey: numbers[pair + 1]))
                }
                return result
            }
            let author: String? = if case .text(let name) = row[1] { name } else { nil }
            return ChangeHistoryEntry(number: number, changes: StoreChanges(inserted: ids(recorded.i), updated: ids(recorded.u),
                                                                            deleted: ids(recorded.d)),
                                      author: author)
        }
    }
}
#endif
