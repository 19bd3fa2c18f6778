// Store stage: writing Core Data's persistent history. A write transaction
// of a store that keeps history records what it changes as it goes (rows
// inserted; rows updated, with the properties they got; rows deleted, with
// the values the model preserves, read before the row goes), and before the
// commit the recorder writes one transaction (`ATRANSACTION`) and one change
// per row (`ACHANGE`) in the same database transaction, laid out as Core
// Data lays them out: a row changed twice is one change, an insert that is
// then updated is an insert, a row inserted and deleted is nothing.

import Foundation
import Sift

/// Whether a store's writes keep persistent history (Core Data's
/// `NSPersistentHistoryTrackingKey`).
public enum HistoryTracking: Sendable, Hashable {
    /// As the store does: history is written when the store has history tables.
    case asStored
    /// Always: history tables are added to a store that has none.
    case on
    /// Never: a store that keeps history opens for reading only, so that its
    /// history misses nothing.
    case off
}

/// Who makes the writes a store records in its persistent history: the
/// author and the context's name, as a context sets them around its saves
/// and batch requests (Core Data's `transactionAuthor` and context `name`).
///
/// A store that writes history reads ``current``; a store of your own can
/// too. Set it around writes made without a context:
///
/// ```swift
/// try TransactionNames.$current.withValue(TransactionNames(author: "importer")) {
///     try store.importNodes(nodes, progress: nil)
/// }
/// ```
public struct TransactionNames: Sendable, Hashable {
    /// The transaction's author (`ZAUTHORTS`); nil for none.
    public var author: String?
    /// The name of the context that saved (`ZCONTEXTNAMETS`); nil for none.
    public var contextName: String?

    /// Names for the transactions written while they are current.
    ///
    /// - Parameters:
    ///   - author: The transactions' author; nil for none.
    ///   - contextName: The saving context's name; nil for none.
    public init(author: String? = nil, contextName: String? = nil) {
        self.author = author
        self.contextName = contextName
    }

    /// The names of the writes being made on this task (or thread): none
    /// unless a context, or you, set them.
    @TaskLocal public static var current = TransactionNames()
}

/// How a change is recorded: Core Data's `NSPersistentHistoryChangeType`.
enum HistoryChangeKind: Int64 {
    case insert = 0, update = 1, delete = 2
}

/// The properties of an entity as history numbers them: its stored
/// attributes (a composite as one) and relationships, inherited ones
/// included, in one list sorted by name. Bit n of an update's bitmap,
/// highest bit of each byte first, is the n-th of them.
struct HistoryProperties {
    let names: [String]
    private let indices: [String: Int]

