// The remote store's saves made offline. With a disk cache, a save made while
// the server is out of reach (or while earlier such saves still wait) is kept
// in the cache file: its change set in a queue table, written in the same
// SQLite transaction as the cache's rows it changes, so the store's own
// fetches see it and a process killed outright loses nothing it was told was
// saved. Objects it inserts get keys of the cache's own (from 2^62 up, far
// above any server's), and rows it changes versions of the cache's own.
//
// When the server answers again, the queue is sent first, in order, one change
// set at a time, each under the identity (origin, sequence) it was given when
// queued, so the server applies each once however often it is sent (a client
// killed after the server wrote one sends it again and gets the same answer).
// Before it is sent, a change set's keys and versions of the cache's own are
// written as the server's, from a map filled as earlier ones were applied (kept
// in the cache file too). A conflict is resolved with the merge policy of the
// context that saved (recorded with the change set): the resolved change set
// replaces it in the queue under a new sequence number before it is sent. One
// the policy does not resolve (`.error`), or that the server refuses, is set
// aside, nothing of it written: `offlineSaveRefused` hears of it, rows it
// changed are read from the server again, and the queue goes on with the next.
// A later change set that refers to an object the refused one inserted is
// refused too; one that changes a row the refused one changed conflicts (its
// expected version never existed on the server) and follows its own policy.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import Sift
import SiftHTTPAPI
import SiftStore

/// A save made offline that the server did not apply once it was sent: nothing of it was written,
/// and the queue went on with the saves after it.
///
/// ```swift
/// var configuration = RemoteStoreConfiguration()
/// configuration.cacheURL = cacheURL
/// configuration.offlineSaveRefused = { refused in
///     if case .conflicts(let conflicts) = refused.error { print(conflicts) }   // merge policy .error
/// }
/// ```
public struct RefusedOfflineSave: Sendable, CustomStringConvertible {
    /// The change set's origin, with ``sequence`` its identity on the server.
    public var origin: String
    /// The change set's sequence number.
    public var sequence: Int64
    /// Why: `.conflicts` with the rows other clients changed since they were read (the saving context's merge
    /// policy was `.error`, or conflicts kept coming), `.objectNotFound` for an object a refused save inserted,
    /// or the server's refusal (`.validation`, `.readOnly`, …).
    public var error: StoreError

    public var description: String { "the save made offline \(origin) #\(sequence) was not applied: \(error)" }
}

extension MergePolicy {
    /// The policy's name in a queued change set.
    var queuedName: String {
        switch self {
        case .error: "error"
        case .storeTrump: "storeTrump"
        case .objectTrump: "objectTrump"
        case .overwrite: "overwrite"
        case .rollback: "rollback"
        }
    }

    /// The policy a queued change set names.
    init?(queuedName: String) {
        guard let policy = [MergePolicy.error, .storeTrump, .objectTrump, .overwrite, .rollback].first(where: { $0.queuedName == queuedName })
        else { return nil }
        self = policy
    }
}

/// A save made offline as the disk cache keeps it (as JSON): its change set with the keys and versions
/// the cache gave, the saving context's merge policy, and what the policy needs (the properties changed,
/// the values read).
struct QueuedSave: Codable, Sendable {
    /// An object the change set refers to: a key, or an insert of the change set.
    struct Target: Codable, Sendable {
        var key: Int64?
        var inserted: Int64?
    }
    struct Insert: Codable, Sendable {
        var temporaryID: Int64
        /// The key the cache gave (the temporary ID itself for a positive one: a row written again).
        var key: Int64
        var entity: String
        var values: Components.Schemas.Values
        var toOne: [String: Target]
    }
    struct Update: Codable, Sendable {
        var key: Int64
        var entity: String
        var expectedVersion: Int64
        /// The version the cache gave the row.
        var version: Int64
        var values: Components.Schemas.Values
        var toOne: [String: Target]
        var changedAttributes: [String]
        var changedToOne: [String]
        /// The attribute values as read (from the cache), for `.storeTrump`.
        var read: Components.Schemas.Values?
    }
    struct Delete: Codable, Sendable {
        var key: Int64
        var entity: String
        var expectedVersion: Int64?
    }
    struct Link: Codable, Sendable {
        var owner: Target
        var entity: String
        var relationship: String
        var added: [Target]
        var removed: [Int64]
    }
    struct Kept: Codable, Sendable {
        var key: Int64
        var entity: String
    }

    var policy: String
    /// Whether its keys and versions are the server's already (a change set a merge policy resolved).
    var translated = false
    var inserts: [Insert] = []
    var updates: [Update] = []
    var deletes: [Delete] = []
    var links: [Link] = []
    var kept: [Kept] = []

    init(policy: MergePolicy) {
        self.policy = policy.queuedName
    }

    static func values(_ wire: Components.Schemas.Values) throws(StoreError) -> [String: PredicateValue] {
        do {
            return try WireValue.values(wire)
        } catch {
            throw .unexpected("a save kept offline cannot be read: \(error)")
        }
    }

