// Store stage: records — your own `Decodable` and `Encodable` types read
// from and written to a context's objects, key by key as their `CodingKeys`
// name them. A record's property reads the attribute of its key (as the
// Swift type it declares), or the object a to-one relationship holds, or
// the objects of a to-many one (as a nested record, or an array of them).
// Writing sets each attribute the record encodes, checked as `setValue`
// checks it. Objects stay the source of truth: a record is a copy.

import Foundation
import Sift

extension ObjectContext {
    /// Fetches the objects a request selects as values of your own
    /// `Decodable` type, its properties read from their attributes by the
    /// names its `CodingKeys` give.
    ///
    /// ```swift
    /// struct Book: Codable { var title: String; var pages: Int; var subtitle: String? }
    /// let long = try context.fetch(Book.self, FetchRequest(entityName: "Book", predicate: "pages > 300"))
    /// ```
    ///
    /// - Parameters:
    ///   - type: The record type.
    ///   - request: What to fetch.
    /// - Returns: One record per object, in the request's order.
    /// - Throws: `StoreError` as ``fetch(_:)`` throws; `.recordMismatch` when an object does not decode as
    ///   `type` (a key the entity lacks, a value of another type, a nil for a property that is not optional).
    public func fetch<Record: Decodable>(_ type: Record.Type, _ request: FetchRequest) throws(StoreError) -> [Record] {
        let objects = try fetch(request)
        try fireFaults(objects)
        var records: [Record] = []
        records.reserveCapacity(objects.count)
        for object in objects { records.append(try object.decode(type)) }
        return records
    }

    /// Inserts a new object of `entityName` with the attributes a record
    /// encodes, each checked as `setValue(_:forKey:)` checks it.
    ///
    /// ```swift
    /// let object = try context.insert(Book(title: "Dune", pages: 412, subtitle: nil), into: "Book")
    /// try context.save()
    /// ```
    ///
    /// - Parameters:
    ///   - record: The record whose encoded keys name attributes of the entity.
    ///   - entityName: The entity of the new object.
    /// - Returns: The new object, inserted in the context (saved with it).
    /// - Throws: `StoreError`: `.unknownEntity`; `.unknownKey` when the record encodes a key that is not an
    ///   attribute of the entity; `.invalidValue` when a value does not fit its attribute (nothing inserted);
    ///   `.recordMismatch` when the record does not encode as a set of keys and values.
    @discardableResult
    public func insert<Record: Encodable>(_ record: Record, into entityName: String) throws(StoreError) -> ManagedObject {
        let values = try Self.encoded(record)
        let entity = try store.entity(entityName)
        for key in values.keys where entity.attribute(named: key) == nil {
            throw .unknownKey(key, entity: entity.name)
        }
        // Every value checked before the object is made: a refusal inserts nothing.
        for (key, value) in values {
            guard let attribute = entity.attribute(named: key) else { continue }
            if attribute.isReadOnly { throw .readOnlyAttribute(key, entity: entity.name) }
            _ = try checkedValue(value, for: attribute, of: "<\(entity.name) (new)>")
        }
        let object = try insert(entityName)
        do {
            for (key, value) in values.sorted(by: { $0.key < $1.key }) { try object.setValue(value, forKey: key) }
        } catch {
            // (Every value was checked above; a refusal here leaves no half-made object behind.)
            try? delete(object)
            throw error
        }
        return object
    }

    /// `value` as `attribute` keeps it (an integer for a double attribute as
    /// a double), or the typed error of a value it cannot keep: the one check
    /// `setValue` and records make. Nil passes here; a required attribute is
    /// checked at save. A value a registered transformer stores may be of
    /// any type.
    func checkedValue(_ value: PredicateValue, for attribute: Attribute, of object: @autoclosure () -> String) throws(StoreError) -> PredicateValue {
        if case .null = value { return value }
        if store.transformers?.transformer(of: attribute) != nil { return value }
        func refused(_ reason: String) -> StoreError {
            .invalidValue(SaveValidationFailure(object: object(), property: attribute.name, reason: reason))
        }
        guard let converted = attribute.type.convert(value) else { throw refused(attribute.type.mismatch(value)) }
        if case .double(let number) = converted, number.isNaN { throw refused("is NaN, which no store keeps") }
        return converted
    }

    /// The attribute values a record encodes, by key.
    static func encoded(_ record: some Encodable) throws(StoreError) -> [String: PredicateValue] {
        let value: PredicateValue
        do {
            value = try PredicateValue(encoding: record)
        } catch {
            throw .recordMismatch(type: "\(type(of: record))", reason: "it does not encode: \(error)")
        }
        guard case .dictionary(let values) = value else {
            throw .recordMismatch(type: "\(type(of: record))", reason: "it encodes as \(value.kindDescription), not as keys and values")
        }
        return values
    }
}

