// Stage 6a (memory lowering): plain values as the objects of an evaluation — what
// predicates bound without a model run against. A value is a `PredicateValue`
// tree (dictionaries, arrays, scalars) or a `KeyValueRecord` read key by key;
// `SELF` is the value itself, and each key of a key path is looked up when
// the predicate runs.

import SiftTree
import SiftValues

/// A value a predicate bound without a model evaluates against: a plain
/// value, a key-value record, or the records of a to-many key.
public enum DynamicItem {
    /// A plain value (a dictionary, an array or a scalar), read as a value
    /// tree.
    case value(PredicateValue)
    /// A key-value record, whose keys are read from it one by one.
    case record(any KeyValueRecord)
    /// The records of a to-many key, in order: a key of it gives each
    /// member's value for the key.
    case records([any KeyValueRecord])
}

/// A key-value record that is a plain value as a whole (a nested JSON
/// dictionary): what it is when compared as a value.
package protocol PlainValueRecord: KeyValueRecord {
    var plainValue: PredicateValue { get }
}

/// Nil among the records of a to-many key (a member whose to-one key was
/// empty): every key of it is nil, and as a value it is nil.
package struct NullRecord: PlainValueRecord {
    package init() {}
    package var plainValue: PredicateValue { .null }
    package func value(forKey key: String) -> KeyValueItem { .value(.null) }
}

/// What looking a key up in an object gave.
public enum KeyLookup<Object> {
    /// The key's value (nil is `found` as a nil value).
    case found(Object)
    /// The object has no keys at all (a string, a number): the type's name.
    case notKeyed(String)
}

/// Evaluates predicates bound without a model against plain values and
/// key-value records.
///
/// ```swift
/// // `age >= 18`, bound without a model: `age` is looked up in each object when the predicate runs.
/// let age = BoundExpression(.key(BoundExpression(.evaluatedObject, type: .any), "age"), type: .any)
/// let adults = MemoryPredicate(.comparison(BoundComparison(age, .greaterThanOrEqualTo,
///                                                          .constant(18, type: .integer))),
///                              domain: DynamicDomain(), locations: [:])
/// let ann: [String: PredicateValue] = ["name": "Ann", "age": 41]     // a KeyValueRecord
/// print(try adults.evaluate(.record(ann)))                 // true
/// print(try adults.evaluate(.value(["age": 17])))          // false
/// ```
public struct DynamicDomain: EvaluationDomain, Sendable {
    public typealias Object = DynamicItem

    /// Creates the domain.
    public init() {}

    /// The attribute's name, the key it is looked up by.
    ///
    /// - Parameter attribute: The attribute a bound predicate reads.
    /// - Returns: Its name.
    public func handle(for attribute: AttributeReference) -> String { attribute.name }
    /// The relationship's name, the key it is looked up by.
    ///
    /// - Parameter relationship: The relationship a bound predicate follows.
    /// - Returns: Its name.
    public func handle(for relationship: RelationshipReference) -> String { relationship.name }

    /// The value under the key, as `lookUp(_:in:)` finds it.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - object: The item to read.
    /// - Returns: The key's value; `.null` when the item has no keys.
    public func value(_ key: String, of object: DynamicItem) -> PredicateValue {
        if case .found(let item) = lookUp(key, in: object) { return reference(to: item) }
        return .null
    }

    /// What the key holds, as `lookUp(_:in:)` finds it.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - object: The item to read.
    /// - Returns: What the key holds, or nil when the item has no keys.
    public func object(_ key: String, of object: DynamicItem) -> DynamicItem? {
        if case .found(let item) = lookUp(key, in: object) { return item }
        return nil
    }

    /// The members of what the key holds.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - object: The item to read.
    /// - Returns: Its members, as `members(of:)` takes them; nothing when the
    ///   item has no keys.
    public func objects(_ key: String, of object: DynamicItem) -> [DynamicItem] {
        guard case .found(let item) = lookUp(key, in: object) else { return [] }
        return members(of: item)
    }

    /// A plain value is itself; a record is its reference, or the value it
    /// stands for (a nested dictionary), or else an empty dictionary (never
    /// nil: a record is there).
    ///
    /// - Parameter object: The item to read as a value.
    /// - Returns: The value that stands for the item (an array of each record's
    ///   value, for the records of a to-many key).
    public func reference(to object: DynamicItem) -> PredicateValue {
        switch object {
        case .value(let value): value
        case .record(let record): Self.value(of: record)
        case .records(let records): .array(records.map(Self.value(of:)))
        }
    }