    /// The change set, as a backend's save takes it.
    func backendChanges() throws(StoreError) -> BackendChanges<Int64> {
        func object(_ target: Target) -> BackendObject<Int64> { target.inserted.map { .inserted($0) } ?? .existing(target.key ?? 0) }
        var changes = BackendChanges<Int64>()
        changes.mergePolicy = MergePolicy(queuedName: policy) ?? .error
        for insert in inserts {
            changes.inserts.append(.init(temporaryID: insert.temporaryID, entityName: insert.entity, values: try Self.values(insert.values),
                                         toOne: insert.toOne.mapValues(object)))
        }
        for update in updates {
            changes.updates.append(.init(reference: update.key, entityName: update.entity, expectedVersion: update.expectedVersion,
                                         values: try Self.values(update.values), toOne: update.toOne.mapValues(object),
                                         changedAttributes: update.changedAttributes, changedToOne: update.changedToOne))
        }
        changes.deletes = deletes.map { .init(reference: $0.key, entityName: $0.entity, expectedVersion: $0.expectedVersion) }
        changes.links = links.map {
            .init(owner: object($0.owner), entityName: $0.entity, relationship: $0.relationship, added: $0.added.map(object), removed: $0.removed)
        }
        changes.kept = kept.map { .init(reference: $0.key, entityName: $0.entity) }
        return changes
    }
}

/// Runs one statement in a write transaction.
private func run<E: SQLExecutor>(_ query: SQLQuery, on executor: E) throws {
    try executor.run(try executor.prepare(query.sql), query.bindings)
}

/// The queue's tables in the disk cache, and what it holds in memory.
final class OfflineQueue: Sendable {
    /// The first key the cache gives an object inserted offline: far above any key a server gives.
    static let firstLocalKey: Int64 = 1 << 62
    /// How many times a queued change set is sent when conflicts keep appearing.
    static let maximumAttempts = 8

    /// A queued change set.
    struct Entry {
        var order: Int64
        var origin: String
        var sequence: Int64
        var save: QueuedSave
    }

    struct State {
        var nextSequence: Int64
        var nextLocalKey: Int64
        var count: Int
        /// Keys given offline and the server's, by root entity name (0: its save was refused).
        var keys: [String: [Int64: Int64]]
        /// Versions given offline and the server's, by root entity name and the server's key (0: refused).
        var versions: [String: [Int64: [Int64: Int64]]]
        /// Keys given offline in this run and the server's, by root entity name (for fetch arguments).
        var renamed: [String: [Int64: Int64]] = [:]
        /// Rows refused saves changed, by entity name: read from the server again once it answers.
        var stale: [String: Set<Int64>] = [:]
    }

    let cache: SQLiteStore
    /// The origin of the change sets queued here (the identity's first half; kept in the cache file).
    let origin: String
    let state: LockedState<State>
    private var dialect: any SQLDialect { cache.schema.dialect }
    private var model: DataModel { cache.model }

    /// Opens the queue in `cache`, making its tables when it has none.
    init(cache: SQLiteStore) throws(StoreError) {
        self.cache = cache
        let dialect = cache.schema.dialect
        try cache.writeTransaction { executor -> ((), StoreChanges) in
            for statement in OfflineQueueStatements.createTables(in: dialect) { try run(statement, on: executor) }
            return ((), StoreChanges())
        }
        var named: [String: String] = [:]
        for row in try cache.fetchValues(OfflineQueueStatements.selectState(in: dialect), types: [.string, .string]) {
            if case .string(let name) = row[0], case .string(let value) = row[1] { named[name] = value }
        }
        if let origin = named["origin"] {
            self.origin = origin
        } else {
            origin = UUID().uuidString
            let origin = self.origin
            try cache.writeTransaction { executor -> ((), StoreChanges) in
                for statement in OfflineQueueStatements.setState("origin", to: origin, in: dialect) { try run(statement, on: executor) }
                return ((), StoreChanges())
            }
        }
        var keys: [String: [Int64: Int64]] = [:]
        var versions: [String: [Int64: [Int64: Int64]]] = [:]
        for row in try cache.fetchValues(OfflineQueueStatements.selectMappings(in: dialect), types: [.string, .integer64, .integer64, .integer64]) {
            guard case .string(let root) = row[0], case .int(let key) = row[1], case .int(let local) = row[2], case .int(let server) = row[3]
            else { continue }
            if key == 0 { keys[root, default: [:]][local] = server } else { versions[root, default: [:]][key, default: [:]][local] = server }
        }
        let count = try cache.fetchValues(OfflineQueueStatements.countEntries(in: dialect), types: [.integer64]).first?.first
        state = LockedState(State(nextSequence: named["sequence"].flatMap { Int64($0) } ?? 1,
                                  nextLocalKey: named["key"].flatMap { Int64($0) } ?? Self.firstLocalKey,
                                  count: { if case .int(let n)? = count { Int(n) } else { 0 } }(), keys: keys, versions: versions))
    }

