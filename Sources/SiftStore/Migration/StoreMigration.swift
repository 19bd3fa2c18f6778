// Store stage: lightweight migration of a SQLite store to another version
// of its model. The store's version is found in the bundle by its entity
// version hashes (or read from its model cache, or from the model Sift
// keeps in its metadata); the mapping is inferred (`MappingModel`); the rows
// are read through the source version's layout, mapped, and written through
// the destination version's into a new file beside the store, which is
// checked and then renamed over the store. Until that rename the store's
// file is only read (and its write-ahead log checkpointed into it), so a
// failure anywhere leaves it as it was.

import Foundation
import Sift

/// A migration of one store file to a version of its model bundle:
/// planned when made (nothing written), run by ``run()``.
///
/// ```swift
/// let bundle = try ModelBundle(contentsOf: URL(fileURLWithPath: "Model.xcdatamodeld"))
/// let migration = try StoreMigration(storeAt: storeURL, bundle: bundle)
/// if migration.isNeeded {
///     print(migration.mapping.summary.joined(separator: "\n"))
///     let report = try migration.run()
/// }
/// let store = try SQLiteStore(url: storeURL, model: try bundle.model())
/// ```
///
/// Run it before the store is opened anywhere else: the file is replaced.
public struct StoreMigration: Sendable {
    /// The store's file.
    public let storeURL: URL
    /// The version the store is in: a version name of the bundle, or where
    /// its model was found (its model cache, or Sift's metadata).
    public let sourceVersion: String
    /// The version the store migrates to.
    public let destinationVersion: String
    /// The inferred mapping.
    public let mapping: MappingModel
    /// Whether the store is in another version than the destination.
    public let isNeeded: Bool
    /// The store's metadata, whose application keys the migrated store keeps.
    private let metadata: MetadataBox
    /// Whether the source is opened with `mapping.source` (a bundle version)
    /// or with the model the store holds.
    private let opensWithStoredModel: Bool

    /// Plans the migration of the store at `url` to `version` of `bundle`
    /// (its current version when nil), reading the store only. Fails when
    /// the store's version cannot be found, or when the mapping cannot be
    /// inferred (the error lists every reason). A store's persistent history
    /// is carried into the new version, its changes renamed by the mapping.
    ///
    /// - Parameters:
    ///   - url: The store file to migrate.
    ///   - bundle: The model bundle with the store's version and the destination.
    ///   - version: The name of the destination version; nil for the bundle's current version.
    /// - Throws: `StoreError.cannotMigrate` when `bundle` has no such version, the store's version is neither
    ///   in the bundle nor kept by the store, or the mapping cannot be inferred; `.cannotWrite` when there is no
    ///   file at `url`; `.noModel`, `.foreignDatabase`, `.damaged` or
    ///   another store error when the file cannot be read as a store.
    public init(storeAt url: URL, bundle: ModelBundle, version: String? = nil) throws(StoreError) {
        let name = version ?? bundle.currentVersionName
        let destination: DataModel
        do {
            destination = try bundle.model(version: name)
        } catch {
            throw .cannotMigrate(path: url.path, reasons: ["\(error)"])
        }
        try self.init(storeAt: url, to: destination, named: name, bundle: bundle)
    }

    /// Plans the migration of the store at `url` to `model`, from the model
    /// the store keeps (Sift's, or Core Data's model cache).
    ///
    /// - Parameters:
    ///   - url: The store file to migrate.
    ///   - model: The model to migrate the store to.
    /// - Throws: `StoreError.cannotMigrate` when the store keeps no model of its own or the mapping cannot be
    ///   inferred; `.cannotWrite` when there is no file at `url`;
    ///   `.noModel`, `.foreignDatabase`, `.damaged` or another store error when the file cannot be read as a
    ///   store.
    public init(storeAt url: URL, to model: DataModel) throws(StoreError) {
        try self.init(storeAt: url, to: model, named: "the model given", bundle: nil)
    }

