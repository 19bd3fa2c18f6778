// Store stage: the data-set format — a JSON file of a model and its
// objects, what the atomic store keeps and what `sift import` loads — read
// into row-cache nodes.
//
// Objects are listed by entity; each has an integer "id", its attributes by
// name, and its relationships as an id (to-one, or null) or an array of ids
// (to-many). Either side of a relationship with an inverse may be listed, or
// both when they agree; the loader derives the other side and rejects data
// whose two sides disagree, references to missing objects, and values of the
// wrong type.

import Foundation
import Sift

/// Why a data set cannot be loaded.
public struct DataSetError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong, in one line.
    public var message: String

    /// Creates an error with the given message.
    ///
    /// - Parameter message: What is wrong, in one line.
    public init(_ message: String) { self.message = message }

    public var description: String { "data set error: \(message)" }
}

/// A model and its objects, as row-cache nodes.
///
/// ```swift
/// let dataSet = try DataSet(model: model, objects: [
///     "Department": [["id": 1, "name": "Sales"]],
///     "Employee": [["id": 1, "name": "Ann", "age": 41, "department": 1],
///                  ["id": 2, "name": "Bob", "age": 17, "department": 1]],
/// ])
/// print(dataSet.nodes.count)                   // 3
/// print(dataSet.nodes[0].toMany[0] ?? [])      // [1, 2]: Sales's employees, from the inverse
/// let cache = dataSet.makeRowCache()
/// print(cache.count)                           // 3
/// ```
public struct DataSet: Sendable {
    /// The model.
    public let model: DataModel
    /// Every object, as a node (table by table, in primary-key order).
    public let nodes: [RowNode]

    /// A data set of nodes already built (of `model`, one per object).
    ///
    /// - Parameters:
    ///   - model: The model the nodes follow.
    ///   - nodes: Every object of the data set, as a node.
    public init(model: DataModel, nodes: [RowNode]) {
        self.model = model
        self.nodes = nodes
    }

    /// Reads a data set from its JSON form: `{"model": {…}, "objects": {"Entity": [{…}]}}`.
    ///
    /// - Parameter data: The data set's JSON text, as UTF-8 bytes.
    /// - Throws: `DataSetError` when the text is empty or not valid JSON, when
    ///   its `"model"` is missing or does not load, when its `"objects"` are
    ///   missing or not arrays of objects by entity, or when the objects do not
    ///   fit the model (as `init(model:objects:)` checks).
    public init(json data: Data) throws(DataSetError) {
        guard data.contains(where: { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }) else {
            throw DataSetError("the file is empty")
        }
        // One pass over the text, straight into values; the model's member
        // goes to the model reader as the bytes it was read from.
        let members: [(key: String, value: PredicateValue, range: Range<Int>)]
        do {
            members = try JSONReader.members(from: data)
        } catch {
            throw DataSetError("not valid JSON: \(error)")
        }
        guard let modelMember = members.last(where: { $0.key == "model" }) else {
            throw DataSetError("the data set has no \"model\"")
        }
        let model: DataModel
        do {
            model = try DataModel(json: data.subdata(in: data.startIndex + modelMember.range.lowerBound
                                                        ..< data.startIndex + modelMember.range.upperBound))
        } catch ModelError.unreadable(_, let reason) {
            throw DataSetError("its \"model\" does not load: \(reason)")
        } catch {
            throw DataSetError("its \"model\" does not load: \(error)")
        }
        var objects: [String: [[String: PredicateValue]]] = [:]
        switch members.last(where: { $0.key == "objects" })?.value {
        case nil:
            throw DataSetError("cannot read the objects: the data set has no \"objects\"")
        case .dictionary(let lists)?:
            for (entityName, list) in lists {
                guard case .array(let items) = list else {
                    throw DataSetError("cannot read the objects: the objects of '\(entityName)' are not an array")
                }
                var rows: [[String: PredicateValue]] = []
                rows.reserveCapacity(items.count)
                for item in items {
                    guard case .dictionary(let object) = item else {
                        throw DataSetError("cannot read the objects: an object of '\(entityName)' is not a JSON object")
                    }
                    rows.append(object)
                }
                objects[entityName] = rows
            }
        default:
            throw DataSetError("cannot read the objects: \"objects\" is not an object of arrays by entity")
        }
        try self.init(model: model, objects: objects)
    }