    /// How many change sets wait.
    var count: Int { state.withLock { $0.count } }

    /// The first change set waiting, if any.
    func first() throws(StoreError) -> Entry? {
        let rows = try cache.fetchValues(OfflineQueueStatements.selectFirstEntry(in: dialect), types: [.integer64, .string, .integer64, .string])
        guard let row = rows.first, case .int(let order) = row[0], case .string(let origin) = row[1], case .int(let sequence) = row[2],
              case .string(let text) = row[3] else { return nil }
        do {
            return Entry(order: order, origin: origin, sequence: sequence, save: try JSONDecoder().decode(QueuedSave.self, from: Data(text.utf8)))
        } catch {
            // Set aside as refused by the caller: an empty change set under its identity, with the error.
            throw .unexpected("the save made offline \(origin) #\(sequence) cannot be read from the disk cache (order \(order)): \(error)")
        }
    }

    static func text(_ save: QueuedSave) throws(StoreError) -> String {
        do {
            return String(decoding: try JSONEncoder().encode(save), as: UTF8.self)
        } catch {
            throw .unexpected("a save cannot be kept offline: \(error)")
        }
    }

    /// Writes rows to the cache with more statements in the same transaction.
    func write(_ nodes: [RowNode], deleting deleted: [ObjectID], _ statements: [SQLQuery]) throws(StoreError) {
        try cache.mirror(nodes, deleting: deleted) { executor in
            for statement in statements { try run(statement, on: executor) }
        }
    }

    /// The statements that queue a change set (and count its sequence number and the keys it took).
    func queueing(_ text: String, origin: String, sequence: Int64, nextSequence: Int64?, nextLocalKey: Int64) -> [SQLQuery] {
        var statements = [OfflineQueueStatements.insertEntry(origin: origin, sequence: sequence, changes: text, in: dialect)]
        if let nextSequence { statements += OfflineQueueStatements.setState("sequence", to: String(nextSequence), in: dialect) }
        statements += OfflineQueueStatements.setState("key", to: String(nextLocalKey), in: dialect)
        return statements
    }

    /// Replaces a queued change set with its resolution, under a new sequence number, in the transaction that
    /// writes the rows the resolution gives the cache.
    ///
    /// - Returns: The new sequence number.
    func replace(_ order: Int64, with save: QueuedSave, mirroring nodes: [RowNode], deleting deleted: [ObjectID]) throws(StoreError) -> Int64 {
        let text = try Self.text(save)
        return try state.withLock { state throws(StoreError) -> Int64 in
            let sequence = state.nextSequence
            try write(nodes, deleting: deleted, [OfflineQueueStatements.updateEntry(order: order, sequence: sequence, changes: text, in: dialect)]
                      + OfflineQueueStatements.setState("sequence", to: String(sequence + 1), in: dialect))
            state.nextSequence = sequence + 1
            return sequence
        }
    }

    /// The statements that take a change set out of the queue and record what the server made of its keys
    /// and versions; the mappings go when the queue is empty.
    func removing(_ order: Int64, keys: [(root: String, local: Int64, server: Int64)],
                  versions: [(root: String, key: Int64, local: Int64, server: Int64)], last: Bool) -> [SQLQuery] {
        var statements = [OfflineQueueStatements.deleteEntry(order: order, in: dialect)]
        if last {
            statements.append(OfflineQueueStatements.deleteMappings(in: dialect))
        } else {
            for key in keys { statements.append(OfflineQueueStatements.insertMapping(root: key.root, key: 0, local: key.local, server: key.server, in: dialect)) }
            for version in versions {
                statements.append(OfflineQueueStatements.insertMapping(root: version.root, key: version.key, local: version.local,
                                                                       server: version.server, in: dialect))
            }
        }
        return statements
    }

    /// Records a change set gone from the queue, in memory.
    func removed(keys: [(root: String, local: Int64, server: Int64)], versions: [(root: String, key: Int64, local: Int64, server: Int64)],
                 in state: inout State) {
        state.count -= 1
        if state.count <= 0 {
            state.count = 0
            state.keys = [:]
            state.versions = [:]
        } else {
            for key in keys { state.keys[key.root, default: [:]][key.local] = key.server }
            for version in versions { state.versions[version.root, default: [:]][version.key, default: [:]][version.local] = version.server }
        }
        for key in keys where key.server != 0 { state.renamed[key.root, default: [:]][key.local] = key.server }
    }

    /// The server's key for a key of `entityName`; nil for a key given offline whose save was refused or never sent.
    static func serverKey(_ key: Int64, root: String, _ state: State) -> Int64? {
        if let server = state.keys[root]?[key] { return server == 0 ? nil : server }
        return key < firstLocalKey ? key : nil
    }

