// PostgreSQL: saves made through other stores on the same tables (other
// processes, other machines) reach this store's observers. Each save sends
// what it changed on the schema's channel with `pg_notify`, inside its
// transaction; PostgreSQL delivers the notifications at commit, in commit
// order, to every connection that listens. A store listens on a connection
// of its own: a notification from another store drops the rows it names
// from the row cache (the next read sees them new) and is announced to
// this store's observers, as the store's own saves are — a context merges
// it with `mergeChanges(from:)` under its merge policy.
//
// A payload is JSON: the sending store's identifier and, per kind, entity
// numbers in the model and keys, pairwise. PostgreSQL caps a payload at
// 8 000 bytes: a large save sends several.

import Foundation
import Logging
import PostgresNIO
import Sift
import SiftStore

/// The listening connection, stopped once.
final class LockedListener: @unchecked Sendable {
    private let lock = NSLock()
    private var connection: PostgresConnection?
    private var context: PostgresListenContext?

    func set(_ connection: PostgresConnection, _ context: PostgresListenContext) {
        lock.withLock {
            self.connection = connection
            self.context = context
        }
    }

    func stop() {
        let (connection, context) = lock.withLock { () -> (PostgresConnection?, PostgresListenContext?) in
            defer {
                self.connection = nil
                self.context = nil
            }
            return (self.connection, self.context)
        }
        context?.stop()
        if let connection { try? connection.close().wait() }
    }
}

/// The store a listener tells, without keeping it alive.
final class WeakStore: @unchecked Sendable {
    weak var store: PostgresStore?
    init(_ store: PostgresStore) { self.store = store }
}

/// One notification's content.
struct ChangeNotification: Codable {
    /// The store that saved.
    var s: String
    /// Inserted, updated and deleted rows: entity index, key, entity index, key…
    var i: [Int64] = []
    var u: [Int64] = []
    var d: [Int64] = []
}

extension PostgresStore {
    /// The channel of the store's schema.
    var channel: String { String(("sift:" + schemaName).utf8.prefix(63)) ?? "sift" }

    /// The payloads announcing `changes`, each under PostgreSQL's 8 000 bytes.
    func notifications(for changes: StoreChanges) -> [String] {
        guard !changes.isEmpty else { return [] }
        func flat(_ ids: Set<ObjectID>) -> [Int64] {
            ids.sorted { ($0.entity, $0.primaryKey) < ($1.entity, $1.primaryKey) }.flatMap { [Int64($0.entity), $0.primaryKey] }
        }
        // 200 rows (400 numbers of at most 20 digits) per payload stay under the cap.
        let perPayload = 400
        var payloads: [String] = []
        for (kind, numbers) in [("i", flat(changes.inserted)), ("u", flat(changes.updated)), ("d", flat(changes.deleted))] {
            for start in stride(from: 0, to: numbers.count, by: perPayload) {
                var notification = ChangeNotification(s: identifier)
                let chunk = Array(numbers[start..<min(start + perPayload, numbers.count)])
                switch kind {
                case "i": notification.i = chunk
                case "u": notification.u = chunk
                default: notification.d = chunk
                }
                if let data = try? JSONEncoder().encode(notification) { payloads.append(String(decoding: data, as: UTF8.self)) }
            }
        }
        return payloads
    }

    /// Opens the listening connection.
    func startListening() throws {
        let connection = try pool.connect()
        let queue = DispatchQueue(label: "sift.postgres.notifications")
        let store = WeakStore(self)
        let context = connection.addListener(channel: channel) { _, message in
            let payload = message.payload
            queue.async { store.store?.received(payload) }
        }
        do {
            let listen = ServerCatalog.listen(channel)
            _ = try connection.run(listen.sql, listen.bindings, logger: logger)
        } catch {
            context.stop()
            try? connection.close().wait()
            throw error
        }
        listener.set(connection, context)
    }

    /// A notification: another store's save, dropped from the row cache and announced.
    func received(_ payload: String) {
        guard let notification = try? JSONDecoder().decode(ChangeNotification.self, from: Data(payload.utf8)),
              notification.s != identifier else { return }
        func ids(_ numbers: [Int64]) -> Set<ObjectID> {
            var result = Set<ObjectID>()
            for pair in stride(from: 0, to: numbers.count - 1, by: 2) {
                guard let index = Int(exactly: numbers[pair]), model.entities.indices.contains(index) else { continue }
                result.insert(ObjectID(entity: model.entities[index], primaryKey: numbers[pair + 1]))
            }
            return result
        }
        let changes = StoreChanges(inserted: ids(notification.i), updated: ids(notification.u), deleted: ids(notification.d))
        rowCache.remove(changes.updated.union(changes.deleted))
        announce(changes)
    }
}