    /// Reads a data set from a file.
    ///
    /// - Parameter url: The file's URL.
    /// - Throws: `DataSetError` when the file cannot be read, or when its
    ///   contents are not a data set (as `init(json:)` reports, with the file's
    ///   path in front).
    public init(contentsOf url: URL) throws(DataSetError) {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw DataSetError("cannot read '\(url.path)'")
        }
        do {
            try self.init(json: data)
        } catch {
            throw DataSetError("'\(url.path)': \(error.message)")
        }
    }

    /// Builds nodes from objects given as dictionaries, by entity name.
    /// An entity and its subentities share their root's ids: each object is
    /// listed under its own entity, with an id no relative uses.
    ///
    /// - Parameters:
    ///   - model: The model the objects follow.
    ///   - objects: Each entity's objects by entity name: dictionaries with an
    ///     integer `"id"`, attribute values by name, and relationships as an id
    ///     (or null) for a to-one and an array of ids for a to-many.
    /// - Throws: `DataSetError` when an entity is not in the model, an object
    ///   has no integer `"id"` or shares one with another object of its table,
    ///   a key is not a property of the entity, an attribute's value does not
    ///   fit its type or a non-optional attribute has none, a relationship is
    ///   not listed as ids, the two sides of a relationship disagree, a link
    ///   names a missing object, or a to-one has several destinations.
    public init(model: DataModel, objects: [String: [[String: PredicateValue]]]) throws(DataSetError) {
        var keyed: [String: [(id: Int64, properties: [String: PredicateValue])]] = [:]
        for (entityName, list) in objects {
            var rows: [(id: Int64, properties: [String: PredicateValue])] = []
            rows.reserveCapacity(list.count)
            for object in list {
                guard case .int(let id)? = object["id"] else {
                    throw DataSetError("an object of '\(entityName)' has "
                        + (object["id"].map { "the \"id\" \($0), which is not a 64-bit integer" } ?? "no integer \"id\""))
                }
                var properties = object
                properties["id"] = nil
                rows.append((id, properties))
            }
            keyed[entityName] = rows
        }
        try self.init(model: model, keyedObjects: keyed)
    }

    /// Builds nodes from objects given with their keys apart from their
    /// properties (so that an attribute may be named `id`), as
    /// ``init(model:objects:)`` does.
    init(model: DataModel, keyedObjects objects: [String: [(id: Int64, properties: [String: PredicateValue])]]) throws(DataSetError) {
        self.model = model
        // Every object's entity and attributes, by root table and id.
        var rows: [[Int64: (entity: Int, values: [PredicateValue])]] = Array(repeating: [:], count: model.entities.count)
        // listed[declaring entity][relationship name] = links as listed from that side.
        var listed: [[String: Set<Link>]] = Array(repeating: [:], count: model.entities.count)

        for entityName in objects.keys.sorted() {
            let list = objects[entityName]!
            guard let entity = model.entity(named: entityName) else {
                throw DataSetError("objects are listed for '\(entityName)', which is not an entity of the model")
            }
            let root = entity.rootIndex
            // What each object is read against, resolved once per entity, not per object.
            let propertyNames = Set(entity.attributes.map(\.name) + entity.relationships.map(\.name))
            let attributes = entity.attributes.map { ($0.name, $0.type, $0.defaultValue, $0.isOptional) }
            let relationships = entity.relationships.map {
                ($0.name, $0.isToMany, model.declaringEntity(of: $0.name, from: entity).index)
            }
            rows[root].reserveCapacity(rows[root].count + list.count)
            for (id, object) in list {
                if let other = rows[root][id] {
                    let otherName = model.entities[other.entity].name
                    throw DataSetError(otherName == entityName ? "two objects of '\(entityName)' have the id \(id)"
                        : "'\(entityName)' \(id) and '\(otherName)' \(id) share an id, and their entities share a table")
                }
                for key in object.keys where !propertyNames.contains(key) {
                    throw DataSetError("'\(entityName)' \(id) has a value for '\(key)', which is not a property of the entity")
                }
                var row: [PredicateValue] = []
                row.reserveCapacity(attributes.count)
                for (name, type, defaultValue, isOptional) in attributes {
                    let raw = object[name] ?? defaultValue ?? .null
                    guard let value = Self.convert(raw, to: type) else {
                        throw DataSetError("'\(entityName)' \(id): '\(name)' \(type.mismatch(raw))")
                    }
                    if value == .null && !isOptional {
                        throw DataSetError("'\(entityName)' \(id): '\(name)' is not optional but has no value")
                    }
                    row.append(value)
                }
                rows[root][id] = (entity.index, row)
                for (name, isToMany, owner) in relationships {
                    guard let raw = object[name] else { continue }
                    // Links are kept under the entity that declares the relationship.
                    switch (raw, isToMany) {
                    case (.null, false):
                        listed[owner][name, default: []].formUnion([])
                    case (.int(let target), false):
                        listed[owner][name, default: []].insert(Link(id, target))
                    case (.array(let targets), true):
                        for target in targets {
                            guard case .int(let t) = target else {
                                throw DataSetError("'\(entityName)' \(id): '\(name)' must list integer ids")
                            }
                            listed[owner][name, default: []].insert(Link(id, t))
                        }
                    default:
                        throw DataSetError("'\(entityName)' \(id): '\(name)' must be "
                            + (isToMany ? "an array of ids" : "an id or null"))
                    }
                }
            }
        }

        // Each relationship's links: those listed from its side, or derived
        // from its inverse's side; both must agree when both are listed.
        var toOne: [[Int64: [Int64?]]] = Array(repeating: [:], count: model.entities.count)
        var toMany: [[Int64: [[Int64]?]]] = Array(repeating: [:], count: model.entities.count)
        for (root, table) in rows.enumerated() {
            toOne[root].reserveCapacity(table.count)
            toMany[root].reserveCapacity(table.count)
            for (id, row) in table {
                let entity = model.entities[row.entity]
                toOne[root][id] = Array(repeating: nil, count: entity.toOneCount)
                toMany[root][id] = Array(repeating: [], count: entity.toManyCount)
            }
        }
        for entity in model.entities {
            for relationship in entity.declaredRelationships {
                let destination = model.entity(named: relationship.destination)!
                let own = listed[entity.index][relationship.name]
                let inverseOwner = relationship.inverse.map { model.declaringEntity(of: $0, from: destination) }
                let fromInverse = inverseOwner.flatMap { listed[$0.index][relationship.inverse!] }
                    .map { Set($0.map { Link($0.target, $0.source) }) }
                if let own, let fromInverse, own != fromInverse {
                    throw DataSetError("'\(entity.name).\(relationship.name)' and its inverse '\(destination.name).\(relationship.inverse!)' disagree")
                }
                let links = (own ?? fromInverse ?? []).sorted { ($0.source, $0.target) < ($1.source, $1.target) }
                for link in links {
                    guard let source = rows[entity.rootIndex][link.source], model.isEntity(at: source.entity, kindOf: entity.index) else {
                        throw DataSetError("'\(entity.name).\(relationship.name)' links the missing '\(entity.name)' \(link.source)")
                    }
                    guard let target = rows[destination.rootIndex][link.target],
                          model.isEntity(at: target.entity, kindOf: destination.index) else {
                        throw DataSetError("'\(entity.name)' \(link.source): '\(relationship.name)' points to the missing '\(destination.name)' \(link.target)")
                    }
                    if relationship.isToMany {
                        toMany[entity.rootIndex][link.source]![relationship.slot]!.append(link.target)
                    } else {
                        guard toOne[entity.rootIndex][link.source]![relationship.slot] == nil else {
                            throw DataSetError("'\(entity.name)' \(link.source): the to-one '\(relationship.name)' has several destinations")
                        }
                        toOne[entity.rootIndex][link.source]![relationship.slot] = link.target
                    }
                }
            }
        }
        // Each entity's rows in one batch, by column, with their to-many
        // keys; the nodes in the order of their root tables and keys.
        var builders: [Int: RowBatchBuilder] = [:]
        var order: [(entity: Int, row: Int)] = []
        order.reserveCapacity(rows.reduce(0) { $0 + $1.count })
        for (root, table) in rows.enumerated() {
            for id in table.keys.sorted() {
                guard let row = table[id] else { continue }
                let entity = model.entities[row.entity]
                let builder = builders[row.entity] ?? RowBatchBuilder(
                    entity: row.entity, root: root, attributeCount: entity.attributes.count,
                    toOneCount: entity.toOneCount, toManyCount: entity.toManyCount, storesToMany: true)
                builders[row.entity] = builder
                order.append((row.entity, builder.count))
                builder.append(key: id, version: 1, values: row.values, toOne: toOne[root][id] ?? [],
                               toMany: toMany[root][id] ?? [])
            }
        }
        let now = Date().timeIntervalSinceReferenceDate
        let batches = builders.mapValues { $0.batch(fetchTimestamp: now) }
        nodes = order.compactMap { batches[$0.entity]?.node(at: $0.row) }
    }

    /// A row cache holding every object of the data set.
    ///
    /// - Returns: A new cache for the data set's model, holding its nodes.
    public func makeRowCache() -> RowCache {
        let cache = RowCache(model: model)
        cache.store(nodes)
        return cache
    }

    /// Converts a JSON value to an attribute's type, or nil when it does not
    /// fit (`AttributeType.convert(_:)`).
    ///
    /// - Parameters:
    ///   - value: The value as read from JSON.
    ///   - type: The attribute type to convert it to.
    /// - Returns: The value as `type` holds it, or nil when it does not fit.
    public static func convert(_ value: PredicateValue, to type: AttributeType) -> PredicateValue? {
        type.convert(value)
    }
}

/// One link of a relationship: source id to destination id.
struct Link: Hashable {
    var source: Int64
    var target: Int64
    init(_ source: Int64, _ target: Int64) {
        self.source = source
        self.target = target
    }
}

extension DataSetError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}
