// The library: Swift and Foundation values as predicates see them, for
// predicates bound without a model (`FormatPredicate`).
//
// A value is read as Foundation code holds it: strings, integers,
// floating-point numbers, `Bool`, `Date`, `Data`, `UUID`, `URL` (its
// absolute string), `Decimal` (a double), `nil` and `NSNull`; arrays and
// sets; `[String: Any]` dictionaries as `JSONSerialization` gives them and
// `[String: PredicateValue]`; `KeyValueRecord`s, read key by key; and any
// `Encodable` value, turned once into a value tree (dates stay dates).
// Dictionaries are read lazily: only the keys a predicate uses are converted.

import Foundation
import SiftMemory
import SiftValues

extension PredicateValue {
    /// A Swift or Foundation value as a predicate value; nil for a value of
    /// a type predicates do not know (an arbitrary class, a closure).
    ///
    /// ```swift
    /// PredicateValue(plain: ["name": "Ann", "tags": ["a", "b"]] as [String: Any])
    /// ```
    ///
    /// - Parameter value: The value to convert; nil and `NSNull` become `.null`, and arrays, sets and
    ///   dictionaries are converted member by member.
    public init?(plain value: Any?) {
        guard let value else {
            self = .null
            return
        }
        // The commonest types first, by their exact type: a failed cast of a
        // string to a class bridges it first.
        let valueType = type(of: value)
        if valueType == String.self {
            self = .string(value as! String)
            return
        }
        if valueType is NSNumber.Type {
            // What JSONSerialization gives: a boolean or a number, by its type code.
            self = Self.number(value as! NSNumber)
            return
        }
        switch value {
        case let v as PredicateValue: self = v
        case let v as String: self = .string(v)
        case let v as Substring: self = .string(String(v))
        // Booleans and integers by their exact types: where Foundation
        // bridges numbers, `1 as Any as? Bool` may succeed.
        case let v as Bool where type(of: value) == Bool.self: self = .bool(v)
        case let v as Int where type(of: value) == Int.self: self = .int(Int64(v))
        case let v as Int64: self = .int(v)
        case let v as Int32: self = .int(Int64(v))
        case let v as Int16: self = .int(Int64(v))
        case let v as Int8: self = .int(Int64(v))
        case let v as UInt8: self = .int(Int64(v))
        case let v as UInt16: self = .int(Int64(v))
        case let v as UInt32: self = .int(Int64(v))
        case let v as UInt: self = Int64(exactly: v).map(PredicateValue.int) ?? .double(Double(v))
        case let v as UInt64: self = Int64(exactly: v).map(PredicateValue.int) ?? .double(Double(v))
        case let v as Double: self = .double(v)
        case let v as Float: self = .double(Double(v))
        case let v as Decimal: self = .double(NSDecimalNumber(decimal: v).doubleValue)
        case let v as Date: self = .date(v)
        case let v as Data: self = .data(v)
        case let v as UUID: self = .uuid(v)
        case let v as URL: self = .string(v.absoluteString)
        case let v as ObjectReference: self = .object(v)
        case is NSNull: self = .null
        case let v as [String: PredicateValue]: self = .dictionary(v)
        case let v as [String: Any]:
            var dictionary: [String: PredicateValue] = [:]
            for (key, member) in v {
                guard let converted = PredicateValue(plain: member) else { return nil }
                dictionary[key] = converted
            }
            self = .dictionary(dictionary)
        case let v as any Sequence:
            // Arrays and sets.
            var members: [PredicateValue] = []
            for member in v {
                guard let converted = PredicateValue(plain: member) else { return nil }
                members.append(converted)
            }
            self = .array(members)
        case let v as any Encodable:
            guard let converted = try? PredicateValue(encoding: v) else { return nil }
            self = converted
        default:
            return nil
        }
    }

    /// An `NSNumber`: a boolean when it is one (type code `c`, as
    /// JSONSerialization makes `true` and `false`), an integer when its type
    /// code is an integer's, a double otherwise.
    static func number(_ number: NSNumber) -> PredicateValue {
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "c"), UInt8(ascii: "B"): return .bool(number.boolValue)
        case UInt8(ascii: "d"), UInt8(ascii: "f"): return .double(number.doubleValue)
        case UInt8(ascii: "Q"), UInt8(ascii: "L"):
            return Int64(exactly: number.uint64Value).map(PredicateValue.int) ?? .double(number.doubleValue)
        default: return .int(number.int64Value)
        }
    }

    /// An `Encodable` value as a value tree: keyed containers become
    /// dictionaries, unkeyed ones arrays; dates, data, UUIDs, URLs and
    /// decimals are read as `init(plain:)` reads them (a date stays a date),
    /// and numbers stay numbers (NaN and infinities too).
    ///
    /// - Parameter value: The value to encode.
    /// - Throws: Whatever error the value's `encode(to:)` throws; the conversion itself throws none.
    public init(encoding value: some Encodable) throws {
        self = try ValueTreeEncoder.encode(value)
    }
}

/// A `[String: Any]` dictionary (as `JSONSerialization` gives it) read key by
/// key: only the keys a predicate uses are converted.
struct FoundationRecord: PlainValueRecord {
    let dictionary: [String: Any]

    /// The whole dictionary, converted (when the predicate compares it as a value).
    var plainValue: PredicateValue { PredicateValue(plain: dictionary) ?? .dictionary([:]) }

    func value(forKey key: String) -> KeyValueItem {
        guard let member = dictionary[key] else { return .value(.null) }
        return Self.item(member)
    }

    static func item(_ member: Any) -> KeyValueItem {
        let memberType = type(of: member)
        if memberType == String.self || memberType is NSNumber.Type { return .value(PredicateValue(plain: member) ?? .null) }
        switch member {
        case let nested as [String: Any]: return .record(FoundationRecord(dictionary: nested))
        case let array as [Any] where array.contains(where: { $0 is [String: Any] })
            && array.allSatisfy({ $0 is [String: Any] || $0 is NSNull }):
            // Dictionaries (and nils) read key by key; an array mixing in
            // anything else is converted whole and read as a value tree.
            return .records(array.map { member -> any KeyValueRecord in
                (member as? [String: Any]).map(FoundationRecord.init) ?? NullRecord()
            })
        default: return .value(PredicateValue(plain: member) ?? .null)
        }
    }
}

extension DynamicItem {
    /// A value as an evaluation reads it: records and `[String: Any]`
    /// dictionaries key by key, everything else converted once.
    static func plain(_ value: Any?) throws(PredicateEvaluationError) -> DynamicItem {
        // The exact types first: a cast of a dictionary to another element
        // type would convert every member.
        if let value {
            let type = type(of: value)
            if type == [String: Any].self { return .record(FoundationRecord(dictionary: value as! [String: Any])) }
            if type == PredicateValue.self { return .value(value as! PredicateValue) }
            if type == [String: PredicateValue].self { return .value(.dictionary(value as! [String: PredicateValue])) }
        }
        switch value {
        case let v as PredicateValue: return .value(v)
        case let v as any KeyValueRecordRepresentable: return .record(v.keyValueRecord)
        case let v as any KeyValueRecord: return .record(v)
        case let v as [String: Any]: return .record(FoundationRecord(dictionary: v))
        default:
            guard let converted = PredicateValue(plain: value) else {
                throw PredicateEvaluationError(.unsupportedValue(String(describing: type(of: value!))), range: nil, format: "")
            }
            return .value(converted)
        }
    }
}
