// Store stage: Sift's JSON data set as an atomic store's file format — one
// implementation of `AtomicStoreFormat`, the one `AtomicStore(url:)` opens.

import Foundation
import Sift

/// Sift's JSON data set (a model and its objects, see ``DataSet``) as an
/// atomic store's file format: each object's reference is its `id`, which is
/// also its primary key; the file carries its model.
///
/// ```swift
/// let store = try AtomicStore(url: URL(fileURLWithPath: "company.json"))   // this format
/// ```
public struct DataSetFormat: AtomicStoreFormat {
    /// The format.
    public init() {}

    /// The data set's model.
    ///
    /// - Parameter data: The whole file.
    /// - Returns: Its model.
    /// - Throws: `DataSetError` when the file is not a data set.
    public func model(in data: Data) throws -> DataModel? {
        try DataSet(json: data).model
    }

    /// Every object of the data set, its `id` as its reference.
    ///
    /// - Parameters:
    ///   - data: The whole file.
    ///   - model: The store's model.
    /// - Returns: Every object.
    /// - Throws: `DataSetError` when the file is not a data set.
    public func read(_ data: Data, model: DataModel) throws -> [AtomicNode<Int64>] {
        let dataSet = try DataSet(json: data)
        return dataSet.nodes.map { node in
            let entity = dataSet.model.entities[node.id.entity]
            var object = AtomicNode<Int64>(entityName: entity.name, reference: node.id.primaryKey)
            for attribute in entity.attributes where node.value(at: attribute.slot) != .null {
                object.values[attribute.name] = node.value(at: attribute.slot)
            }
            for relationship in entity.relationships {
                if relationship.isToMany {
                    if let members = node.toManyKeys(at: relationship.slot), !members.isEmpty { object.toMany[relationship.name] = members }
                } else if let target = node.toOneKey(at: relationship.slot) {
                    object.toOne[relationship.name] = target
                }
            }
            return object
        }
    }

    /// The data set of every object, with the store's model, keys sorted.
    ///
    /// - Parameters:
    ///   - nodes: Every object.
    ///   - model: The store's model.
    /// - Returns: The JSON document.
    /// - Throws: `DataSetError` when a value has no JSON form.
    public func write(_ nodes: [AtomicNode<Int64>], model: DataModel) throws -> Data {
        try write(nodes, metadata: [:], model: model)
    }

    /// The data set of every object, with the store's model and metadata (a
    /// top-level `"metadata"` object, when there is any), keys sorted.
    ///
    /// - Parameters:
    ///   - nodes: Every object.
    ///   - metadata: The store's metadata.
    ///   - model: The store's model.
    /// - Returns: The JSON document.
    /// - Throws: `DataSetError` when a value has no JSON form.
    public func write(_ nodes: [AtomicNode<Int64>], metadata: [String: PredicateValue], model: DataModel) throws -> Data {
        var objects: [String: [[String: Any]]] = [:]
        let encoder = JSONEncoder()
        for node in nodes {
            guard let entity = model.entity(named: node.entityName) else { throw DataSetError("no entity '\(node.entityName)'") }
            var object: [String: Any] = ["id": node.reference]
            for attribute in entity.attributes {
                let value = node.values[attribute.name] ?? .null
                guard let data = try? encoder.encode(value),
                      let json = try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed) else {
                    // Skipping it would write a file that no longer opens.
                    throw DataSetError("\(entity.name) \(node.reference): \(attribute.name) = \(value) has no JSON form")
                }
                object[attribute.name] = value == .null ? NSNull() : json
            }
            for relationship in entity.relationships {
                if relationship.isToMany {
                    object[relationship.name] = node.toMany[relationship.name] ?? []
                } else {
                    object[relationship.name] = node.toOne[relationship.name].map { $0 as Any } ?? NSNull()
                }
            }
            objects[entity.name, default: []].append(object)
        }
        var document: [String: Any] = ["model": try JSONSerialization.jsonObject(with: model.jsonData), "objects": objects]
        if !metadata.isEmpty { document["metadata"] = try Self.json(metadata) }
        return try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
    }

    /// Metadata as a JSON object.
    private static func json(_ metadata: [String: PredicateValue]) throws -> Any {
        let data = try JSONEncoder().encode(PredicateValue.dictionary(metadata))
        return try JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)
    }

    /// The file's top-level `"metadata"` object, read without building its objects.
    ///
    /// - Parameter url: The data set file.
    /// - Returns: The metadata; nil when the file has none (or does not exist).
    /// - Throws: `JSONReadError` when the file is not JSON.
    public func metadata(at url: URL) throws -> [String: PredicateValue]? {
        guard let data = try? Data(contentsOf: url), !data.isEmpty else { return nil }
        guard let member = try JSONReader.members(from: data).last(where: { $0.key == "metadata" }) else { return nil }
        guard case .dictionary(let metadata) = member.value else { throw DataSetError("its \"metadata\" is not an object") }
        return metadata
    }

    /// Replaces the file's top-level `"metadata"` object, keeping the rest
    /// of the document as it is: written beside the file, synced, renamed over it.
    ///
    /// - Parameters:
    ///   - metadata: The new metadata.
    ///   - url: The data set file.
    /// - Throws: `DataSetError` when the file is not a JSON object; a file system error when it cannot be
    ///   written (the file is left as it was).
    public func setMetadata(_ metadata: [String: PredicateValue], at url: URL) throws {
        guard var document = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] else {
            throw DataSetError("the file is not a JSON object")
        }
        document["metadata"] = metadata.isEmpty ? nil : try Self.json(metadata)
        let contents = try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        do {
            try contents.write(to: temporary)
            let handle = try FileHandle(forWritingTo: temporary)
            try handle.synchronize()
            try handle.close()
            guard rename(temporary.path, url.path) == 0 else { throw DataSetError(String(cString: strerror(errno))) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }

    /// A new object's reference: the key Sift gave it.
    ///
    /// - Parameters:
    ///   - entityName: The new object's entity.
    ///   - values: Its values.
    ///   - primaryKey: Its key.
    /// - Returns: `primaryKey`.
    /// - Throws: Nothing.
    public func newReference(entityName: String, values: [String: PredicateValue], primaryKey: Int64) throws -> Int64 {
        primaryKey
    }

    /// An object's key: its `id`.
    ///
    /// - Parameter reference: The object's `id`.
    /// - Returns: The same number.
    public func primaryKey(for reference: Int64) -> Int64? { reference }
}