    /// A change set with the server's keys and versions for those given offline.
    ///
    /// - Throws: `StoreError.objectNotFound` for an object a refused save inserted.
    func translated(_ save: QueuedSave) throws(StoreError) -> QueuedSave {
        let model = self.model
        return try state.withLock { state throws(StoreError) -> QueuedSave in
            func root(_ entityName: String) -> String { model.entity(named: entityName).map { model.root(of: $0).name } ?? entityName }
            func key(_ key: Int64, _ entityName: String) throws(StoreError) -> Int64 {
                guard let server = Self.serverKey(key, root: root(entityName), state) else {
                    throw .objectNotFound(ObjectReference(entity: entityName, id: key))
                }
                return server
            }
            func version(_ version: Int64, key: Int64, _ entityName: String) -> Int64 {
                state.versions[root(entityName)]?[key]?[version] ?? version
            }
            func destination(_ entityName: String, _ relationship: String) -> String {
                model.entity(named: entityName)?.relationship(named: relationship)?.destination ?? entityName
            }
            func target(_ target: QueuedSave.Target, _ entityName: String) throws(StoreError) -> QueuedSave.Target {
                guard let existing = target.key else { return target }
                return QueuedSave.Target(key: try key(existing, entityName))
            }
            func toOne(_ named: [String: QueuedSave.Target], of entityName: String) throws(StoreError) -> [String: QueuedSave.Target] {
                var result: [String: QueuedSave.Target] = [:]
                for (name, value) in named { result[name] = try target(value, destination(entityName, name)) }
                return result
            }
            var result = save
            result.translated = true
            for index in result.inserts.indices {
                result.inserts[index].toOne = try toOne(save.inserts[index].toOne, of: save.inserts[index].entity)
            }
            for index in result.updates.indices {
                let update = save.updates[index]
                let server = try key(update.key, update.entity)
                result.updates[index].key = server
                result.updates[index].expectedVersion = version(update.expectedVersion, key: server, update.entity)
                result.updates[index].toOne = try toOne(update.toOne, of: update.entity)
            }
            for index in result.deletes.indices {
                let delete = save.deletes[index]
                let server = try key(delete.key, delete.entity)
                result.deletes[index].key = server
                result.deletes[index].expectedVersion = delete.expectedVersion.map { version($0, key: server, delete.entity) }
            }
            for index in result.links.indices {
                let link = save.links[index]
                let members = destination(link.entity, link.relationship)
                result.links[index].owner = try target(link.owner, link.entity)
                var added: [QueuedSave.Target] = []
                for member in link.added { added.append(try target(member, members)) }
                result.links[index].added = added
                var removed: [Int64] = []
                for member in link.removed { removed.append(try key(member, members)) }
                result.links[index].removed = removed
            }
            for index in result.kept.indices { result.kept[index].key = try key(save.kept[index].key, save.kept[index].entity) }
            return result
        }
    }

    /// A fetch's format with the server's keys for objects inserted offline in this run.
    func serverForm(_ format: CanonicalFormat) -> CanonicalFormat {
        let renamed = state.withLock { $0.renamed }
        guard !renamed.isEmpty else { return format }
        let model = self.model
        func server(_ value: PredicateValue) -> PredicateValue {
            switch value {
            case .object(let reference):
                guard let entity = model.entity(named: reference.entity),
                      let key = renamed[model.root(of: entity).name]?[reference.id] else { return value }
                return .object(ObjectReference(entity: reference.entity, id: key))
            case .array(let values):
                return .array(values.map(server))
            default:
                return value
            }
        }
        var format = format
        format.arguments = format.arguments.map(server)
        return format
    }
}

// MARK: Queueing and sending