    private init(storeAt url: URL, to destination: DataModel, named destinationName: String, bundle: ModelBundle?) throws(StoreError) {
        let path = url.path
        let catalog = try Self.catalog(of: url)
        let source: DataModel
        let sourceName: String
        var storedModel = false
        if catalog.metadata[StoreMetadata.modelKey] != nil, let stored = try catalog.model(expected: nil) {
            (source, sourceName, storedModel) = (stored, "the model Sift keeps in the store", true)
        } else if let match = bundle?.version(matching: catalog.hashes) {
            (source, sourceName) = (match.model, match.name)
        } else if let stored = try catalog.model(expected: nil) {
            (source, sourceName, storedModel) = (stored, "the store's model cache", true)
        } else {
            throw .cannotMigrate(path: path, reasons: [
                (bundle.map { "no version of '\($0.url.lastPathComponent)' is the store's (its entity version hashes match none), and " }
                    ?? "") + "the store keeps no model of its own",
            ])
        }
        do {
            mapping = try MappingModel.inferred(from: source, to: destination)
        } catch {
            throw .cannotMigrate(path: path, reasons: error.problems)
        }
        storeURL = url
        sourceVersion = sourceName
        destinationVersion = destinationName
        let siftHash = catalog.metadata[StoreMetadata.modelHashKey] as? String
        isNeeded = catalog.hashes != destination.entityVersionHashes || (siftHash != nil && siftHash != destination.versionHash)
        var metadata = catalog.metadata
        if let uuid = catalog.uuid { metadata["NSStoreUUID"] = uuid }
        self.metadata = MetadataBox(metadata)
        opensWithStoredModel = storedModel
    }

