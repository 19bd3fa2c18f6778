// Store stage: the attribute a key path of a `Codable` record names, by its
// coding key.
//
// A record is read key by key as its `CodingKeys` name them, and a key path
// prints only its property's name (`\Person.fullName`, whose coding key may
// be `full_name`). A probe finds the coding key: the record is decoded from a
// decoder that gives, for each key, a value marking it (the string
// "\u{1}key", the number of the key, a date that many seconds after 2001...);
// reading the key path from that record gives the mark of the key it was
// decoded from. Booleans have two values, so a Boolean key path is found by
// decoding once more per Boolean key, that key alone true. A record whose
// decoding the probe cannot satisfy (a validating initializer, an enum of
// its own) falls back to the property's name.

import Foundation
import Sift

enum RecordKeyNames {
    /// The coding key a key path of a record reads, or nil when the probe cannot tell.
    ///
    /// - Parameters:
    ///   - keyPath: A key path of one stored property of `type`.
    ///   - type: The record type, the key path's root.
    /// - Returns: The coding key's string value.
    static func name(of keyPath: AnyKeyPath, in type: any Decodable.Type) -> String? {
        // Only a stored property reads one key as it was decoded (a computed one may read it changed).
        guard isStored(type, keyPath) else { return nil }
        let marks = ProbeMarks(trueKey: nil)
        guard let record = try? type.init(from: ProbeDecoder(marks: marks, codingPath: [])),
              let found = read(record, keyPath), let value = found.flatMap(unwrapped)
        else { return nil }
        if let truth = value as? Bool {
            // Found by decoding once more per Boolean key, that key alone true.
            guard !truth else { return nil }
            for key in marks.booleanKeys {
                let marked = ProbeMarks(trueKey: key)
                if let record = try? type.init(from: ProbeDecoder(marks: marked, codingPath: [])),
                   let found = read(record, keyPath), found.flatMap(unwrapped) as? Bool == true
                {
                    return key
                }
            }
            return nil
        }
        return marks.key(marked: value)
    }

    /// A value with its optional wrapping taken off; nil for nil.
    private static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.map { unwrapped($0.value) } ?? nil
    }
}

/// The value `keyPath` reads from `root`: nil when its root is another type, `.some(nil)` for a nil value.
private func read<Root>(_ root: Root, _ keyPath: AnyKeyPath) -> Any?? {
    guard let path = keyPath as? PartialKeyPath<Root> else { return nil }
    return .some(root[keyPath: path])
}

/// Whether `keyPath` is a stored property of `Root` (a computed one has no offset).
private func isStored<Root>(_ root: Root.Type, _ keyPath: AnyKeyPath) -> Bool {
    guard let path = keyPath as? PartialKeyPath<Root> else { return false }
    return MemoryLayout<Root>.offset(of: path) != nil
}

/// The keys a probe decoding met, each with its number, and the marks it gave.
private final class ProbeMarks {
    /// The Boolean key decoded as true (all others false).
    let trueKey: String?
    private(set) var keys: [String] = []
    private(set) var booleanKeys: [String] = []

    init(trueKey: String?) {
        self.trueKey = trueKey
    }

    /// The number marking `key` (from 1).
    func number(for key: String) -> Int {
        if let index = keys.firstIndex(of: key) { return index + 1 }
        keys.append(key)
        return keys.count
    }

    func boolean(for key: String) -> Bool {
        if !booleanKeys.contains(key) { booleanKeys.append(key) }
        return key == trueKey
    }

    /// The key a value read from the probe record marks.
    func key(marked value: Any) -> String? {
        let number: Int?
        switch value {
        case let text as String:
            let key = String(text.dropFirst())
            return text.hasPrefix("\u{1}") && keys.contains(key) ? key : nil
        case let integer as any BinaryInteger: number = Int(exactly: integer)
        case let double as Double: number = Int(exactly: double - 0.5)
        case let float as Float: number = Int(exactly: Double(float) - 0.5)
        case let date as Date: number = Int(exactly: date.timeIntervalSinceReferenceDate)
        case let data as Data: number = data.count
        case let url as URL:
            let key = String(url.absoluteString.dropFirst(9))
            return url.absoluteString.hasPrefix("sift-key:") && keys.contains(key) ? key : nil
        case let decimal as Decimal: number = Int(exactly: NSDecimalNumber(decimal: decimal).doubleValue)
        default: number = nil
        }
        guard let number, number >= 1, number <= keys.count else { return nil }
        return keys[number - 1]
    }