extension RemoteBackend {
    /// Keeps a save in the disk cache's queue: its rows written to the cache and the change set queued, in
    /// one transaction.
    ///
    /// - Parameters:
    ///   - changes: The change set.
    ///   - queue: The queue.
    ///   - identity: The identity it was sent under already (its answer never came); nil for a new one.
    /// - Returns: The keys and versions the cache gave.
    /// - Throws: `StoreError`: the cache's error, nothing kept.
    func enqueue(_ changes: BackendChanges<Int64>, in queue: OfflineQueue,
                 identity: (origin: String, sequence: Int64)?) throws(StoreError) -> BackendSaveOutcome<Int64> {
        let cache = queue.cache
        let outcome = try queue.state.withLock { state throws(StoreError) -> BackendSaveOutcome<Int64> in
            var save = QueuedSave(policy: changes.mergePolicy)
            var nextKey = state.nextLocalKey
            var localKeys: [Int64: Int64] = [:]
            for insert in changes.inserts {
                if insert.temporaryID > 0 {
                    localKeys[insert.temporaryID] = insert.temporaryID
                } else {
                    localKeys[insert.temporaryID] = nextKey
                    nextKey += 1
                }
            }
            func key(_ object: BackendObject<Int64>) -> Int64? {
                switch object {
                case .existing(let key): key
                case .inserted(let temporary): localKeys[temporary]
                }
            }
            func target(_ object: BackendObject<Int64>) -> QueuedSave.Target {
                switch object {
                case .existing(let key): QueuedSave.Target(key: key)
                case .inserted(let temporary): QueuedSave.Target(inserted: temporary)
                }
            }
            var nodes: [RowNode] = []
            var versions: [Int64: Int64] = [:]
            var references: [Int64: Int64] = [:]
            for insert in changes.inserts {
                guard let local = localKeys[insert.temporaryID] else { continue }
                save.inserts.append(.init(temporaryID: insert.temporaryID, key: local, entity: insert.entityName,
                                          values: WireValue.values(insert.values), toOne: insert.toOne.mapValues(target)))
                versions[local] = 1
                references[insert.temporaryID] = local
                if let node = node(insert.entityName, key: local, version: 1, values: insert.values, toOne: insert.toOne.compactMapValues(key)) {
                    nodes.append(node)
                }
            }
            // The rows as read (when the cache holds them at the version read), for `.storeTrump`.
            var read: [Int64: RowNode] = [:]
            for (entityName, updates) in Dictionary(grouping: changes.updates, by: \.entityName) {
                guard let entity = model.entity(named: entityName) else { continue }
                for row in try cache.rows(entity, keys: updates.map(\.reference)) { read[row.id.primaryKey] = row }
            }
            for update in changes.updates {
                let version = update.expectedVersion &+ 1
                var values: Components.Schemas.Values?
                if let row = read[update.reference], row.version == update.expectedVersion {
                    let entity = model.entities[row.id.entity]
                    var named: [String: PredicateValue] = [:]
                    for attribute in entity.attributes where row.value(at: attribute.slot) != .null { named[attribute.name] = row.value(at: attribute.slot) }
                    values = WireValue.values(named)
                }
                save.updates.append(.init(key: update.reference, entity: update.entityName, expectedVersion: update.expectedVersion, version: version,
                                          values: WireValue.values(update.values), toOne: update.toOne.mapValues(target),
                                          changedAttributes: update.changedAttributes, changedToOne: update.changedToOne, read: values))
                versions[update.reference] = version
                if let node = node(update.entityName, key: update.reference, version: version, values: update.values,
                                   toOne: update.toOne.compactMapValues(key)) {
                    nodes.append(node)
                }
            }
            save.deletes = changes.deletes.map { .init(key: $0.reference, entity: $0.entityName, expectedVersion: $0.expectedVersion) }
            save.links = changes.links.map {
                .init(owner: target($0.owner), entity: $0.entityName, relationship: $0.relationship, added: $0.added.map(target), removed: $0.removed)
            }
            save.kept = changes.kept.map { .init(key: $0.reference, entity: $0.entityName) }
            let deleted = changes.deletes.compactMap { delete in
                model.entity(named: delete.entityName).map { ObjectID(entity: $0, primaryKey: delete.reference) }
            }
            // Links the delete rules clear (the server works them out again when it applies the change set).
            for clear in changes.clears {
                guard let entity = model.entity(named: clear.entityName), let relationship = entity.relationship(named: clear.relationship)
                else { continue }
                let targets = Set(clear.targets)
                for row in try cache.rows(entity, keys: clear.rows) {
                    guard let target = row.toOneKey(at: relationship.slot), targets.contains(target) else { continue }
                    var toOne = row.toOne
                    toOne[relationship.slot] = nil
                    nodes.append(RowNode(id: row.id, version: row.version &+ 1, values: row.values, toOne: toOne,
                                         toMany: [[Int64]?](repeating: nil, count: model.entities[row.id.entity].toManyCount)))
                }
            }
            let text = try OfflineQueue.text(save)
            let sequence = identity?.sequence ?? state.nextSequence
            try queue.write(nodes, deleting: deleted, queue.queueing(text, origin: identity?.origin ?? queue.origin, sequence: sequence,
                                                                      nextSequence: identity == nil ? sequence + 1 : nil, nextLocalKey: nextKey))
            if identity == nil { state.nextSequence = sequence + 1 }
            state.nextLocalKey = nextKey
            state.count += 1
            return .saved(versions: versions, references: references)
        }
        setStatus(status)
        return outcome
    }

    /// Sends the saves made offline, in order, one at a time, until none is left.
    ///
    /// - Returns: True when none is left; false when the server went out of reach again (the status says
    ///   so) or the cache could not be written (tried again later).
    func sendQueuedSaves() -> Bool {
        guard let queue = offlineQueue else { return true }
        while true {
            let entry: OfflineQueue.Entry?
            do {
                entry = try queue.first()
            } catch {
                return false
            }
            guard let entry else { return true }
            do {
                try sendQueued(entry, queue)
            } catch {
                if let reason = Self.outOfReach(error) { setStatus(.offline(reason: reason)) }
                return false
            }
            setStatus(status)
        }
    }