extension ManagedObject {
    /// The object as a value of your own `Decodable` type: each property
    /// read from the attribute (or relationship) its coding key names.
    ///
    /// - Parameter type: The record type.
    /// - Returns: The record.
    /// - Throws: `StoreError`: `.recordMismatch` when the object does not decode as `type` (the message names
    ///   the key and why); the object's own errors when its fault fires and fails.
    public func decode<Record: Decodable>(_ type: Record.Type) throws(StoreError) -> Record {
        do {
            return try Record(from: ObjectDecoder(object: self, codingPath: []))
        } catch let error as StoreError {
            throw error
        } catch let error as DecodingError {
            throw .recordMismatch(type: "\(Record.self)", reason: Self.describe(error))
        } catch {
            throw .recordMismatch(type: "\(Record.self)", reason: "\(error)")
        }
    }

    /// Sets each attribute a record encodes (a key it leaves out keeps its
    /// value: Swift's synthesized encoding leaves out a nil optional).
    ///
    /// - Parameter record: The record whose encoded keys name attributes of the object's entity.
    /// - Throws: `StoreError`: `.unknownKey` when the record encodes a key that is not an attribute;
    ///   `.invalidValue` when a value does not fit its attribute (nothing changed); otherwise as `setValue`
    ///   throws.
    public func update(from record: some Encodable) throws(StoreError) {
        let values = try ObjectContext.encoded(record)
        for key in values.keys where entity.attribute(named: key) == nil {
            throw .unknownKey(key, entity: entity.name)
        }
        // Every value checked before any is set: a refusal changes nothing.
        for (key, value) in values {
            guard let attribute = entity.attribute(named: key) else { continue }
            _ = try context().checkedValue(value, for: attribute, of: description)
        }
        for (key, value) in values.sorted(by: { $0.key < $1.key }) { try setValue(value, forKey: key) }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let at = path(context)
            return "the object has no attribute or relationship '\(at.isEmpty ? key.stringValue : at)'"
        case .valueNotFound(let type, let context):
            return "'\(path(context))' has no value, and the record's \(type) is not optional"
        case .typeMismatch(let type, let context):
            return "'\(path(context))' does not read as \(type): \(context.debugDescription)"
        case .dataCorrupted(let context):
            return "'\(path(context))': \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}

/// Decodes a record from an object: a keyed container over its attributes
/// and relationships.
private struct ObjectDecoder: Decoder {
    let object: ManagedObject
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(ObjectContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: codingPath,
                                                           debugDescription: "an object is keys and values, not a list"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(Any.self, .init(codingPath: codingPath,
                                                         debugDescription: "an object is keys and values, not one value"))
    }
}

private struct ObjectContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: ManagedObject
    let codingPath: [any CodingKey]

    var allKeys: [Key] {
        (object.entity.attributes.map(\.name) + object.entity.relationships.map(\.name)).compactMap(Key.init(stringValue:))
    }

    func contains(_ key: Key) -> Bool {
        object.entity.property(named: key.stringValue) != nil
    }

    private func context(_ key: Key, _ text: String) -> DecodingError.Context {
        DecodingError.Context(codingPath: codingPath + [key], debugDescription: text)
    }

    /// The attribute's value, or the key's error.
    private func value(_ key: Key) throws -> PredicateValue {
        guard object.entity.attribute(named: key.stringValue) != nil else {
            throw DecodingError.keyNotFound(key, context(key, "no attribute '\(key.stringValue)'"))
        }
        return try object.value(forKey: key.stringValue)
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        switch object.entity.property(named: key.stringValue) {
        case .attribute?: return try value(key).isNil
        case .relationship(let r)? where !r.isToMany: return try object.object(forKey: key.stringValue) == nil
        case .relationship?: return false
        case nil: return true
        }
    }

    private func typed<T: PredicateValueRepresentable>(_ type: T.Type, _ key: Key) throws -> T {
        let value = try value(key)
        if value.isNil { throw DecodingError.valueNotFound(T.self, context(key, "nil")) }
        guard let typed = T(predicateValue: value) else {
            throw DecodingError.typeMismatch(T.self, context(key, "it holds \(value.kindDescription)"))
        }
        return typed
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try typed(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try typed(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try typed(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try typed(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try typed(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try typed(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try typed(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try typed(type, key) }

    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
        try narrow(try typed(Int64.self, key), key)
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try narrow(try typed(Int64.self, key), key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try narrow(try typed(Int64.self, key), key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try narrow(try typed(Int64.self, key), key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try narrow(try typed(Int64.self, key), key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try narrow(try typed(Int64.self, key), key) }

    private func narrow<T: BinaryInteger>(_ value: Int64, _ key: Key) throws -> T {
        guard let narrowed = T(exactly: value) else {
            throw DecodingError.typeMismatch(T.self, context(key, "\(value) is outside what \(T.self) holds"))
        }
        return narrowed
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        switch object.entity.property(named: key.stringValue) {
        case .relationship(let r)? where !r.isToMany:
            guard let related = try object.object(forKey: key.stringValue) else {
                throw DecodingError.valueNotFound(T.self, context(key, "the relationship is empty"))
            }
            return try T(from: ObjectDecoder(object: related, codingPath: codingPath + [key]))
        case .relationship?:
            let related = try object.objects(forKey: key.stringValue)
            return try T(from: ObjectsDecoder(objects: related, codingPath: codingPath + [key]))
        default:
            if let representable = T.self as? any PredicateValueRepresentable.Type,
               let typed = try typedAny(representable, key) as? T {
                return typed
            }
            // Anything else (an enum with a raw value, a URL) reads the value as one value.
            return try T(from: ValueDecoder(value: try value(key), codingPath: codingPath + [key]))
        }
    }

    private func typedAny<T: PredicateValueRepresentable>(_ type: T.Type, _ key: Key) throws -> Any {
        try typed(type, key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type,
                                               forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        guard let related = try object.object(forKey: key.stringValue) else {
            throw DecodingError.valueNotFound(NestedKey.self, context(key, "the relationship is empty"))
        }
        return KeyedDecodingContainer(ObjectContainer<NestedKey>(object: related, codingPath: codingPath + [key]))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ObjectsDecoder(objects: try object.objects(forKey: key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { ObjectDecoder(object: object, codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ObjectDecoder(object: object, codingPath: codingPath + [key]) }
}

/// Decodes an array of records from the objects of a to-many relationship.
private struct ObjectsDecoder: Decoder, UnkeyedDecodingContainer {
    let objects: [ManagedObject]
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var currentIndex = 0
    var count: Int? { objects.count }
    var isAtEnd: Bool { currentIndex >= objects.count }

    init(objects: [ManagedObject], codingPath: [any CodingKey]) {
        self.objects = objects
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw DecodingError.typeMismatch([String: Any].self, .init(codingPath: codingPath,
                                                                   debugDescription: "a to-many relationship is a list"))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { self }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(Any.self, .init(codingPath: codingPath, debugDescription: "a to-many relationship is a list"))
    }

    mutating func next() throws -> ManagedObject {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "no more objects"))
        }
        defer { currentIndex += 1 }
        return objects[currentIndex]
    }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try T(from: ObjectDecoder(object: try next(), codingPath: codingPath))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(ObjectContainer<NestedKey>(object: try next(), codingPath: codingPath))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: codingPath, debugDescription: "an object is not a list"))
    }

    mutating func superDecoder() throws -> any Decoder { ObjectDecoder(object: try next(), codingPath: codingPath) }
}

/// Decodes one attribute value as a type that reads itself from one value
/// (a `RawRepresentable` enum, a URL).
private struct ValueDecoder: Decoder, SingleValueDecodingContainer {
    let value: PredicateValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw DecodingError.typeMismatch([String: Any].self, .init(codingPath: codingPath,
                                                                   debugDescription: "an attribute holds one value"))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: codingPath, debugDescription: "an attribute holds one value"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { value.isNil }

    private func typed<T: PredicateValueRepresentable>(_ type: T.Type) throws -> T {
        guard let typed = T(predicateValue: value) else {
            throw DecodingError.typeMismatch(T.self, .init(codingPath: codingPath, debugDescription: "it holds \(value.kindDescription)"))
        }
        return typed
    }

    func decode(_ type: Bool.Type) throws -> Bool { try typed(type) }
    func decode(_ type: String.Type) throws -> String { try typed(type) }
    func decode(_ type: Double.Type) throws -> Double { try typed(type) }
    func decode(_ type: Float.Type) throws -> Float { try typed(type) }
    func decode(_ type: Int.Type) throws -> Int { try typed(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try narrow() }
    func decode(_ type: Int16.Type) throws -> Int16 { try typed(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try typed(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try typed(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try narrow() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try narrow() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try narrow() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try narrow() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try narrow() }

    private func narrow<T: BinaryInteger>() throws -> T {
        guard let narrowed = T(exactly: try typed(Int64.self)) else {
            throw DecodingError.typeMismatch(T.self, .init(codingPath: codingPath, debugDescription: "outside what \(T.self) holds"))
        }
        return narrowed
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let representable = T.self as? any PredicateValueRepresentable.Type, let typed = try typedAny(representable) as? T {
            return typed
        }
        return try T(from: self)
    }

    private func typedAny<T: PredicateValueRepresentable>(_ type: T.Type) throws -> Any { try typed(type) }
}
