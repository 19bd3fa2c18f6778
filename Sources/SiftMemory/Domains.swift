// Stage 6a (memory lowering): the objects a model's predicates evaluate against.
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
///
/// ```swift
/// let cache = dataSet.makeRowCache()                       // employees 1 (age 41) and 2 (age 17)
/// guard let employee = model.entity(named: "Employee"),
///       let ageAttribute = employee.attribute(named: "age") else { return }
/// let age = AttributeReference(entity: "Employee", attribute: ageAttribute)
/// let employeeAge = BoundExpression(.attribute(BoundExpression(.evaluatedObject, type: .object("Employee")), age),
///                                   type: .integer)
/// let over30 = MemoryPredicate(.comparison(BoundComparison(employeeAge, .greaterThan, .constant(30, type: .integer))),
///                              domain: RowNodeDomain(cache: cache))      // age > 30, bound to Employee
/// let employees = cache.snapshot().nodes(entity: employee.index)
/// print(try over30.filter(employees).map(\.id.primaryKey))  // [1]
/// ```
public struct RowNodeDomain: EvaluationDomain, Sendable {
    public typealias Object = RowNode

    /// The nodes relationships lead to.
    public let snapshot: RowSnapshot
    /// The model the nodes follow.
    public let model: DataModel

    /// The name objects of each entity are referred to by: their root
    /// entity's (an object is one row of its root's table), by entity index.
    let referenceNames: [String]

    /// A domain over the nodes of a snapshot.
    ///
    /// - Parameter snapshot: The nodes relationships lead to.
    public init(snapshot: RowSnapshot) {
        self.snapshot = snapshot
        self.model = snapshot.model
        self.referenceNames = snapshot.model.entities.map(\.name)
    }

    /// A to-one or to-many slot, and the index of the destination entity.
    public struct RelationshipHandle: Sendable {
        let slot: Int
        let destination: Int
    }

    /// The attribute's slot in each node's values.
    ///
    /// - Parameter attribute: The attribute a bound predicate reads.
    /// - Returns: Its slot.
    public func handle(for attribute: AttributeReference) -> Int { attribute.slot }

    /// The relationship's slot in each node, and its destination entity.
    ///
    /// - Parameter relationship: The relationship a bound predicate follows.
    /// - Returns: Its slot and destination.
    public func handle(for relationship: RelationshipReference) -> RelationshipHandle {
        RelationshipHandle(slot: relationship.slot, destination: model.entity(named: relationship.destination)!.index)
    }

    /// The node's value in the attribute's slot.
    ///
    /// - Parameters:
    ///   - slot: The attribute's slot.
    ///   - node: The node to read.
    /// - Returns: The attribute's value; `.null` when it has none.
    @inline(__always)
    public func value(_ slot: Int, of node: RowNode) -> PredicateValue { node.value(at: slot) }

    /// The node a to-one relationship leads to, in the snapshot.
    ///
    /// - Parameters:
    ///   - relationship: The relationship's handle.
    ///   - node: The node to follow it from.
    /// - Returns: The related node, or nil when the relationship is empty or
    ///   its node is not in the snapshot.
    @inline(__always)
    public func object(_ relationship: RelationshipHandle, of node: RowNode) -> RowNode? {
        node.toOneKey(at: relationship.slot).flatMap { snapshot.node(entity: relationship.destination, primaryKey: $0) }
    }

    /// The nodes a to-many relationship leads to, in the snapshot.
    ///
    /// - Parameters:
    ///   - relationship: The relationship's handle.
    ///   - node: The node to follow it from.
    /// - Returns: The related nodes the snapshot holds, in the relationship's
    ///   order.
    public func objects(_ relationship: RelationshipHandle, of node: RowNode) -> [RowNode] {
        (node.toManyKeys(at: relationship.slot) ?? []).compactMap { snapshot.node(entity: relationship.destination, primaryKey: $0) }
    }

    /// Calls `body` with each node of a to-many relationship, without
    /// building an array of them.
    ///
    /// - Parameters:
    ///   - relationship: The relationship's handle.
    ///   - node: The node to follow it from.
    ///   - body: Called with each related node; returns false to stop.
    /// - Returns: False if `body` stopped early; true otherwise.
    @inline(__always)
    public func forEach(_ relationship: RelationshipHandle, of node: RowNode, _ body: (RowNode) -> Bool) -> Bool {
        for key in node.toManyKeys(at: relationship.slot) ?? [] {
            if let member = snapshot.node(entity: relationship.destination, primaryKey: key), !body(member) { return false }
        }
        return true
    }

    /// The node's object reference: its root entity's name and its primary key.
    ///
    /// - Parameter node: The node to identify.
    /// - Returns: `PredicateValue.object` with the node's reference.
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
    ///
    /// - Parameter key: The name of the attribute or relationship.
    /// - Returns: An attribute's value, a to-one relationship's record, or a
    ///   to-many relationship's records (`.value(.null)` for a key the object
    ///   does not have).
    func value(forKey key: String) -> KeyValueItem
    /// A reference that identifies this object, for `SELF == %@`; nil when
    /// the object has none.
    var objectReference: ObjectReference? { get }
}

extension KeyValueRecord {
    /// No reference, unless a record gives one.
    public var objectReference: ObjectReference? { nil }
}

/// A value that predicates read through a key-value record it gives, such
/// as a store's object, read through its context.
public protocol KeyValueRecordRepresentable {
    /// The record predicates read the value as.
    var keyValueRecord: any KeyValueRecord { get }
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

    /// The attribute's name.
    ///
    /// - Parameter attribute: The attribute a bound predicate reads.
    /// - Returns: Its name, the key records are read by.
    public func handle(for attribute: AttributeReference) -> String { attribute.name }
    /// The relationship's name.
    ///
    /// - Parameter relationship: The relationship a bound predicate follows.
    /// - Returns: Its name, the key records are read by.
    public func handle(for relationship: RelationshipReference) -> String { relationship.name }

    /// The record's value for the key.
    ///
    /// - Parameters:
    ///   - key: The attribute's name.
    ///   - record: The record to read.
    /// - Returns: The value; `.null` when the record holds a record, or
    ///   records, under the key.
    public func value(_ key: String, of record: any KeyValueRecord) -> PredicateValue {
        if case .value(let v) = record.value(forKey: key) { return v }
        return .null
    }

    /// The record's to-one record under the key.
    ///
    /// - Parameters:
    ///   - key: The relationship's name.
    ///   - record: The record to read.
    /// - Returns: The related record, or nil when there is none.
    public func object(_ key: String, of record: any KeyValueRecord) -> (any KeyValueRecord)? {
        if case .record(let r) = record.value(forKey: key) { return r }
        return nil
    }

    /// The record's records under the key.
    ///
    /// - Parameters:
    ///   - key: The relationship's name.
    ///   - record: The record to read.
    /// - Returns: The related records; a to-one record alone; nothing when
    ///   the key holds a value.
    public func objects(_ key: String, of record: any KeyValueRecord) -> [any KeyValueRecord] {
        switch record.value(forKey: key) {
        case .records(let rs): rs
        case .record(let r?): [r]
        default: []
        }
    }

    /// The record's `objectReference`.
    ///
    /// - Parameter record: The record to identify.
    /// - Returns: `PredicateValue.object` with its reference, or `.null`
    ///   when it has none.
    public func reference(to record: any KeyValueRecord) -> PredicateValue {
        record.objectReference.map(PredicateValue.object) ?? .null
    }
}