    /// The mark for `key` as a value of `type`, or nil for a type marks do not cover.
    func mark<T>(_ type: T.Type, key: String) -> T? {
        let number = self.number(for: key)
        switch type {
        case is String.Type: return "\u{1}\(key)" as? T
        case is Bool.Type: return boolean(for: key) as? T
        case is Int.Type: return number as? T
        case is Int8.Type: return Int8(truncatingIfNeeded: number) as? T
        case is Int16.Type: return Int16(truncatingIfNeeded: number) as? T
        case is Int32.Type: return Int32(truncatingIfNeeded: number) as? T
        case is Int64.Type: return Int64(number) as? T
        case is UInt.Type: return UInt(truncatingIfNeeded: number) as? T
        case is UInt8.Type: return UInt8(truncatingIfNeeded: number) as? T
        case is UInt16.Type: return UInt16(truncatingIfNeeded: number) as? T
        case is UInt32.Type: return UInt32(truncatingIfNeeded: number) as? T
        case is UInt64.Type: return UInt64(truncatingIfNeeded: number) as? T
        case is Double.Type: return (Double(number) + 0.5) as? T
        case is Float.Type: return (Float(number) + 0.5) as? T
        case is Date.Type: return Date(timeIntervalSinceReferenceDate: Double(number)) as? T
        case is Data.Type: return Data(count: number) as? T
        case is URL.Type: return URL(string: "sift-key:\(key)") as? T
        case is Decimal.Type: return Decimal(number) as? T
        case is UUID.Type:
            var bytes = [UInt8](repeating: 0, count: 16)
            bytes[15] = UInt8(truncatingIfNeeded: number)
            bytes[14] = UInt8(truncatingIfNeeded: number >> 8)
            return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                               bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15])) as? T
        default: return nil
        }
    }
}

/// A decoder that gives each key's mark.
private struct ProbeDecoder: Decoder {
    let marks: ProbeMarks
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard codingPath.count < 8 else { throw ProbeError.tooDeep }
        return KeyedDecodingContainer(ProbeKeyedContainer<Key>(marks: marks, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        ProbeUnkeyedContainer(codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        ProbeSingleValue(marks: marks, codingPath: codingPath)
    }
}

private enum ProbeError: Error { case tooDeep, unmarked }

/// The mark of a value of `type` at `codingPath`, decoding nested types by probe.
private func probeValue<T: Decodable>(_ type: T.Type, marks: ProbeMarks, codingPath: [any CodingKey]) throws -> T {
    let key = codingPath.map(\.stringValue).joined(separator: ".")
    if let mark = marks.mark(type, key: key) { return mark }
    guard codingPath.count < 8 else { throw ProbeError.tooDeep }
    return try T(from: ProbeDecoder(marks: marks, codingPath: codingPath))
}

private struct ProbeKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let marks: ProbeMarks
    let codingPath: [any CodingKey]
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try probeValue(type, marks: marks, codingPath: codingPath + [key])
    }
    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try ProbeDecoder(marks: marks, codingPath: codingPath + [key]).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        ProbeUnkeyedContainer(codingPath: codingPath + [key])
    }
    func superDecoder() throws -> any Decoder { ProbeDecoder(marks: marks, codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ProbeDecoder(marks: marks, codingPath: codingPath + [key]) }
}

/// An empty list.
private struct ProbeUnkeyedContainer: UnkeyedDecodingContainer {
    let codingPath: [any CodingKey]
    var count: Int? { 0 }
    var isAtEnd: Bool { true }
    var currentIndex: Int { 0 }

    mutating func decodeNil() throws -> Bool { true }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw ProbeError.unmarked }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        throw ProbeError.unmarked
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw ProbeError.unmarked }
    mutating func superDecoder() throws -> any Decoder { throw ProbeError.unmarked }
}

private struct ProbeSingleValue: SingleValueDecodingContainer {
    let marks: ProbeMarks
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { false }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let key = codingPath.map(\.stringValue).joined(separator: ".")
        guard let mark = marks.mark(type, key: key) else { throw ProbeError.unmarked }
        return mark
    }
}
