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
// 8 000 bytes: a save of more than 200 rows sends several, each announced
// as it arrives.

#if PostgreSQL  // the package trait that brings postgres-nio (on by default)
import Foundation
import Logging
import PostgresNIO
import Sift
import SiftStore

/// The listening connection, stopped once.
final class LockedListener: Sendable {
    private let state = LockedState<(connection: PostgresConnection?, context: PostgresListenContext?)>((nil, nil))

    func set(_ connection: PostgresConnection, _ context: PostgresListenContext) {
        state.withLock { $0 = (connection, context) }
    }

    func stop() {
        let (connection, context) = state.withLock { state in
            defer { state = (nil, nil) }
            return state
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

    /// The payloads announcing `changes`, each under PostgreSQL's 8 000
    /// bytes: one for most saves, several for a large one.
    func notifications(for changes: StoreChanges) -> [String] {
        guard !changes.isEmpty else { return [] }
        func flat(_ ids: Set<ObjectID>) -> [Int64] {
            ids.sorted { ($0.entity, $0.primaryKey) < ($1.entity, $1.primaryKey) }.flatMap { [Int64($0.entity), $0.primaryKey] }
        }
        // 200 rows (400 numbers of at most 20 digits) per payload stay under the cap.
        let perPayload = 400
        var notifications: [ChangeNotification] = []
        var current = ChangeNotification(s: identifier)
        var numbers = 0
        for (kind, flattened) in [(0, flat(changes.inserted)), (1, flat(changes.updated)), (2, flat(changes.deleted))] {
            var rest = flattened[...]
            while !rest.isEmpty {
                let room = perPayload - numbers
                let chunk = Array(rest.prefix(room))
                rest = rest.dropFirst(chunk.count)
                switch kind {
                case 0: current.i += chunk
                case 1: current.u += chunk
                default: current.d += chunk
                }
                numbers += chunk.count
                if numbers == perPayload {
                    notifications.append(current)
                    current = ChangeNotification(s: identifier)
                    numbers = 0
                }
            }
        }
        if numbers > 0 { notifications.append(current) }
        return notifications.compactMap { try? JSONEncoder().encode($0) }.map { String(decoding: $0, as: UTF8.self) }
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
#endif