    static func value(of record: any KeyValueRecord) -> PredicateValue {
        if let reference = record.objectReference { return .object(reference) }
        if let plain = record as? any PlainValueRecord { return plain.plainValue }
        return .dictionary([:])
    }

    /// A dictionary's value for the key (nil when it has none); each member's
    /// for an array, nested arrays flattened; a record's; nil for nil.
    ///
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - object: The item to look it up in.
    /// - Returns: `KeyLookup.found` with what the key holds, or
    ///   `KeyLookup.notKeyed` with the name of the type when the item (or a
    ///   member of it) has no keys.
    public func lookUp(_ key: String, in object: DynamicItem) -> KeyLookup<DynamicItem> {
        switch object {
        case .value(let value):
            // Plain values as value trees read them.
            switch ValueTreeDomain().lookUp(key, in: value) {
            case .found(let found): return .found(.value(found))
            case .notKeyed(let type): return .notKeyed(type)
            }
        case .record(let record):
            switch record.value(forKey: key) {
            case .value(let value): return .found(.value(value))
            case .record(let inner?): return .found(.record(inner))
            case .record(nil): return .found(.value(.null))
            case .records(let records): return .found(.records(records))
            }
        case .records(let records):
            // Each member's value, in order, as a value tree reads an array:
            // nested arrays flattened, a member with none giving nil. Records
            // stay records while every member is one (or nil); once plain
            // values mix in, everything continues as plain values.
            var pieces: [DynamicItem] = []
            var hasRecords = false, hasValues = false
            for record in records {
                switch lookUp(key, in: .record(record)) {
                case .found(.value(.array(let inner))):
                    pieces += inner.map(DynamicItem.value)
                    hasValues = hasValues || inner.contains { $0 != .null }
                case .found(.value(let value)):
                    pieces.append(.value(value))
                    hasValues = hasValues || value != .null
                case .found(.record(let inner)):
                    pieces.append(.record(inner))
                    hasRecords = true
                case .found(.records(let inner)):
                    pieces += inner.map(DynamicItem.record)
                    hasRecords = hasRecords || !inner.isEmpty
                case .notKeyed(let type): return .notKeyed(type)
                }
            }
            if hasRecords && !hasValues {
                return .found(.records(pieces.map { piece in
                    if case .record(let record) = piece { return record }
                    return NullRecord()
                }))
            }
            return .found(.value(.array(pieces.map(reference(to:)))))
        }
    }

    /// A value as an object of this domain.
    ///
    /// - Parameter value: A value of the predicate or of its arguments.
    /// - Returns: The value, wrapped.
    public func object(from value: PredicateValue) -> DynamicItem? { .value(value) }

    /// A dictionary's value read straight from it; anything else as
    /// `lookUp` and `reference(to:)` read it.
    ///
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - object: The item to look it up in.
    /// - Returns: `KeyLookup.found` with the key's value, or
    ///   `KeyLookup.notKeyed` with the name of the type when the item has no
    ///   keys.
    @inline(__always)
    public func value(forKey key: String, in object: DynamicItem) -> KeyLookup<PredicateValue> {
        if case .value(.dictionary(let dictionary)) = object { return .found(dictionary[key] ?? .null) }
        if case .record(let record) = object, case .value(let value) = record.value(forKey: key) { return .found(value) }
        switch lookUp(key, in: object) {
        case .found(let item): return .found(reference(to: item))
        case .notKeyed(let type): return .notKeyed(type)
        }
    }

    /// The members of an array or a to-many key; nothing for nil; the item
    /// itself otherwise.
    ///
    /// - Parameter object: The item to take the members of.
    /// - Returns: The item's members, in order.
    public func members(of object: DynamicItem) -> [DynamicItem] {
        switch object {
        case .value(let value): ValueTreeDomain().members(of: value).map(DynamicItem.value)
        case .records(let records): records.map(DynamicItem.record)
        case .record: [object]
        }
    }
}

/// Evaluates predicates bound without a model against value trees alone
/// (`PredicateValue`: dictionaries, arrays, scalars), with none of the
/// wrapping records need: the fast path for values converted once.
///
/// ```swift
/// // `name BEGINSWITH "A"`, bound without a model: `name` is looked up in each value.
/// let name = BoundExpression(.key(BoundExpression(.evaluatedObject, type: .any), "name"), type: .any)
/// let startsWithA = MemoryPredicate(.comparison(BoundComparison(name, .beginsWith, .constant("A", type: .string))),
///                                   domain: ValueTreeDomain(), locations: [:])
/// let people: [PredicateValue] = [["name": "Ann", "age": 41], ["name": "Bob", "age": 17]]
/// print(try startsWithA.filter(people))                    // [{"age": 41, "name": "Ann"}]
/// ```
public struct ValueTreeDomain: EvaluationDomain, Sendable {
    public typealias Object = PredicateValue

