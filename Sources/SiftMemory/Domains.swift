// Memory lowering: the objects a model's predicates evaluate against.
//
// `RowNodeDomain` reads row-cache nodes: attributes by slot, relationships by
// primary key through a snapshot of the cache. `KeyValueDomain` reads any
// `KeyValueRecord` by name, so `[String: PredicateValue]` dictionaries and
// users' own types can be filtered with the same compiled predicates.
// (Predicates bound without a model evaluate over `DynamicDomain` and
// `ValueTreeDomain`, in DynamicValues.swift.)

import SiftModel
import SiftTree
import SiftValues

/// Evaluates against row-cache nodes, following relationships through a
/// snapshot of the cache. A to-many relationship a node has not loaded counts
/// as empty: whoever evaluates store nodes in memory loads them first.
public struct RowNodeDomain: EvaluationDomain, Sendable {
    public typealias Object = RowNode

    /// The nodes relationships lead to.
    public let snapshot: RowSnapshot
    /// The model the nodes follow.
    public let model: DataModel

    /// The name objects of each entity are referred to by: their root
    /// entity's (an object is one row of its root's table), by entity index.
    let referenceNames: [String]

    /// A domain over the nodes in `cache` now.
    public init(cache: RowCache) {
        self.snapshot = cache.snapshot()
        self.model = cache.model
        self.referenceNames = cache.referenceNames
    }

    /// A to-one or to-many slot, and the index of the destination entity.
    public struct RelationshipHandle: Sendable {
        let slot: Int
        let destination: Int
    }

    public func handle(for attribute: AttributeReference) -> Int { attribute.slot }

    public func handle(for relationship: RelationshipReference) -> RelationshipHandle {
        RelationshipHandle(slot: relationship.slot, destination: model.entity(named: relationship.destination)!.index)
    }

    @inline(__always)
    public func value(_ slot: Int, of node: RowNode) -> PredicateValue { node.values[slot] }

    @inline(__always)
    public func object(_ h: RelationshipHandle, of node: RowNode) -> RowNode? {
        node.toOne[h.slot].flatMap { snapshot.node(entity: h.destination, primaryKey: $0) }
    }

    public func objects(_ h: RelationshipHandle, of node: RowNode) -> [RowNode] {
        (node.toMany[h.slot] ?? []).compactMap { snapshot.node(entity: h.destination, primaryKey: $0) }
    }

    @inline(__always)
    public func forEach(_ h: RelationshipHandle, of node: RowNode, _ body: (RowNode) -> Bool) -> Bool {
        for key in node.toMany[h.slot] ?? [] {
            if let member = snapshot.node(entity: h.destination, primaryKey: key), !body(member) { return false }
        }
        return true
    }

    public func reference(to node: RowNode) -> PredicateValue {
        .object(ObjectReference(entity: referenceNames[node.id.root], id: node.id.primaryKey))
    }
}

/// Something a predicate can read by key: a dictionary, or a user's type.
///
/// ```swift
/// struct Person: KeyValueRecord {
///     var name: String
///     var age: Int
///     func value(forKey key: String) -> KeyValueItem {
///         switch key {
///         case "name": .value(.string(name))
///         case "age": .value(.int(Int64(age)))
///         default: .value(.null)
///         }
///     }
/// }
/// ```
public protocol KeyValueRecord {
    /// The value of an attribute or relationship.
    func value(forKey key: String) -> KeyValueItem
    /// A reference that identifies this object, for `SELF == %@`; nil when
    /// the object has none.
    var objectReference: ObjectReference? { get }
}

extension KeyValueRecord {
    public var objectReference: ObjectReference? { nil }
}

/// What a key-value record holds under a key.
public enum KeyValueItem {
    /// An attribute's value.
    case value(PredicateValue)
    /// A to-one relationship's object (nil when empty).
    case record((any KeyValueRecord)?)
    /// A to-many relationship's objects.
    case records([any KeyValueRecord])
}

/// Dictionaries are records: attributes are their values, a to-one
/// relationship is a nested dictionary, a to-many relationship an array of
/// them, and the key "self" may hold the object's reference.
extension Dictionary: KeyValueRecord where Key == String, Value == PredicateValue {
    public func value(forKey key: String) -> KeyValueItem {
        switch self[key] {
        case .dictionary(let d)?: .record(d)
        case .array(let members)? where members.contains(where: { if case .dictionary = $0 { true } else { false } }):
            .records(members.compactMap { if case .dictionary(let d) = $0 { d } else { nil } })
        case let value?: .value(value)
        case nil: .value(.null)
        }
    }

    public var objectReference: ObjectReference? {
        if case .object(let reference)? = self["self"] { return reference }
        return nil
    }
}

/// Evaluates against key-value records, reading properties by name.
public struct KeyValueDomain: EvaluationDomain, Sendable {
    public typealias Object = any KeyValueRecord

    /// Creates the domain.
    public init() {}

    public func handle(for attribute: AttributeReference) -> String { attribute.name }
    public func handle(for relationship: RelationshipReference) -> String { relationship.name }

    public func value(_ key: String, of record: any KeyValueRecord) -> PredicateValue {
        if case .value(let v) = record.value(forKey: key) { return v }
        return .null
    }

    public func object(_ key: String, of record: any KeyValueRecord) -> (any KeyValueRecord)? {
        if case .record(let r) = record.value(forKey: key) { return r }
        return nil
    }

    public func objects(_ key: String, of record: any KeyValueRecord) -> [any KeyValueRecord] {
        switch record.value(forKey: key) {
        case .records(let rs): rs
        case .record(let r?): [r]
        default: []
        }
    }

    public func reference(to record: any KeyValueRecord) -> PredicateValue {
        record.objectReference.map(PredicateValue.object) ?? .null
    }
}
