// The library: `Encodable` values turned straight into value trees, with no
// JSON in between. Keyed containers become dictionaries, unkeyed ones
// arrays; dates, data, UUIDs, URLs and decimals stay what
// `PredicateValue(plain:)` makes of them, so a value reads the same whether
// it arrives as itself or inside an `Encodable` one.

import Foundation
import SiftValues

/// Encodes `Encodable` values into `PredicateValue` trees.
enum ValueTreeEncoder {
    static func encode(_ value: some Encodable) throws -> PredicateValue {
        try encode(value, codingPath: []).value
    }

    /// `value` as a slot: a value when the type is one predicates know
    /// as a whole, else what its `encode(to:)` writes.
    static func encode<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws -> Slot {
        if let known = scalar(value) { return .value(known) }
        let encoder = TreeEncoder(codingPath: codingPath)
        try value.encode(to: encoder)
        return encoder.slot ?? .value(.dictionary([:]))
    }

    /// A value of a Foundation type that encodes itself as something else
    /// (a date as a number, a URL as a string, a UUID as a string), as
    /// predicates read it; checked by type, with no dynamic cast for others.
    private static func scalar<T>(_ value: T) -> PredicateValue? {
        switch T.self {
        case is Date.Type: .date(value as! Date)
        case is Data.Type: .data(value as! Data)
        case is UUID.Type: .uuid(value as! UUID)
        case is URL.Type: .string((value as! URL).absoluteString)
        case is Decimal.Type: .double(NSDecimalNumber(decimal: value as! Decimal).doubleValue)
        case is PredicateValue.Type: value as? PredicateValue
        default: nil
        }
    }

    static func integer<I: BinaryInteger>(_ value: I) -> PredicateValue {
        Int64(exactly: value).map(PredicateValue.int) ?? .double(Double(value))
    }

    /// What a container holds while encoding goes on: containers are filled
    /// after they are handed out, so they are boxes.
    enum Slot {
        case value(PredicateValue)
        case keyed(KeyedBox)
        case unkeyed(UnkeyedBox)
        case encoder(TreeEncoder)

        var value: PredicateValue {
            switch self {
            case .value(let value): value
            case .keyed(let box): .dictionary(box.members.mapValues(\.value))
            case .unkeyed(let box): .array(box.members.map(\.value))
            case .encoder(let encoder): encoder.slot?.value ?? .dictionary([:])
            }
        }
    }

    final class KeyedBox {
        var members: [String: Slot] = [:]
    }

    final class UnkeyedBox {
        var members: [Slot] = []
    }

    /// The encoder handed to `encode(to:)`; also its single-value container.
    final class TreeEncoder: Encoder, SingleValueEncodingContainer {
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        var slot: Slot?