    /// Creates the domain.
    public init() {}

    /// The attribute's name, the key it is looked up by.
    ///
    /// - Parameter attribute: The attribute a bound predicate reads.
    /// - Returns: Its name.
    public func handle(for attribute: AttributeReference) -> String { attribute.name }
    /// The relationship's name, the key it is looked up by.
    ///
    /// - Parameter relationship: The relationship a bound predicate follows.
    /// - Returns: Its name.
    public func handle(for relationship: RelationshipReference) -> String { relationship.name }

    /// The value under the key, as `lookUp(_:in:)` finds it.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - object: The value to read.
    /// - Returns: The key's value; `.null` when the value has no keys.
    public func value(_ key: String, of object: PredicateValue) -> PredicateValue {
        if case .found(let value) = lookUp(key, in: object) { return value }
        return .null
    }

    /// What the key holds, as `lookUp(_:in:)` finds it.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - object: The value to read.
    /// - Returns: What the key holds, or nil when the value has no keys.
    public func object(_ key: String, of object: PredicateValue) -> PredicateValue? {
        if case .found(let value) = lookUp(key, in: object) { return value }
        return nil
    }

    /// The members of what the key holds.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - object: The value to read.
    /// - Returns: Its members, as `members(of:)` takes them; nothing when the
    ///   value has no keys.
    public func objects(_ key: String, of object: PredicateValue) -> [PredicateValue] {
        guard case .found(let value) = lookUp(key, in: object) else { return [] }
        return members(of: value)
    }

    /// A value stands for itself.
    ///
    /// - Parameter object: The value.
    /// - Returns: The value.
    public func reference(to object: PredicateValue) -> PredicateValue { object }

    /// A dictionary's value for the key (nil when it has none); each member's
    /// for an array, nested arrays flattened; nil for nil; a string's `length`
    /// (its UTF-16 code units, as NSString's); for anything else, the type
    /// that has no keys.
    ///
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - object: The value to look it up in.
    /// - Returns: `KeyLookup.found` with the key's value, or
    ///   `KeyLookup.notKeyed` with the name of the type that has no keys.
    public func lookUp(_ key: String, in object: PredicateValue) -> KeyLookup<PredicateValue> {
        switch object {
        case .dictionary(let dictionary): return .found(dictionary[key] ?? .null)
        case .null: return .found(.null)
        case .array(let members):
            var result: [PredicateValue] = []
            result.reserveCapacity(members.count)
            for member in members {
                switch lookUp(key, in: member) {
                case .found(.array(let inner)): result += inner
                case .found(let value): result.append(value)
                case .notKeyed(let type): return .notKeyed(type)
                }
            }
            return .found(.array(result))
        case .string(let string) where key == "length":
            // NSString's one key: its length in UTF-16 code units.
            return .found(.int(Int64(string.utf16.count)))
        default:
            // Every object answers `self` with itself, as key-value coding does.
            if key == "self" { return .found(object) }
            return .notKeyed(DynamicTypes.name(of: object))
        }
    }

    /// A dictionary's value read straight from it; anything else as
    /// `lookUp(_:in:)` reads it.
    ///
    /// - Parameters:
    ///   - key: The key.
    ///   - object: The value to look it up in.
    /// - Returns: `KeyLookup.found` with the key's value, or
    ///   `KeyLookup.notKeyed` with the name of the type that has no keys.
    @inline(__always)
    public func value(forKey key: String, in object: PredicateValue) -> KeyLookup<PredicateValue> {
        if case .dictionary(let dictionary) = object { return .found(dictionary[key] ?? .null) }
        return lookUp(key, in: object)
    }

    /// An array's members; nothing for nil; any other value alone.
    ///
    /// - Parameter object: The value.
    /// - Returns: Its members, in order.
    public func members(of object: PredicateValue) -> [PredicateValue] {
        switch object {
        case .array(let members): members
        case .null: []
        default: [object]
        }
    }

    /// A value as an object of this domain.
    ///
    /// - Parameter value: A value of the predicate or of its arguments.
    /// - Returns: The value itself.
    public func object(from value: PredicateValue) -> PredicateValue? { value }
}