    /// Sends one queued change set, resolving conflicts with its merge policy, and settles it: applied,
    /// or set aside as refused.
    private func sendQueued(_ entry: OfflineQueue.Entry, _ queue: OfflineQueue) throws(StoreError) {
        var save = entry.save
        var sequence = entry.sequence
        var origin = entry.origin
        var conflicts: [SaveConflict] = []
        for _ in 0..<OfflineQueue.maximumAttempts {
            let sent: QueuedSave
            let changes: BackendChanges<Int64>
            do {
                sent = save.translated ? save : try queue.translated(save)
                changes = try sent.backendChanges()
            } catch {
                return try refuse(entry, save, error, queue)
            }
            var body = changeSet(changes)
            body.origin = origin
            body.sequence = sequence
            let outcome: BackendSaveOutcome<Int64>
            do {
                outcome = try send(body)
            } catch {
                guard Self.outOfReach(error) == nil else { throw error }
                return try refuse(entry, save, error, queue)
            }
            switch outcome {
            case .saved(let versions, let keys):
                return try settle(entry, sent, versions: versions, keys: keys, queue)
            case .conflicts(let found):
                conflicts = records(found, sent)
                guard let policy = MergePolicy(queuedName: sent.policy), policy != .error,
                      let (resolved, rows, gone) = try resolve(sent, found, policy)
                else { return try refuse(entry, save, .conflicts(conflicts), queue) }
                sequence = try queue.replace(entry.order, with: resolved, mirroring: rows, deleting: gone)
                origin = queue.origin
                save = resolved
            }
        }
        try refuse(entry, save, .conflicts(conflicts), queue)
    }

    /// The conflicts as a save reports them.
    private func records(_ found: [(reference: Int64, entityName: String, current: BackendRow<Int64>?)], _ save: QueuedSave) -> [SaveConflict] {
        found.compactMap { conflict in
            guard let entity = model.entity(named: conflict.entityName) else { return nil }
            let update = save.updates.first { $0.key == conflict.reference }
            let expected = update?.expectedVersion ?? save.deletes.first { $0.key == conflict.reference }?.expectedVersion ?? 0
            return SaveConflict(
                objectID: attachedStore?.objectID(for: conflict.reference, entityName: conflict.entityName)
                    ?? ObjectID(entity: entity, primaryKey: conflict.reference),
                entity: entity.name, contextVersion: expected,
                contextValues: update.flatMap { try? QueuedSave.values($0.values) } ?? [:], storeVersion: conflict.current?.version,
                storeValues: conflict.current.map { row in Dictionary(uniqueKeysWithValues: entity.attributes.map { ($0.name, row.values[$0.name] ?? .null) }) })
        }
    }

    /// A change set with its conflicts resolved by `policy` (written at the versions the server has now), the
    /// rows the server keeps as they are (for the cache) and those it no longer has; nil when a conflict
    /// stays unresolved.
    private func resolve(_ save: QueuedSave, _ found: [(reference: Int64, entityName: String, current: BackendRow<Int64>?)],
                         _ policy: MergePolicy) throws(StoreError) -> (QueuedSave, [RowNode], [ObjectID])? {
        var resolved = save
        var rows: [RowNode] = []
        var gone: [ObjectID] = []
        func sameRoot(_ a: String, _ b: Entity) -> Bool { model.entity(named: a).map { model.root(of: $0).index == model.root(of: b).index } ?? false }
        for conflict in found {
            guard let entity = model.entity(named: conflict.entityName) else { continue }
            let current = conflict.current.flatMap { node($0.entityName, key: $0.reference, version: $0.version, values: $0.values, toOne: $0.toOne) }
            let rowConflict = RowConflict(id: ObjectID(entity: entity, primaryKey: conflict.reference), current: current)
            if let index = resolved.updates.firstIndex(where: { $0.key == conflict.reference && sameRoot($0.entity, entity) }) {
                let update = resolved.updates[index]
                guard let changed = model.entity(named: update.entity) else { continue }
                let toOneRelationships = changed.relationships.filter { !$0.isToMany }
                let named = try QueuedSave.values(update.values)
                var toOne = [Int64?](repeating: nil, count: changed.toOneCount)
                for relationship in toOneRelationships {
                    toOne[relationship.slot] = update.toOne[relationship.name].flatMap { $0.inserted ?? $0.key }
                }
                let read = try update.read.map { wire throws(StoreError) in try QueuedSave.values(wire) }
                let change = ConflictingChange(
                    entity: changed, isDeleted: false,
                    attributeSlots: changed.attributes.filter { update.changedAttributes.contains($0.name) }.map(\.slot),
                    toOneSlots: toOneRelationships.filter { update.changedToOne.contains($0.name) }.map(\.slot),
                    read: read.map { values in changed.attributes.map { values[$0.name] ?? .null } },
                    row: (changed.attributes.map { named[$0.name] ?? .null }, toOne))
                guard let resolution = policy.resolve(rowConflict, change) else { return nil }
                switch resolution {
                case .write(let expectedVersion, let attributeSlots, let toOneSlots, let values, let keys):
                    var written: [String: PredicateValue] = [:]
                    for attribute in changed.attributes where values[attribute.slot] != .null { written[attribute.name] = values[attribute.slot] }
                    var targets: [String: QueuedSave.Target] = [:]
                    for relationship in toOneRelationships {
                        guard let key = keys[relationship.slot] else { continue }
                        targets[relationship.name] = key < 0 ? QueuedSave.Target(inserted: key) : QueuedSave.Target(key: key)
                    }
                    resolved.updates[index].expectedVersion = expectedVersion
                    resolved.updates[index].values = WireValue.values(written)
                    resolved.updates[index].toOne = targets
                    resolved.updates[index].changedAttributes = changed.attributes.filter { attributeSlots.contains($0.slot) }.map(\.name)
                    resolved.updates[index].changedToOne = toOneRelationships.filter { toOneSlots.contains($0.slot) }.map(\.name)
                case .discard:
                    resolved.updates.remove(at: index)
                    resolved.kept.append(.init(key: update.key, entity: update.entity))
                    if let current { rows.append(current) }
                case .gone:
                    resolved.updates.remove(at: index)
                    gone.append(rowConflict.id)
                case .reinsert:
                    resolved.updates.remove(at: index)
                    resolved.inserts.append(.init(temporaryID: update.key, key: update.key, entity: update.entity, values: update.values,
                                                  toOne: update.toOne))
                case .delete:
                    resolved.updates.remove(at: index)
                }
            } else if let index = resolved.deletes.firstIndex(where: { $0.key == conflict.reference && sameRoot($0.entity, entity) }) {
                let delete = resolved.deletes[index]
                guard let deletedEntity = model.entity(named: delete.entity) else { continue }
                let change = ConflictingChange(entity: deletedEntity, isDeleted: true, attributeSlots: [], toOneSlots: [], read: nil, row: nil)
                guard let resolution = policy.resolve(rowConflict, change) else { return nil }
                switch resolution {
                case .delete:
                    resolved.deletes[index].expectedVersion = nil
                case .discard:
                    resolved.deletes.remove(at: index)
                    resolved.kept.append(.init(key: delete.key, entity: delete.entity))
                    if let current { rows.append(current) }
                default:
                    resolved.deletes.remove(at: index)
                }
            }
        }
        return (resolved, rows, gone)
    }