        init(codingPath: [any CodingKey]) {
            self.codingPath = codingPath
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            let box: KeyedBox
            if case .keyed(let existing) = slot {
                box = existing
            } else {
                box = KeyedBox()
                slot = .keyed(box)
            }
            return KeyedEncodingContainer(KeyedContainer(box: box, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            let box: UnkeyedBox
            if case .unkeyed(let existing) = slot {
                box = existing
            } else {
                box = UnkeyedBox()
                slot = .unkeyed(box)
            }
            return UnkeyedContainer(box: box, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { self }

        func encodeNil() { slot = .value(.null) }
        func encode(_ value: Bool) { slot = .value(.bool(value)) }
        func encode(_ value: String) { slot = .value(.string(value)) }
        func encode(_ value: Double) { slot = .value(.double(value)) }
        func encode(_ value: Float) { slot = .value(.double(Double(value))) }
        func encode(_ value: Int) { slot = .value(.int(Int64(value))) }
        func encode(_ value: Int8) { slot = .value(.int(Int64(value))) }
        func encode(_ value: Int16) { slot = .value(.int(Int64(value))) }
        func encode(_ value: Int32) { slot = .value(.int(Int64(value))) }
        func encode(_ value: Int64) { slot = .value(.int(value)) }
        func encode(_ value: UInt) { slot = .value(ValueTreeEncoder.integer(value)) }
        func encode(_ value: UInt8) { slot = .value(.int(Int64(value))) }
        func encode(_ value: UInt16) { slot = .value(.int(Int64(value))) }
        func encode(_ value: UInt32) { slot = .value(.int(Int64(value))) }
        func encode(_ value: UInt64) { slot = .value(ValueTreeEncoder.integer(value)) }
        func encode<T: Encodable>(_ value: T) throws { slot = try ValueTreeEncoder.encode(value, codingPath: codingPath) }
    }

    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let box: KeyedBox
        let codingPath: [any CodingKey]

        private func put(_ value: PredicateValue, _ key: Key) { box.members[key.stringValue] = .value(value) }

        mutating func encodeNil(forKey key: Key) { put(.null, key) }
        mutating func encode(_ value: Bool, forKey key: Key) { put(.bool(value), key) }
        mutating func encode(_ value: String, forKey key: Key) { put(.string(value), key) }
        mutating func encode(_ value: Double, forKey key: Key) { put(.double(value), key) }
        mutating func encode(_ value: Float, forKey key: Key) { put(.double(Double(value)), key) }
        mutating func encode(_ value: Int, forKey key: Key) { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int8, forKey key: Key) { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int16, forKey key: Key) { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int32, forKey key: Key) { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int64, forKey key: Key) { put(.int(value), key) }
        mutating func encode(_ value: UInt, forKey key: Key) { put(ValueTreeEncoder.integer(value), key) }
        mutating func encode(_ value: UInt8, forKey key: Key) { put(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt16, forKey key: Key) { put(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt32, forKey key: Key) { put(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt64, forKey key: Key) { put(ValueTreeEncoder.integer(value), key) }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            box.members[key.stringValue] = try ValueTreeEncoder.encode(value, codingPath: codingPath + [key])
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                            forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let nested = KeyedBox()
            box.members[key.stringValue] = .keyed(nested)
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = UnkeyedBox()
            box.members[key.stringValue] = .unkeyed(nested)
            return UnkeyedContainer(box: nested, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder { superEncoder(named: "super") }

        mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key.stringValue) }

        private func superEncoder(named name: String) -> any Encoder {
            let encoder = TreeEncoder(codingPath: codingPath)
            box.members[name] = .encoder(encoder)
            return encoder
        }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let box: UnkeyedBox
        let codingPath: [any CodingKey]
        var count: Int { box.members.count }

        private func append(_ value: PredicateValue) { box.members.append(.value(value)) }

        mutating func encodeNil() { append(.null) }
        mutating func encode(_ value: Bool) { append(.bool(value)) }
        mutating func encode(_ value: String) { append(.string(value)) }
        mutating func encode(_ value: Double) { append(.double(value)) }
        mutating func encode(_ value: Float) { append(.double(Double(value))) }
        mutating func encode(_ value: Int) { append(.int(Int64(value))) }
        mutating func encode(_ value: Int8) { append(.int(Int64(value))) }
        mutating func encode(_ value: Int16) { append(.int(Int64(value))) }
        mutating func encode(_ value: Int32) { append(.int(Int64(value))) }
        mutating func encode(_ value: Int64) { append(.int(value)) }
        mutating func encode(_ value: UInt) { append(ValueTreeEncoder.integer(value)) }
        mutating func encode(_ value: UInt8) { append(.int(Int64(value))) }
        mutating func encode(_ value: UInt16) { append(.int(Int64(value))) }
        mutating func encode(_ value: UInt32) { append(.int(Int64(value))) }
        mutating func encode(_ value: UInt64) { append(ValueTreeEncoder.integer(value)) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            box.members.append(try ValueTreeEncoder.encode(value, codingPath: codingPath))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
            -> KeyedEncodingContainer<NestedKey>
        {
            let nested = KeyedBox()
            box.members.append(.keyed(nested))
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: codingPath))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let nested = UnkeyedBox()
            box.members.append(.unkeyed(nested))
            return UnkeyedContainer(box: nested, codingPath: codingPath)
        }

        mutating func superEncoder() -> any Encoder {
            let encoder = TreeEncoder(codingPath: codingPath)
            box.members.append(.encoder(encoder))
            return encoder
        }
    }
}
