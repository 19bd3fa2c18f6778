// Store stage: a store's metadata, as Core Data keeps it — a binary property
// list with the store type, the model's entity version hashes (with their
// digest and checksum) and the model version identifiers — plus Sift's own
// keys, which Core Data ignores: the model in Sift's JSON form and its hash,
// so that Sift opens its stores with no model given.

import Foundation
import Sift

enum StoreMetadata {
    /// Sift's keys.
    static let modelKey = "SiftModel"
    static let modelHashKey = "SiftModelHash"

    /// The metadata of a new store for `model`, as a binary property list.
    static func propertyList(for model: DataModel, uuid: String) throws(StoreError) -> Data {
        let hashes = model.entityVersionHashes
        let metadata: [String: Any] = [
            "NSStoreType": "SQLite",
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
        ]
        do {
            return try PropertyListSerialization.data(fromPropertyList: metadata, format: .binary, options: 0)
        } catch {
            throw .unexpected("the store's metadata does not serialize: \(error)")
        }
    }

    /// A metadata property list read back; nil when it is not one.
    static func read(_ data: Data) -> [String: Any]? {
        PropertyLists.read(data) as? [String: Any]
    }

    /// The entity version hashes a store's metadata records.
    static func hashes(_ metadata: [String: Any]) -> [String: Data] {
        (metadata["NSStoreModelVersionHashes"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Data }
    }
}