    /// A change set the server applied: taken out of the queue, its keys and versions recorded as the
    /// server's (the cache's rows of objects it inserted moved to the server's keys, links to them too), in
    /// one transaction; then the store hears of the new keys and the rows written.
    private func settle(_ entry: OfflineQueue.Entry, _ sent: QueuedSave, versions: [Int64: Int64], keys: [Int64: Int64],
                        _ queue: OfflineQueue) throws(StoreError) {
        let cache = queue.cache
        var keyPairs: [(root: String, local: Int64, server: Int64)] = []
        var versionPairs: [(root: String, key: Int64, local: Int64, server: Int64)] = []
        var nodes: [RowNode] = []
        var deleted: [ObjectID] = []
        var retargets: [SQLQuery] = []
        let schema = cache.schema
        var inserted: [(entityName: String, local: Int64, server: Int64)] = []
        for insert in sent.inserts {
            guard let entity = model.entity(named: insert.entity), let server = keys[insert.temporaryID] else {
                throw .server("the server applied a save made offline but gave its new \(insert.entity) no key", sql: nil)
            }
            let root = model.root(of: entity)
            keyPairs.append((root.name, insert.key, server))
            versionPairs.append((root.name, server, 1, versions[server] ?? 1))
            inserted.append((insert.entity, insert.key, server))
        }
        for update in sent.updates {
            guard let entity = model.entity(named: update.entity) else { continue }
            versionPairs.append((model.root(of: entity).name, update.key, update.version, versions[update.key] ?? update.expectedVersion &+ 1))
        }
        try queue.state.withLock { state throws(StoreError) in
            // The server's keys for the keys given offline, this change set's included.
            var known = state.keys
            for pair in keyPairs { known[pair.root, default: [:]][pair.local] = pair.server }
            func server(_ key: Int64?, _ destination: String) -> Int64? {
                guard let key, let entity = model.entity(named: destination) else { return key }
                return known[model.root(of: entity).name]?[key] ?? key
            }
            for (insert, pair) in zip(sent.inserts, keyPairs) where pair.local != pair.server {
                guard let entity = model.entity(named: insert.entity), let row = try cache.rows(entity, keys: [pair.local]).first else { continue }
                let rowEntity = model.entities[row.id.entity]
                deleted.append(row.id)
                var toOne = row.toOne
                for relationship in rowEntity.relationships where !relationship.isToMany {
                    toOne[relationship.slot] = server(toOne[relationship.slot], relationship.destination)
                }
                nodes.append(RowNode(id: ObjectID(entity: rowEntity, primaryKey: pair.server), version: row.version == 1 ? versions[pair.server] ?? 1 : row.version,
                                     values: row.values, toOne: toOne, toMany: [[Int64]?](repeating: nil, count: rowEntity.toManyCount)))
                // Links to the row, from rows of every entity that can point at its root.
                let root = model.root(of: entity)
                var seen = Set<String>()
                for owner in model.entities {
                    for relationship in owner.relationships where !relationship.isToMany {
                        guard let destination = model.entity(named: relationship.destination), model.root(of: destination).index == root.index,
                              seen.insert("\(schema.table(owner)).\(schema.foreignKey(relationship, of: owner))").inserted else { continue }
                        retargets.append(schema.retargetToOne(relationship, of: owner, from: pair.local, to: pair.server))
                    }
                }
            }
            // Rows the change set wrote that no later save changed: as the server has them now.
            for update in sent.updates {
                guard let entity = model.entity(named: update.entity), let row = try cache.rows(entity, keys: [update.key]).first,
                      row.version == update.version else { continue }
                var toOne: [String: Int64] = [:]
                for (name, target) in update.toOne {
                    let destination = entity.relationship(named: name)?.destination ?? update.entity
                    if let key = target.inserted.flatMap({ keys[$0] }) ?? server(target.key, destination) { toOne[name] = key }
                }
                if let node = node(update.entity, key: update.key, version: versions[update.key] ?? row.version,
                                   values: try QueuedSave.values(update.values), toOne: toOne) {
                    nodes.append(node)
                }
            }
            let last = state.count <= 1
            try queue.write(nodes, deleting: deleted, retargets + queue.removing(entry.order, keys: keyPairs, versions: versionPairs, last: last))
            queue.removed(keys: keyPairs, versions: versionPairs, in: &state)
        }
        cache.rowCache.removeAll()
        guard let store = attachedStore else { return }
        for object in inserted where object.local != object.server {
            if !store.backendDidRename(object.local, to: object.server, entityName: object.entityName) {
                store.backendDidChange(inserted: [(object.entityName, object.server)], deleted: [(object.entityName, object.local)])
            }
        }
        store.backendDidChange(updated: inserted.map { ($0.entityName, $0.server) } + sent.updates.map { ($0.entity, $0.key) })
    }

