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
        // Each dictionary as it is, "id" and all (a copy without it would cost
        // one per object): the builder skips the key "id".
        var keyed: [String: [(id: Int64, properties: [String: PredicateValue])]] = [:]
        keyed.reserveCapacity(objects.count)
        for (entityName, list) in objects {
            var rows: [(id: Int64, properties: [String: PredicateValue])] = []
            rows.reserveCapacity(list.count)
            for object in list {
                guard case .int(let id)? = object["id"] else {
                    throw DataSetError("an object of '\(entityName)' has "
                        + (object["id"].map { "the \"id\" \($0), which is not a 64-bit integer" } ?? "no integer \"id\""))
                }
                rows.append((id, object))
            }
            keyed[entityName] = rows
        }
        try self.init(model: model, keyedObjects: keyed, skippingIDKey: true)
    }

    /// Builds nodes from objects given with their keys apart from their
    /// properties (so that an attribute may be named `id`), as
    /// ``init(model:objects:)`` does.
    init(model: DataModel, keyedObjects objects: [String: [(id: Int64, properties: [String: PredicateValue])]]) throws(DataSetError) {
        try self.init(model: model, keyedObjects: objects, skippingIDKey: false)
    }

    /// The objects of one root table, in the order listed.
    private struct Table {
        var ids: [Int64] = []
        var entities: [Int] = []
        var values: [[PredicateValue]] = []
        /// Each id's place in the arrays above.
        var places = Places()
    }

    /// Each id of a table and its place: an array by id when the ids are
    /// dense (most data sets count from 1), a dictionary otherwise.
    private struct Places {
        private var first: Int64 = 0
        private var byID: [Int] = []
        private var dictionary: [Int64: Int] = [:]

        init() {}

        /// Places for ids from `lowest` to `highest`, `count` of them.
        init(lowest: Int64, highest: Int64, count: Int) {
            let (span, overflow) = highest.subtractingReportingOverflow(lowest)
            guard !overflow, span >= 0, span < 1024 + 2 * Int64(min(count, 1 << 40)) else {
                dictionary.reserveCapacity(count)
                return
            }
            first = lowest
            byID = Array(repeating: -1, count: Int(span) + 1)
        }

        /// The index in `byID` of `id`, or nil when it is out of its range.
        private func offset(_ id: Int64) -> Int? {
            guard id >= first else { return nil }
            let (offset, overflow) = id.subtractingReportingOverflow(first)
            guard !overflow, offset < Int64(byID.count) else { return nil }
            return Int(offset)
        }

        subscript(id: Int64) -> Int? {
            get {
                guard !byID.isEmpty else { return dictionary[id] }
                guard let offset = offset(id), byID[offset] >= 0 else { return nil }
                return byID[offset]
            }
            set {
                if !byID.isEmpty {
                    if let offset = offset(id) {
                        byID[offset] = newValue ?? -1
                        return
                    }
                    // An id out of the range counted (not met): by dictionary from now on.
                    for (offset, place) in byID.enumerated() where place >= 0 {
                        dictionary[first + Int64(offset)] = place
                    }
                    byID = []
                }
                dictionary[id] = newValue
            }
        }
    }

    /// Builds nodes from keyed objects; with `skippingIDKey`, the key "id"
    /// of a property list is the object's key again, not a property.
    private init(model: DataModel, keyedObjects objects: [String: [(id: Int64, properties: [String: PredicateValue])]],
                 skippingIDKey: Bool) throws(DataSetError) {
        self.model = model
        // Every object's entity and attributes, by root table.
        var tables = Array(repeating: Table(), count: model.entities.count)
        // The range of each table's ids, for their places.
        var ranges: [(lowest: Int64, highest: Int64, count: Int)?] = Array(repeating: nil, count: model.entities.count)
        for (entityName, list) in objects {
            guard let root = model.entity(named: entityName)?.rootIndex else { continue }
            for (id, _) in list {
                ranges[root] = ranges[root].map { (min($0.lowest, id), max($0.highest, id), $0.count + 1) } ?? (id, id, 1)
            }
        }
        for (root, range) in ranges.enumerated() {
            guard let range else { continue }
            tables[root].places = Places(lowest: range.lowest, highest: range.highest, count: range.count)
        }
        // listed[declaring entity][relationship name] = links as listed from
        // that side (in any order, repeats and all).
        var listed: [[String: [Link]]] = Array(repeating: [:], count: model.entities.count)

        for entityName in objects.keys.sorted() {
            let list = objects[entityName]!
            guard let entity = model.entity(named: entityName) else {
                throw DataSetError("objects are listed for '\(entityName)', which is not an entity of the model")
            }
            let root = entity.rootIndex
            // What each object is read against, resolved once per entity, not
            // per object; each property has a place: the attributes', then the
            // relationships'.
            let attributes = entity.attributes.map { ($0.name, $0.type, $0.defaultValue, $0.isOptional) }
            let relationships = entity.relationships.map {
                ($0.name, $0.isToMany, model.declaringEntity(of: $0.name, from: entity).index)
            }
            var placeOf: [String: Int] = [:]
            for (place, name) in (attributes.map(\.0) + relationships.map(\.0)).enumerated() where placeOf[name] == nil {
                placeOf[name] = place
            }
            // Each object's values by place, and this entity's links by
            // relationship (nil for a side not listed).
            var found: [PredicateValue?] = Array(repeating: nil, count: attributes.count + relationships.count)
            var links: [[Link]?] = Array(repeating: nil, count: relationships.count)
            let expected = tables[root].ids.count + list.count
            tables[root].ids.reserveCapacity(expected)
            tables[root].entities.reserveCapacity(expected)
            tables[root].values.reserveCapacity(expected)
            for (id, object) in list {
                if let other = tables[root].places[id] {
                    let otherName = model.entities[tables[root].entities[other]].name
                    throw DataSetError(otherName == entityName ? "two objects of '\(entityName)' have the id \(id)"
                        : "'\(entityName)' \(id) and '\(otherName)' \(id) share an id, and their entities share a table")
                }
                for place in found.indices { found[place] = nil }
                for (key, value) in object {
                    if skippingIDKey && key == "id" { continue }
                    guard let place = placeOf[key] else {
                        throw DataSetError("'\(entityName)' \(id) has a value for '\(key)', which is not a property of the entity")
                    }
                    found[place] = value
                }
                var row: [PredicateValue] = []
                row.reserveCapacity(attributes.count)
                for (place, (name, type, defaultValue, isOptional)) in attributes.enumerated() {
                    let raw = found[place] ?? defaultValue ?? .null
                    guard let value = Self.convert(raw, to: type) else {
                        throw DataSetError("'\(entityName)' \(id): '\(name)' \(type.mismatch(raw))")
                    }
                    if value == .null && !isOptional {
                        throw DataSetError("'\(entityName)' \(id): '\(name)' is not optional but has no value")
                    }
                    row.append(value)
                }
                tables[root].places[id] = tables[root].ids.count
                tables[root].ids.append(id)
                tables[root].entities.append(entity.index)
                tables[root].values.append(row)
                for (index, (name, isToMany, _)) in relationships.enumerated() {
                    guard let raw = found[attributes.count + index] else { continue }
                    // A side is listed by a null to-one or by a link.
                    switch (raw, isToMany) {
                    case (.null, false):
                        if links[index] == nil { links[index] = [] }
                    case (.int(let target), false):
                        if links[index] == nil { links[index] = [] }
                        links[index]!.append(Link(id, target))
                    case (.array(let targets), true):
                        for target in targets {
                            guard case .int(let t) = target else {
                                throw DataSetError("'\(entityName)' \(id): '\(name)' must list integer ids")
                            }
                            if links[index] == nil { links[index] = [] }
                            links[index]!.append(Link(id, t))
                        }
                    default:
                        throw DataSetError("'\(entityName)' \(id): '\(name)' must be "
                            + (isToMany ? "an array of ids" : "an id or null"))
                    }
                }
            }
            // Links are kept under the entity that declares the relationship.
            for (index, (name, _, owner)) in relationships.enumerated() {
                guard let own = links[index] else { continue }
                listed[owner][name, default: []].append(contentsOf: own)
            }
        }

        // Each relationship's links: those listed from its side, or derived
        // from its inverse's side; both must agree when both are listed.
        var toOne: [[[Int64?]]] = tables.map { table in
            table.entities.map { Array(repeating: nil, count: model.entities[$0].toOneCount) }
        }
        var toMany: [[[[Int64]?]]] = tables.map { table in
            table.entities.map { Array(repeating: [], count: model.entities[$0].toManyCount) }
        }
        for entity in model.entities {
            for relationship in entity.declaredRelationships {
                let destination = model.entity(named: relationship.destination)!
                let own = listed[entity.index][relationship.name].map { Self.sortedOnce($0) }
                let inverseOwner = relationship.inverse.map { model.declaringEntity(of: $0, from: destination) }
                let fromInverse = inverseOwner.flatMap { listed[$0.index][relationship.inverse!] }
                    .map { Self.sortedOnce($0.map { Link($0.target, $0.source) }) }
                if let own, let fromInverse, own != fromInverse {
                    throw DataSetError("'\(entity.name).\(relationship.name)' and its inverse '\(destination.name).\(relationship.inverse!)' disagree")
                }
                let sources = tables[entity.rootIndex]
                let targets = tables[destination.rootIndex]
                for link in own ?? fromInverse ?? [] {
                    guard let source = sources.places[link.source], model.isEntity(at: sources.entities[source], kindOf: entity.index) else {
                        throw DataSetError("'\(entity.name).\(relationship.name)' links the missing '\(entity.name)' \(link.source)")
                    }
                    guard let target = targets.places[link.target], model.isEntity(at: targets.entities[target], kindOf: destination.index) else {
                        throw DataSetError("'\(entity.name)' \(link.source): '\(relationship.name)' points to the missing '\(destination.name)' \(link.target)")
                    }
                    if relationship.isToMany {
                        toMany[entity.rootIndex][source][relationship.slot]!.append(link.target)
                    } else {
                        guard toOne[entity.rootIndex][source][relationship.slot] == nil else {
                            throw DataSetError("'\(entity.name)' \(link.source): the to-one '\(relationship.name)' has several destinations")
                        }
                        toOne[entity.rootIndex][source][relationship.slot] = link.target
                    }
                }
            }
        }
        // Each entity's rows in one batch, by column, with their to-many
        // keys; the nodes in the order of their root tables and keys.
        var builders: [RowBatchBuilder?] = Array(repeating: nil, count: model.entities.count)
        var order: [(entity: Int, row: Int)] = []
        order.reserveCapacity(tables.reduce(0) { $0 + $1.ids.count })
        for (root, table) in tables.enumerated() {
            let ids = table.ids
            // By key (most lists come in key order already).
            let places = zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 } ? Array(ids.indices)
                : ids.indices.sorted { ids[$0] < ids[$1] }
            for place in places {
                let entityIndex = table.entities[place]
                let builder: RowBatchBuilder
                if let existing = builders[entityIndex] {
                    builder = existing
                } else {
                    let entity = model.entities[entityIndex]
                    builder = RowBatchBuilder(entity: entityIndex, root: root, attributeCount: entity.attributes.count,
                                              toOneCount: entity.toOneCount, toManyCount: entity.toManyCount, storesToMany: true)
                    builders[entityIndex] = builder
                }
                order.append((entityIndex, builder.count))
                builder.append(key: ids[place], version: 1, values: table.values[place], toOne: toOne[root][place],
                               toMany: toMany[root][place])
            }
        }
        let now = Date().timeIntervalSinceReferenceDate
        let batches = builders.map { $0?.batch(fetchTimestamp: now) }
        nodes = order.compactMap { batches[$0.entity]?.node(at: $0.row) }
    }

    /// Links in (source, target) order, each once: a side's links as a set
    /// compares and is walked.
    private static func sortedOnce(_ links: [Link]) -> [Link] {
        var links = links
        if !zip(links, links.dropFirst()).allSatisfy({ ($0.source, $0.target) < ($1.source, $1.target) }) {
            links.sort { ($0.source, $0.target) < ($1.source, $1.target) }
            var kept = 0
            for place in links.indices where kept == 0 || links[kept - 1] != links[place] {
                links[kept] = links[place]
                kept += 1
            }
            links.removeLast(links.count - kept)
        }
        return links
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