    private static func catalog(of url: URL) throws(StoreError) -> StoreCatalog {
        guard FileManager.default.fileExists(atPath: url.path) else { throw .cannotWrite(path: url.path, reason: "there is no such file") }
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: url.path, readOnly: true)
        } catch {
            throw StoreError(error, path: url.path)
        }
        guard let catalog = try StoreCatalog.read(connection, path: url.path) else { throw .noModel(path: url.path) }
        return catalog
    }

    /// What a migration did.
    public struct Report: Sendable {
        /// Objects written, by destination entity.
        public var objects: [String: Int]
        /// Objects of removed entities, dropped.
        public var droppedObjects: Int
        /// Persistent history changes of removed entities, dropped (the
        /// rest of a store's history is carried into the new version).
        public var droppedHistoryChanges = 0
        /// How long it took, in seconds.
        public var seconds: Double
    }

    /// Migrates the store: reads every row with the source version, maps
    /// it, writes the destination version into a new file beside the store,
    /// checks it (`PRAGMA integrity_check`), and renames it over the store.
    /// Any failure leaves the store as it was and removes the new file.
    ///
    /// - Returns: What was migrated: objects written per entity, objects dropped, and the time taken.
    /// - Throws: `StoreError`, the store left as it was: `.cannotMigrate` when objects would have no value for
    ///   a new required attribute without a default; `.damaged` when the new file fails its integrity check;
    ///   `.cannotWrite` when the new file cannot be synced or renamed over the store; any error of reading the
    ///   store or writing the new file (such as `.locked` or `.full`).
    @discardableResult
    public func run() throws(StoreError) -> Report {
        try run(progress: nil)
    }

    /// Migrates the store, as ``run()`` does, telling `progress` how far it
    /// has got: the objects read (a root entity's table at a time), the
    /// objects written into the new file, then the history changes copied
    /// (when the store keeps persistent history).
    ///
    /// ```swift
    /// let report = try migration.run { progress in
    ///     print(progress.step, progress.done, "of", progress.total)
    /// }
    /// ```
    ///
    /// - Parameter progress: Told how many objects are read (``WorkProgress/Step/readingObjects``) and written
    ///   (``WorkProgress/Step/writingObjects``), then how many history changes are copied
    ///   (``WorkProgress/Step/copyingHistory``); nil for no reports.
    /// - Returns: What was migrated: objects written per entity, objects dropped, and the time taken.
    /// - Throws: `StoreError`, the store left as it was, as ``run()`` does.
    @discardableResult
    public func run(progress: ((WorkProgress) -> Void)?) throws(StoreError) -> Report {
        let start = ContinuousClock.now
        let folder = storeURL.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(".\(storeURL.lastPathComponent).migrating-\(UUID().uuidString)")
        func removeTemporary() {
            for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: temporary.path + suffix) }
        }
        var report = Report(objects: [:], droppedObjects: 0, seconds: 0)
        do {
            try copyRows(into: temporary, report: &report, progress: progress)
            try replaceStore(with: temporary)
        } catch {
            removeTemporary()
            throw error
        }
        report.seconds = (ContinuousClock.now - start).seconds
        return report
    }

    /// Reads the store with the source version and writes the destination
    /// version's rows into a new store file at `temporary`.
    private func copyRows(into temporary: URL, report: inout Report, progress: ((WorkProgress) -> Void)?) throws(StoreError) {
        let sourceStore = try SQLiteStore(url: storeURL, model: opensWithStoredModel ? nil : mapping.source, readOnly: true)
        let uuid = metadata.values["NSStoreUUID"] as? String ?? UUID().uuidString
        let source = sourceStore.model
        let destination = mapping.destination
        // Every row, with its to-many keys in order.
        var nodes: [RowNode] = []
        var largestKeys: [String: Int64] = [:]
        let roots = source.entities.filter { $0.superentity == nil }
        var total = 0
        if progress != nil {
            for root in roots { total += try sourceStore.count(for: try sourceStore.compile(FetchRequest(entityName: root.name))) }
        }
        var reading = ProgressReporter(progress, .readingObjects, total: total, interval: 1)
        for root in roots {
            var rows = try sourceStore.rows(for: try sourceStore.compile(FetchRequest(entityName: root.name)))
            defer { reading.advance(by: rows.count) }
            let largest: Int64
            do {
                let rows = try sourceStore.withConnection { try $0.query(sourceStore.schema.selectKeyMaximum(root)) }
                largest = if case .integer(let key)? = rows.first?.first { key } else { 0 }
            } catch {
                throw StoreError(error, path: storeURL.path)
            }
            largestKeys[root.name] = largest
            var byEntity: [Int: [Int]] = [:]
            for (index, node) in rows.enumerated() { byEntity[node.id.entity, default: []].append(index) }
            for (entityIndex, indexes) in byEntity {
                let entity = source.entities[entityIndex]
                let keys = indexes.map { rows[$0].id.primaryKey }
                var toMany = [[[Int64]?]](repeating: [], count: indexes.count)
                for i in toMany.indices { toMany[i] = [[Int64]?](repeating: nil, count: entity.toManyCount) }
                for relationship in entity.relationships where relationship.isToMany && !relationship.isTransient {
                    let links = try sourceStore.links(relationship, of: keys, entity: entity, loadingRows: false)
                    for (i, key) in keys.enumerated() { toMany[i][relationship.slot] = links[key] ?? [] }
                }
                for (i, index) in indexes.enumerated() {
                    let node = rows[index]
                    rows[index] = RowNode(id: node.id, version: node.version, fetchTimestamp: node.fetchTimestamp,
                                          values: node.values, toOne: node.toOne, toMany: toMany[i])
                }
            }
            nodes.append(contentsOf: rows)
        }
        reading.finish()
        // How each source entity's rows become the destination's, worked out once per entity.
        let plans = source.entities.map { EntityPlan($0, mapping: mapping) }
        // Which rows the destination keeps, by root table (the destination
        // entity's index): for the links that point at them.
        var kept = [[Int64: Int]](repeating: [:], count: destination.entities.count)
        for node in nodes {
            guard let target = plans[node.id.entity]?.target else { continue }
            kept[target.rootIndex][node.id.primaryKey] = target.index
        }
        var mapped: [RowNode] = []
        mapped.reserveCapacity(nodes.count)
        var missing: [String: Int] = [:]
        var counts = [Int](repeating: 0, count: destination.entities.count)
        for node in nodes {
            guard let plan = plans[node.id.entity] else {
                report.droppedObjects += 1
                continue
            }
            var values = [PredicateValue](repeating: .null, count: plan.target.attributes.count)
            for attribute in plan.attributes {
                var value: PredicateValue
                switch attribute.source {
                case .slot(let slot, let toDouble):
                    value = node.value(at: slot)
                    if toDouble, case .int(let i) = value { value = .double(Double(i)) }
                case .constant(let constant):
                    value = constant
                }
                if value == .null, attribute.required {
                    if let defaultValue = attribute.defaultValue {
                        value = defaultValue
                    } else {
                        missing["\(plan.target.name).\(attribute.name)", default: 0] += 1
                    }
                }
                values[attribute.slot] = value
            }
            var toOne = [Int64?](repeating: nil, count: plan.target.toOneCount)
            var toMany = [[Int64]?](repeating: [], count: plan.target.toManyCount)
            for relationship in plan.relationships {
                var keys: [Int64] = switch relationship.source {
                case .toOne(let slot): node.toOneKey(at: slot).map { [$0] } ?? []
                case .toMany(let slot): node.toManyKeys(at: slot) ?? []
                case .none: []
                }
                // Only rows the destination keeps, of an entity the relationship may point at.
                let rows = kept[relationship.destinationRoot]
                keys = keys.filter { key in rows[key].map { destination.isEntity(at: $0, kindOf: relationship.destination) } ?? false }
                if relationship.toMany { toMany[relationship.slot] = keys } else { toOne[relationship.slot] = keys.first }
            }
            mapped.append(RowNode(id: ObjectID(entity: plan.target, primaryKey: node.id.primaryKey), version: node.version,
                                  values: values, toOne: toOne, toMany: toMany))
            counts[plan.target.index] += 1
        }
        for (index, count) in counts.enumerated() where count > 0 { report.objects[destination.entities[index].name] = count }
        guard missing.isEmpty else {
            throw .cannotMigrate(path: storeURL.path, reasons: missing.sorted { $0.key < $1.key }.map {
                "\($0.value) object\($0.value == 1 ? "" : "s") would have no value for the required attribute '\($0.key)', "
                    + "which has no default value"
            })
        }
        let store = try SQLiteStore(newStoreAt: temporary, model: destination, uuid: uuid, keeping: metadata.values)
        do {
            // A scratch file until it is checked, synced and renamed: no journal, no syncs while it is written.
            try store.withConnection { try $0.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF") }
        } catch {
            throw StoreError(error, path: temporary.path)
        }
        try store.importNodes(mapped, progress: progress)
        do {
            // The store's history, in the new version's names (after the rows: importing them writes none).
            if sourceStore.tracksPersistentHistory {
                report.droppedHistoryChanges = try Self.copyHistory(from: sourceStore, into: store, mapping: mapping,
                                                                    progress: progress)
            }
            try store.withConnection { connection in
                // Keys handed out before stay handed out (a deleted object's key is not given again).
                for root in destination.entities where root.superentity == nil {
                    guard let sourceRoot = mapping.mapping(for: root.name)?.source, let largest = largestKeys[sourceRoot] else { continue }
                    let current: Int64 = if case .integer(let key)? = try connection.query(store.schema.selectKeyMaximum(root)).first?.first { key } else { 0 }
                    if largest > current { try connection.run(store.schema.updateKeyMaximum(root, to: largest)) }
                }
                let check = try connection.query("PRAGMA integrity_check")
                guard check.first?.first == .text("ok") else {
                    throw StoreError.damaged(path: temporary.path, reason: "the migrated store fails its integrity check: \(check)")
                }
                // One self-contained file, opened in WAL mode by whoever opens it next.
                try connection.execute("PRAGMA journal_mode = DELETE")
            }
        } catch {
            throw StoreError(error, path: temporary.path)
        }
    }

    /// Puts the migrated file in the store's place: the store's write-ahead
    /// log is checkpointed into it first (so no log of the old file is left
    /// to replay into the new one), then the new file is renamed over it.
    private func replaceStore(with temporary: URL) throws(StoreError) {
        let path = storeURL.path
        do {
            let connection = try SQLiteConnection(path: path)
            try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch {
            throw StoreError(error, path: path)
        }
        // On the disk before it takes the store's name; the rename on the disk before the old log goes.
        guard Self.sync(temporary.path) else {
            throw .cannotWrite(path: path, reason: "the migrated file could not be synced (\(String(cString: strerror(errno))))")
        }
        guard rename(temporary.path, path) == 0 else {
            throw .cannotWrite(path: path, reason: "the migrated file could not replace it (\(String(cString: strerror(errno))))")
        }
        _ = Self.sync(storeURL.deletingLastPathComponent().path)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// `fsync` of a file or folder; false when it cannot be opened or synced.
    private static func sync(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return fsync(descriptor) == 0
    }
}

/// How the rows of one source entity become rows of the destination:
/// where each stored attribute's value comes from and each relationship's keys.
private struct EntityPlan {
    enum ValueSource {
        /// The source row's slot, an integer made a double when asked.
        case slot(Int, toDouble: Bool)
        case constant(PredicateValue)
    }
    enum KeySource {
        case toOne(slot: Int)
        case toMany(slot: Int)
        case none
    }
    struct AttributePlan {
        let name: String
        let slot: Int
        let source: ValueSource
        let required: Bool
        let defaultValue: PredicateValue?
    }
    struct RelationshipPlan {
        let slot: Int
        let toMany: Bool
        let source: KeySource
        /// The destination entity's index, and its root's.
        let destination: Int
        let destinationRoot: Int
    }

    let target: Entity
    let attributes: [AttributePlan]
    let relationships: [RelationshipPlan]

    /// The plan of `entity`'s rows; nil when its entity is removed.
    init?(_ entity: Entity, mapping: MappingModel) {
        let model = mapping.destination
        guard let name = mapping.destination(of: entity.name), let target = model.entity(named: name),
              let entityMapping = mapping.mapping(for: name) else { return nil }
        self.target = target
        attributes = target.attributes.filter(\.isStored).map { attribute in
            let source: ValueSource = switch entityMapping.attributes[attribute.name] {
            case .copy(let from)?: entity.attribute(named: from).map { .slot($0.slot, toDouble: false) } ?? .constant(.null)
            case .convert(let from, _)?:
                entity.attribute(named: from).map { .slot($0.slot, toDouble: [.double, .float, .decimal].contains(attribute.type)) }
                    ?? .constant(.null)
            case .defaultValue(let value)?: .constant(value ?? .null)
            case nil: .constant(.null)
            }
            return AttributePlan(name: attribute.name, slot: attribute.slot, source: source, required: !attribute.isOptional,
                                 defaultValue: attribute.defaultValue)
        }
        relationships = target.relationships.filter { !$0.isTransient }.compactMap { relationship in
            guard let destination = model.entity(named: relationship.destination) else { return nil }
            var source = KeySource.none
            switch entityMapping.relationships[relationship.name] {
            case .copy(let from)?, .toMany(let from)?, .toOne(let from)?:
                if let old = entity.relationship(named: from) { source = old.isToMany ? .toMany(slot: old.slot) : .toOne(slot: old.slot) }
            case .empty?, nil:
                break
            }
            return RelationshipPlan(slot: relationship.slot, toMany: relationship.isToMany, source: source,
                                    destination: destination.index, destinationRoot: destination.rootIndex)
        }
    }
}

/// A store's metadata, carried by a `Sendable` migration (property list
/// values only, which are immutable once read).
private struct MetadataBox: @unchecked Sendable {
    let values: [String: Any]
    init(_ values: [String: Any]) { self.values = values }
}

extension Duration {
    fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension SQLiteStore {
    /// Opens the store at `url` with `version` of `bundle` (its current
    /// version when nil). A store of another version of the bundle is
    /// migrated first when `migratesAutomatically` (Core Data's
    /// `NSMigratePersistentStoresAutomaticallyOption` with an inferred
    /// mapping); otherwise, or when the mapping cannot be inferred, it is
    /// an error, and the store is left as it was. A missing file becomes a
    /// new store of that version.
    ///
    /// - Parameters:
    ///   - url: The store file; a missing or empty file becomes a new store.
    ///   - bundle: The model bundle the store's model is a version of.
    ///   - version: The name of the version to open the store with; nil for the bundle's current version.
    ///   - migratesAutomatically: Whether a store of another version is migrated first; when false, it is an
    ///     error.
    ///   - readOnly: Whether the store only fetches; a read-only store is never migrated.
    ///   - busyTimeout: How many seconds to wait for another connection's lock before failing.
    /// - Throws: `StoreError`: `.unsupportedModel` when `bundle` has no such version or it does not load;
    ///   `.cannotMigrate` when the store needs migrating and cannot be (turned off, read-only, or no inferred
    ///   mapping); any error of `StoreMigration.run()` or of opening the store.
    public convenience init(url: URL, bundle: ModelBundle, version: String? = nil, migratesAutomatically: Bool = true,
                            readOnly: Bool = false, busyTimeout: Double = 5) throws(StoreError) {
        let model: DataModel
        do {
            model = try bundle.model(version: version)
        } catch {
            throw .unsupportedModel("\(error)")
        }
        let size = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
        if size > 0 {
            let migration = try StoreMigration(storeAt: url, bundle: bundle, version: version)
            if migration.isNeeded {
                guard migratesAutomatically, !readOnly else {
                    throw .cannotMigrate(path: url.path, reasons: [
                        "it is in version '\(migration.sourceVersion)', not '\(migration.destinationVersion)', "
                            + (readOnly ? "and a read-only store is not migrated" : "and migration was turned off"),
                    ])
                }
                try migration.run()
            }
        }
        try self.init(url: url, model: model, readOnly: readOnly, busyTimeout: busyTimeout)
    }
}