    /// A change set the server did not apply: taken out of the queue, the objects it inserted out of the
    /// cache, the rows it changed read from the server again once it answers, and `offlineSaveRefused` told.
    private func refuse(_ entry: OfflineQueue.Entry, _ save: QueuedSave, _ error: StoreError, _ queue: OfflineQueue) throws(StoreError) {
        var keyPairs: [(root: String, local: Int64, server: Int64)] = []
        var versionPairs: [(root: String, key: Int64, local: Int64, server: Int64)] = []
        var deleted: [ObjectID] = []
        try queue.state.withLock { state throws(StoreError) in
            for insert in save.inserts {
                guard let entity = model.entity(named: insert.entity) else { continue }
                keyPairs.append((model.root(of: entity).name, insert.key, 0))
                deleted.append(ObjectID(entity: entity, primaryKey: insert.key))
            }
            for update in save.updates {
                guard let entity = model.entity(named: update.entity) else { continue }
                let root = model.root(of: entity).name
                guard let key = save.translated ? update.key : OfflineQueue.serverKey(update.key, root: root, state) else { continue }
                versionPairs.append((root, key, update.version, 0))
                state.stale[update.entity, default: []].insert(key)
            }
            for delete in save.deletes {
                guard let entity = model.entity(named: delete.entity),
                      let key = save.translated ? delete.key : OfflineQueue.serverKey(delete.key, root: model.root(of: entity).name, state)
                else { continue }
                state.stale[delete.entity, default: []].insert(key)
            }
            try queue.write([], deleting: deleted, queue.removing(entry.order, keys: keyPairs, versions: versionPairs, last: state.count <= 1))
            queue.removed(keys: keyPairs, versions: versionPairs, in: &state)
        }
        queue.cache.rowCache.removeAll()
        configuration.offlineSaveRefused?(RefusedOfflineSave(origin: entry.origin, sequence: entry.sequence, error: error))
        attachedStore?.backendDidChange(deleted: save.inserts.map { ($0.entity, $0.key) })
    }

    /// Reads again from the server the rows refused saves made offline had changed in the cache (the status
    /// is online), and tells the store.
    func refreshRefusedRows() {
        guard let queue = offlineQueue else { return }
        let stale = queue.state.withLock { state in
            defer { state.stale = [:] }
            return state.stale
        }
        for (entityName, keys) in stale {
            guard let entity = model.entity(named: entityName) else { continue }
            let wanted = keys.sorted()
            guard let found = try? rows(wanted, entityName: entityName) else { continue }
            let present = Set(found.map(\.reference))
            let missing = wanted.filter { !present.contains($0) }
            try? queue.cache.mirror([], deleting: missing.map { ObjectID(entity: entity, primaryKey: $0) })
            attachedStore?.backendDidChange(updated: found.map { ($0.entityName, $0.reference) }, deleted: missing.map { (entityName, $0) })
        }
    }
}
#endif
