// Store stage: Core Data's version hashes of entities and models, which
// a store's metadata records (`NSStoreModelVersionHashes`) to tell the model
// that made it. With the same hashes, Apple's framework opens a store Sift
// wrote with no migration, and Sift picks the model version that made a
// Core Data store.
//
// An entity's hash is SHA-256 over its name, whether it is abstract, its
// superentity's hash, the hashes of its stored properties (inherited ones
// included) in name order, its hash modifier and its uniqueness
// constraints. The layout was checked against the hashes of every store in
// the Core Data fixtures (Tests/SiftTests/Model/VersionHashTests.swift).

import CCrypto
import Sift
import Foundation

extension DataModel {
    /// Each entity's version hash, by entity name: what Core Data records in
    /// a store's metadata.
    public var entityVersionHashes: [String: Data] {
        var hashes: [String: Data] = [:]
        for entity in entities { hashes[entity.name] = versionHash(of: entity) }
        return hashes
    }

    /// The hash of the entity and its ancestors, as Core Data computes it.
    ///
    /// - Parameter entity: An entity of the model.
    /// - Returns: The entity's 32-byte SHA-256 version hash.
    public func versionHash(of entity: Entity) -> Data {
        var bytes = HashInput()
        bytes.append(entity.name)
        bytes.append(UInt8(entity.isAbstract ? 1 : 0))
        if let parent = entity.superentity.flatMap({ self.entity(named: $0) }) { bytes.append(versionHash(of: parent)) }
        let attributes = entity.attributes.filter { $0.composite == nil && !$0.isTransient && $0.type != .objectID }
            .map { ($0.name, Self.hash(of: $0)) }
        let relationships = entity.relationships.filter { !$0.isTransient }
            .map { ($0.name, Self.hash(of: $0, in: entity)) }
        for (_, hash) in (attributes + relationships).sorted(by: { $0.0.utf16.lexicographicallyPrecedes($1.0.utf16) }) {
            bytes.append(hash)
        }
        bytes.append(entity.versionHashModifier ?? "")
        for constraint in entity.uniquenessConstraints.map({ $0.joined(separator: ".") })
            .sorted(by: { $0.utf16.lexicographicallyPrecedes($1.utf16) }) {
            bytes.append(constraint)
        }
        return bytes.sha256
    }

    /// `NSStoreModelVersionHashesDigest`: SHA-512 over each entity's name and
    /// hash, in name order, in base 64.
    public var versionHashesDigest: String {
        var bytes = HashInput()
        for (name, hash) in entityVersionHashes.sorted(by: { $0.key.utf16.lexicographicallyPrecedes($1.key.utf16) }) {
            bytes.append(name)
            bytes.append(hash)
        }
        return bytes.sha512.base64EncodedString()
    }

    /// `NSStoreModelVersionChecksumKey` (a model's `versionChecksum`):
    /// SHA-256 over the entity hashes in name order, in base 64.
    public var versionChecksum: String {
        var bytes = HashInput()
        for (_, hash) in entityVersionHashes.sorted(by: { $0.key.utf16.lexicographicallyPrecedes($1.key.utf16) }) {
            bytes.append(hash)
        }
        return bytes.sha256.base64EncodedString()
    }

    /// What every property's hash starts with: its name, its flags
    /// (optional 1, transient 2, read-only 4) and its hash modifier.
    private static func propertyHash(_ name: String, optional: Bool, transient: Bool, readOnly: Bool,
                                     modifier: String?) -> Data {
        var bytes = HashInput()
        bytes.append(name)
        bytes.append(UInt16((optional ? 1 : 0) | (transient ? 2 : 0) | (readOnly ? 4 : 0)))
        bytes.append(modifier ?? "")
        return bytes.sha256
    }

    static func hash(of attribute: Attribute) -> Data {
        if let derivation = attribute.derivation {
            // A derived attribute: its expression as Apple prints it, and its
            // filtering predicate (none).
            var bytes = HashInput()
            bytes.append(appleFormatOfDerivation(derivation))
            return bytes.sha256
        }
        if attribute.type == .composite {
            var bytes = HashInput()
            for element in attribute.elements.filter({ !$0.isTransient })
                .sorted(by: { $0.name.utf16.lexicographicallyPrecedes($1.name.utf16) }) {
                bytes.append(hash(of: element))
            }
            return bytes.sha256
        }
        var bytes = HashInput()
        bytes.append(propertyHash(attribute.name, optional: attribute.isOptional, transient: attribute.isTransient,
                                  readOnly: false, modifier: attribute.versionHashModifier))
        bytes.append(Int32(truncatingIfNeeded: attribute.type.coreDataCode))
        if attribute.allowsExternalStorage { bytes.append(UInt8(1)) }
        if attribute.preservesValueInHistoryOnDeletion { bytes.append(UInt8(1)) }
        return bytes.sha256
    }

    static func hash(of relationship: Relationship, in entity: Entity) -> Data {
        var bytes = HashInput()
        bytes.append(propertyHash(relationship.name, optional: relationship.isOptional, transient: relationship.isTransient,
                                  readOnly: false, modifier: relationship.versionHashModifier))
        bytes.append(relationship.destination)
        let isOwnInverse = relationship.inverse == relationship.name && relationship.destination == entity.name
        if let inverse = relationship.inverse, !isOwnInverse { bytes.append(inverse) }
        let maximum = relationship.isToMany ? relationship.maximumCount : 1
        bytes.append(Int32(truncatingIfNeeded: maximum))
        bytes.append(Int32(truncatingIfNeeded: relationship.minimumCount))
        if relationship.isOrdered { bytes.append(UInt16(1)) }
        return bytes.sha256
    }
}

/// Bytes to hash, appended as Core Data lays them out: strings as UTF-8
/// with no terminator, integers little-endian.
private struct HashInput {
    var data = Data()

    mutating func append(_ text: String) { data.append(contentsOf: Array(text.utf8)) }
    mutating func append(_ bytes: Data) { data.append(bytes) }
    mutating func append(_ value: UInt8) { data.append(value) }
    mutating func append(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
    mutating func append(_ value: Int32) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }

    var sha256: Data { digest(length: Int(SHA256_DIGEST_LENGTH), CCrypto.SHA256) }
    var sha512: Data { digest(length: Int(SHA512_DIGEST_LENGTH), CCrypto.SHA512) }

    /// The digest of the bytes by one of libcrypto's one-shot functions.
    private func digest(length: Int, _ function: (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?) -> UnsafeMutablePointer<UInt8>?)
        -> Data
    {
        var digest = [UInt8](repeating: 0, count: length)
        data.withUnsafeBytes { bytes in _ = function(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &digest) }
        return Data(digest)
    }
}

extension ModelBundle {
    /// The version whose entity version hashes are `hashes` (a store's
    /// `NSStoreModelVersionHashes`), with its name; nil when none is.
    /// Versions that do not load are passed over.
    ///
    /// - Parameter hashes: Each entity's version hash, by entity name.
    /// - Returns: The name and model of the first version, the current one
    ///   first, whose `entityVersionHashes` equal `hashes`; nil when none does.
    public func version(matching hashes: [String: Data]) -> (name: String, model: DataModel)? {
        // The current version first: the likeliest.
        for name in [currentVersionName] + versionNames.filter({ $0 != currentVersionName }) {
            if let model = try? model(version: name), model.entityVersionHashes == hashes { return (name, model) }
        }
        return nil
    }
}