    init(_ entity: Entity) {
        let attributes = entity.attributes.filter { !$0.isTransient && $0.composite == nil }.map(\.name)
        let relationships = entity.relationships.filter { !$0.isTransient }.map(\.name)
        names = (attributes + relationships).sorted()
        indices = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The bitmap of `properties` (those the entity does not have are left
    /// out; a composite's element marks its composite).
    func bitmap(_ properties: some Sequence<String>) -> Data {
        var bytes = Data(count: (names.count + 7) / 8)
        for name in properties {
            guard let index = indices[name] ?? name.firstIndex(of: ".").flatMap({ indices[String(name[..<$0])] }) else { continue }
            bytes[index / 8] |= 0x80 >> UInt8(index % 8)
        }
        return bytes
    }

    /// The names a bitmap marks; nil when a bit is past the last property.
    func names(in bitmap: Data) -> [String]? {
        var result: [String] = []
        for (byteIndex, byte) in bitmap.enumerated() {
            for bit in 0..<8 where byte & (0x80 >> UInt8(bit)) != 0 {
                let index = byteIndex * 8 + bit
                guard index < names.count else { return nil }
                result.append(names[index])
            }
        }
        return result
    }

    /// The attributes whose values a delete preserves, sorted by name: the
    /// n-th is recorded in `ZTOMBSTONE<n>`.
    static func preserved(_ entity: Entity) -> [Attribute] {
        entity.attributes.filter { $0.preservesValueInHistoryOnDeletion && $0.isStored && $0.composite == nil }
            .sorted { $0.name < $1.name }
    }

    /// How many tombstone columns a model's history needs: the most
    /// attributes any entity preserves.
    static func tombstoneCount(_ model: DataModel) -> Int {
        model.entities.map { preserved($0).count }.max() ?? 0
    }
}

/// What one write transaction changed, as its history will say it; written
/// by `write(_:)` before the commit.
package final class HistoryRecorder {
    private struct Entry {
        var kind: HistoryChangeKind
        var id: ObjectID
        /// The properties an update changed (a name may come twice).
        var properties: [String] = []
        var tombstone: [SQLValue] = []
    }

    private let model: DataModel
    private let schema: SQLSchema
    /// How many tombstone columns the store's change table has.
    private let tombstoneColumns: Int
    private var entries: [Entry] = []
    /// Each row's entry, by root and key.
    private var places: [RowKey: Int] = [:]
    /// Preserved values read before rows were deleted, by root and key.
    private var tombstones: [RowKey: [SQLValue]] = [:]

    private struct RowKey: Hashable {
        let root: Int
        let key: Int64
        init(_ id: ObjectID) { (root, key) = (id.root, id.primaryKey) }
    }

    init(model: DataModel, schema: SQLSchema, tombstoneColumns: Int) {
        self.model = model
        self.schema = schema
        self.tombstoneColumns = tombstoneColumns
    }

    /// A row inserted.
    func inserted(_ id: ObjectID) {
        guard places[RowKey(id)] == nil else { return }
        places[RowKey(id)] = entries.count
        entries.append(Entry(kind: .insert, id: id))
    }

    /// A row updated: the names of the properties it got (an insert stays
    /// an insert; a composite's element is named by its composite or as `composite.element`).
    func updated(_ id: ObjectID, _ properties: [String]) {
        if let place = places[RowKey(id)] {
            guard entries[place].kind == .update else { return }
            entries[place].properties += properties
            // A row reached as its entity's ancestor is recorded as what it is.
            if model.isEntity(at: id.entity, kindOf: entries[place].id.entity) { entries[place].id = id }
            return
        }
        places[RowKey(id)] = entries.count
        entries.append(Entry(kind: .update, id: id, properties: properties))
    }

    /// A row deleted, with the values read for it by `willDelete(_:_:)`; a
    /// row this transaction inserted leaves no trace.
    func deleted(_ id: ObjectID) {
        let row = RowKey(id)
        if let place = places[row] {
            if entries[place].kind == .insert {
                entries[place].kind = .delete
                entries[place].id = ObjectID(entity: -1, root: id.root, primaryKey: id.primaryKey)
                return
            }
            entries[place] = Entry(kind: .delete, id: id, tombstone: tombstones[row] ?? [])
            return
        }
        places[row] = entries.count
        entries.append(Entry(kind: .delete, id: id, tombstone: tombstones[row] ?? []))
    }

    /// Reads the preserved values of rows about to be deleted (only for
    /// entities that preserve some).
    func willDelete(_ ids: some Sequence<ObjectID>, _ executor: some SQLExecutor) throws {
        guard tombstoneColumns > 0 else { return }
        var byEntity: [Int: [ObjectID]] = [:]
        for id in ids where id.entity >= 0 && id.entity < model.entities.count && tombstones[RowKey(id)] == nil {
            byEntity[id.entity, default: []].append(id)
        }
        for (index, ids) in byEntity.sorted(by: { $0.key < $1.key }) {
            let entity = model.entities[index]
            let preserved = HistoryProperties.preserved(entity).prefix(tombstoneColumns)
            guard !preserved.isEmpty else { continue }
            let sql = HistoryStatements.selectTombstone(columns: preserved.map { schema.column($0, of: entity) },
                                                        from: schema.table(entity))
            for id in ids {
                if let row = try executor.rows(sql, [.integer(id.primaryKey)]).first { tombstones[RowKey(id)] = row }
            }
        }
    }

    /// Writes the transaction and its changes (nothing when nothing
    /// changed); returns the transaction's number, if it wrote one.
    @discardableResult
    func write(_ executor: some SQLExecutor, names: TransactionNames, at timestamp: Double) throws -> Int64? {
        let changes = entries.filter { $0.id.entity >= 0 }
        guard !changes.isEmpty else { return nil }
        let transaction = try reserveKeys(1, entity: HistoryStatements.transactionEntity, table: "ATRANSACTION", executor)
        let lastChange = try reserveKeys(Int64(changes.count), entity: HistoryStatements.changeEntity, table: "ACHANGE", executor)
        let identity = ProcessIdentity.current
        var interned: [String: Int64] = [:]
        func intern(_ text: String?) throws -> SQLValue {
            guard let text else { return .null }
            if let key = interned[text] { return .integer(key) }
            let key: Int64
            if case .integer(let known)? = try executor.rows(HistoryStatements.selectString, [.text(text)]).first?.first {
                key = known
            } else {
                key = try reserveKeys(1, entity: HistoryStatements.stringEntity, table: "ATRANSACTIONSTRING", executor)
                _ = try executor.rows(HistoryStatements.insertString, [.integer(key), .text(text)])
            }
            interned[text] = key
            return .integer(key)
        }
        let author = try intern(names.author)
        let bundle = try intern(identity.bundleID)
        let context = try intern(names.contextName)
        let process = try intern(identity.processName)
        _ = try executor.rows(HistoryStatements.insertTransaction,
                              [.integer(transaction), author, bundle, context, process, .real(timestamp)])
        let insert = try executor.prepare(HistoryStatements.insertChange(tombstones: tombstoneColumns))
        // Each entity's number and properties, worked out at its first change.
        var numbers: [Int: SQLValue] = [:]
        var properties: [Int: HistoryProperties] = [:]
        var key = lastChange - Int64(changes.count)
        var bindings: [SQLValue] = []
        bindings.reserveCapacity(6 + tombstoneColumns)
        for change in changes {
            key += 1
            let index = change.id.entity
            if numbers[index] == nil { numbers[index] = .integer(Int64(schema.entityNumber(model.entities[index]))) }
            bindings.removeAll(keepingCapacity: true)
            bindings += [.integer(key), .integer(change.kind.rawValue), numbers[index]!, .integer(change.id.primaryKey),
                         .integer(transaction)]
            if change.kind == .update {
                if properties[index] == nil { properties[index] = HistoryProperties(model.entities[index]) }
                bindings.append(.blob(properties[index]!.bitmap(change.properties)))
            } else {
                bindings.append(.null)
            }
            for column in 0..<tombstoneColumns {
                bindings.append(change.kind == .delete && column < change.tombstone.count ? change.tombstone[column] : .null)
            }
            try executor.run(insert, bindings)
        }
        return transaction
    }

    /// Reserves `count` keys of a history table, as a root's are reserved:
    /// after the largest handed out and the largest in the table. Returns the largest.
    private func reserveKeys(_ count: Int64, entity: Int64, table: String, _ executor: some SQLExecutor) throws -> Int64 {
        var largest: Int64 = 0
        for value in try executor.rows(HistoryStatements.selectKeyMaximum(entity: entity, table: table).sql,
                                       [.integer(entity)]).first ?? [] {
            if case .integer(let m) = value { largest = max(largest, m) }
        }
        guard largest <= Int64.max - count else { throw StoreError.keysExhausted(entity: table) }
        let update = HistoryStatements.updateKeyMaximum(entity: entity, to: largest + count)
        _ = try executor.rows(update.sql, update.bindings)
        return largest + count
    }
}

/// What history records of the process that writes: its bundle
/// identifier (the process name where there is none, as on Linux) and
/// its name.
struct ProcessIdentity: Sendable {
    let bundleID: String
    let processName: String

    static let current: ProcessIdentity = {
        let name = ProcessInfo.processInfo.processName
        return ProcessIdentity(bundleID: Bundle.main.bundleIdentifier ?? name, processName: name)
    }()
}
