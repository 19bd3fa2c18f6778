// Store stage: a store's metadata, as Core Data keeps it — a binary property
// list with the store type, the model's entity version hashes (with their
// digest and checksum) and the model version identifiers — plus Sift's own
// keys, which Core Data ignores: the model in Sift's JSON form and its hash,
// so that Sift opens its stores with no model given.

import Foundation
import Sift

package enum StoreMetadata {
    /// Sift's keys.
    package static let modelKey = "SiftModel"
    package static let modelHashKey = "SiftModelHash"

    /// The keys that describe the model and the store, which a migration
    /// writes anew; any other key is the application's, and is kept.
    package static let storeKeys: Set<String> = [
        "NSStoreType", "NSStoreUUID", "NSStoreModelVersionHashes", "NSStoreModelVersionHashesVersion",
        "NSStoreModelVersionIdentifiers", "NSStoreModelVersionHashesDigest", "NSStoreModelVersionChecksumKey",
        "NSPersistenceFrameworkVersion", "_NSAutoVacuumLevel", modelKey, modelHashKey,
    ]

    /// The metadata of a new store for `model`, as a binary property list,
    /// with the application's keys of `keeping` (a store's metadata before a migration).
    package static func propertyList(for model: DataModel, uuid: String, storeType: String = "SQLite",
                                     keeping: [String: Any] = [:]) throws(StoreError) -> Data {
        let hashes = model.entityVersionHashes
        var metadata: [String: Any] = keeping.filter { !storeKeys.contains($0.key) }
        metadata.merge([
            "NSStoreType": storeType,
            "NSStoreUUID": uuid,
            "NSStoreModelVersionHashes": hashes,
            "NSStoreModelVersionHashesVersion": 3,
            "NSStoreModelVersionIdentifiers": model.versionIdentifiers.isEmpty ? [""] : model.versionIdentifiers,
            "NSStoreModelVersionHashesDigest": model.versionHashesDigest,
            "NSStoreModelVersionChecksumKey": model.versionChecksum,
            // The framework version of the newest stores Sift has been checked against.
            "NSPersistenceFrameworkVersion": 1344,
            "_NSAutoVacuumLevel": "2",
            modelKey: String(decoding: model.jsonData, as: UTF8.self),
            modelHashKey: model.versionHash,
        ]) { _, new in new }
        do {
            return try PropertyListSerialization.data(fromPropertyList: metadata, format: .binary, options: 0)
        } catch {
            throw .unexpected("the store's metadata does not serialize: \(error)")
        }
    }

    /// A metadata property list read back; nil when it is not one.
    package static func read(_ data: Data) -> [String: Any]? {
        PropertyLists.read(data) as? [String: Any]
    }

    /// The entity version hashes a store's metadata records.
    package static func hashes(_ metadata: [String: Any]) -> [String: Data] {
        (metadata["NSStoreModelVersionHashes"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Data }
    }
}

/// What a store file's catalog tables hold — its tables, metadata, model
/// cache and entities — read once, for opening a store and for inspecting
/// one, and the model that fits it.
struct StoreCatalog {
    let path: String
    let tables: Set<String>
    let metadata: [String: Any]
    /// The store's UUID (`Z_UUID`; Core Data's `NSStoreUUID`).
    let uuid: String?
    let modelCache: Data?
    /// The store's entities: number, name, and the parent's number (0 for a root).
    let entities: [(number: Int, name: String, parent: Int)]

    /// The catalog of the database on `connection`; nil when it has no
    /// tables at all (a new store, or one whose creation was cut short). A
    /// database that is not in Core Data's layout is an error.
    static func read(_ connection: SQLiteConnection, path: String) throws(StoreError) -> StoreCatalog? {
        let dialect = SQLiteDialect()
        do {
            let objects = try connection.query(dialect.catalogQuery)
            if objects.isEmpty { return nil }
            let tables = Set(objects.compactMap { row -> String? in
                if case .text("table") = row[0], case .text(let name) = row[1] { return name }
                return nil
            })
            guard CoreDataCatalog.requiredTables.allSatisfy(tables.contains) else {
                if tables.contains(CoreDataCatalog.requiredTables[0]) {
                    throw StoreError.damaged(path: path, reason: "it is in the layout of an earlier Sift, before Core Data's: "
                                             + "import its data into a new store")
                }
                throw StoreError.foreignDatabase(path: path, tables: tables.sorted())
            }
            let metadataRow = try connection.query(CoreDataCatalog.selectMetadata(in: dialect)).first
            guard case .blob(let data)? = metadataRow?.first, let metadata = StoreMetadata.read(data) else {
                throw StoreError.damaged(path: path, reason: "its metadata is not a property list")
            }
            var cache: Data?
            if tables.contains(CoreDataCatalog.modelCacheTable),
               case .blob(let blob)? = try connection.query(CoreDataCatalog.selectModelCache(in: dialect)).first?.first {
                cache = blob
            }
            let entities = try connection.query(CoreDataCatalog.selectEntities(in: dialect)).compactMap {
                row -> (number: Int, name: String, parent: Int)? in
                guard case .integer(let number) = row[0], case .text(let name) = row[1] else { return nil }
                let parent: Int = if case .integer(let p) = row[2] { Int(p) } else { 0 }
                return (Int(number), name, parent)
            }
            let uuid: String? = if case .text(let text)? = metadataRow?.dropFirst().first { text } else { nil }
            return StoreCatalog(path: path, tables: tables, metadata: metadata, uuid: uuid, modelCache: cache, entities: entities)
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError {
            throw StoreError(error, path: path)
        } catch {
            throw .damaged(path: path, reason: "\(error)")
        }
    }

    /// The entity version hashes the metadata records.
    var hashes: [String: Data] { StoreMetadata.hashes(metadata) }

    /// Whether Core Data keeps persistent history in the store.
    var tracksHistory: Bool { CoreDataCatalog.historyTables.contains(where: tables.contains) }

    /// The store's model: `expected` when it is the model that made the
    /// store (Sift's recorded hash, or else Core Data's entity hashes),
    /// otherwise the model Sift keeps in the metadata, or the model cache;
    /// nil when there is none.
    func model(expected: DataModel?) throws(StoreError) -> DataModel? {
        if let json = metadata[StoreMetadata.modelKey] as? String {
            // A store Sift made: its model in Sift's JSON form, and that form's hash.
            let hash = metadata[StoreMetadata.modelHashKey] as? String ?? ""
            if let expected {
                guard expected.versionHash == hash else {
                    throw .modelMismatch(path: path, storeHash: hash, modelHash: expected.versionHash)
                }
                return expected
            }
            let stored: DataModel
            do {
                stored = try DataModel(json: Data(json.utf8))
            } catch {
                throw .damaged(path: path, reason: "the model it holds does not load: \(error)")
            }
            guard stored.versionHash == hash else {
                throw .damaged(path: path, reason: "the model it holds is not the one its hash names (\(hash))")
            }
            return stored
        }
        if let expected {
            // A store Apple's framework wrote, with its model given.
            let differences = Self.differences(expected.entityVersionHashes, hashes)
            guard differences.isEmpty else {
                throw .modelDoesNotMatchStore(path: path, reason: differences.joined(separator: "; "))
            }
            return expected
        }
        guard let modelCache else { return nil }
        do {
            return try DataModel(modelCache: modelCache)
        } catch {
            throw .damaged(path: path, reason: "its model cache does not read: \(error)")
        }
    }

    /// Each entity of `model` with its number in the store (matched by name,
    /// or by the name it had before a rename); Core Data's numbering when
    /// the store does not name them all.
    func entityNumbers(for model: DataModel) -> [String: Int] {
        let numbers = Dictionary(entities.map { ($0.name, $0.number) }, uniquingKeysWith: { a, _ in a })
        var byEntity: [String: Int] = [:]
        for entity in model.entities {
            if let number = numbers[entity.name] ?? entity.renamingIdentifier.flatMap({ numbers[$0] }) {
                byEntity[entity.name] = number
            }
        }
        return byEntity.count == model.entities.count ? byEntity : SQLSchema.entityNumbers(of: model)
    }

    /// How a model's entity hashes differ from a store's, entity by entity.
    static func differences(_ model: [String: Data], _ store: [String: Data]) -> [String] {
        var result: [String] = []
        for name in Set(model.keys).union(store.keys).sorted() {
            switch (model[name], store[name]) {
            case (nil, _): result.append("the store has entity '\(name)', the model has not")
            case (_, nil): result.append("the model has entity '\(name)', the store has not")
            case (let a?, let b?) where a != b: result.append("entity '\(name)' differs")
            default: break
            }
        }
        return result
    }
}
