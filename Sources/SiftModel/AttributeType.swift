// Stage 2 (schema): the types of attributes, as Core Data names them, and
// what values of each type are.

import Foundation
import SiftValues

/// The type of an attribute, as Core Data names them.
public enum AttributeType: String, Hashable, Sendable, CaseIterable, Codable {
    /// A 16-bit signed integer (`Int16`); predicates see it as an integer.
    case integer16
    /// A 32-bit signed integer (`Int32`); predicates see it as an integer.
    case integer32
    /// A 64-bit signed integer (`Int64`); predicates see it as an integer.
    case integer64
    /// A decimal number (`NSDecimalNumber`); predicates see it as a double.
    case decimal
    /// A double-precision floating-point number (`Double`).
    case double
    /// A single-precision floating-point number (`Float`); predicates see it
    /// as a double.
    case float
    /// A string (`String`).
    case string
    /// A Boolean (`Bool`); it counts as a number, 0 or 1.
    case boolean
    /// A date (`Date`); as a number it is seconds since the reference date,
    /// 1 January 2001.
    case date
    /// Bytes (`Data`); JSON writes them in Base64.
    case binary
    /// A UUID (`UUID`); it may be given as a string or as 16 bytes.
    case uuid
    /// A URI (`NSURL`), kept as its absolute string.
    case uri
    /// A value archived to bytes by a value transformer; predicates see the
    /// bytes.
    case transformable
    /// An object ID (Core Data's `Object ID` type): never stored, it holds
    /// the value of an expression over objects.
    case objectID
    /// A composite of named elements (each an attribute of its own, named
    /// `composite.element` in the entity); the composite itself holds no
    /// value of its own.
    case composite
    /// No type (Xcode's "Undefined"): only a transient attribute may have it;
    /// its value may be anything.
    case undefined

    /// Whether values of this type are numbers (booleans count: they are 0 and 1).
    public var isNumeric: Bool {
        switch self {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean: true
        default: false
        }
    }

    /// Whether values of this type are whole numbers.
    public var isInteger: Bool {
        switch self {
        case .integer16, .integer32, .integer64, .boolean: true
        default: false
        }
    }

    /// Whether a store keeps values of this type in a column (a composite's
    /// elements have columns; the composite, an object ID and an undefined
    /// value have none).
    public var hasColumn: Bool {
        switch self {
        case .objectID, .composite, .undefined: false
        default: true
        }
    }

    /// The integers a value of this type may hold, for the integer types.
    public var integerRange: ClosedRange<Int64>? {
        switch self {
        case .integer16: Int64(Int16.min)...Int64(Int16.max)
        case .integer32: Int64(Int32.min)...Int64(Int32.max)
        case .integer64: Int64.min...Int64.max
        default: nil
        }
    }

    /// A value (as JSON gives it) as a value of this type, or nil when it
    /// does not fit: a string for a number, an integer out of the type's
    /// range, a number too large for a double to hold exactly as an integer.
    ///
    /// - Parameter value: The value, as read from JSON.
    /// - Returns: The value as an attribute of this type holds it (nil stays
    ///   `PredicateValue.null`), or nil when it does not fit.
    public func convert(_ value: PredicateValue) -> PredicateValue? {
        switch (value, self) {
        case (.null, _): return .null
        case (_, .undefined): return value
        case (.int(let i), .integer16), (.int(let i), .integer32), (.int(let i), .integer64):
            // (Not a ternary: `nil` there would be the value `.null`.)
            guard integerRange!.contains(i) else { return nil }
            return value
        case (.double(let d), .integer16), (.double(let d), .integer32), (.double(let d), .integer64):
            // Beyond 2^53 a double no longer tells neighbouring integers
            // apart: -9223372036854775809 would read as Int64.min.
            guard d.magnitude <= 9_007_199_254_740_992, let i = Int64(exactly: d) else { return nil }
            return convert(.int(i))
        case (.int(let i), .double), (.int(let i), .float), (.int(let i), .decimal): return .double(Double(i))
        case (.double, .double), (.double, .float), (.double, .decimal): return value
        case (.bool, .boolean): return value
        case (.int(let i), .boolean) where i == 0 || i == 1: return .bool(i == 1)
        case (.string, .string), (.string, .uri): return value
        case (.string(let s), .date): return Self.iso8601(s).map(PredicateValue.date)
        case (.int(let i), .date): return .date(Date(timeIntervalSinceReferenceDate: Double(i)))
        case (.double(let d), .date): return .date(Date(timeIntervalSinceReferenceDate: d))
        case (.date, .date): return value
        case (.string(let s), .uuid): return UUID(uuidString: s).map(PredicateValue.uuid)
        case (.uuid, .uuid): return value
        case (.data(let d), .uuid): return PredicateValue(uuidBytes: d)
        case (.string(let s), .binary), (.string(let s), .transformable): return Data(base64Encoded: s).map(PredicateValue.data)
        case (.data, .binary), (.data, .transformable): return value
        case (.object, .objectID): return value
        default: return nil
        }
    }

    /// A date written in ISO 8601: a date and time with a zone (`Z` or an
    /// offset), with or without fractional seconds, or a date alone (its
    /// midnight in UTC).
    ///
    /// - Parameter text: The text, such as `2024-05-01T09:30:00Z` or `2024-05-01`.
    /// - Returns: The date; nil when the text is not one of those forms.
    public static func iso8601(_ text: String) -> Date? {
        PredicateValue.iso8601Date(text)
    }

    /// Why `value` does not fit this type, for messages: "must be integer16,
    /// not a string" or "is 99999, outside the range of integer16".
    ///
    /// - Parameter value: The value that does not fit.
    /// - Returns: A phrase that follows the attribute's name in a message.
    public func mismatch(_ value: PredicateValue) -> String {
        switch value {
        case .int, .double:
            if let range = integerRange {
                return "is \(value), not a whole number in the range of \(rawValue) (\(range.lowerBound)...\(range.upperBound))"
            }
        case .string(let text) where self == .date:
            return "is '\(text.prefix(40))', not a date: write one in ISO 8601 (2024-05-01T09:30:00Z, 2024-05-01) "
                + "or as seconds since 2001"
        default: break
        }
        return "must be \(rawValue), not \(value.kindDescription)"
    }

    /// Xcode's names of the types, as a model's XML writes them.
    public static let xcodeNames: [String: AttributeType] = [
        "Integer 16": .integer16, "Integer 32": .integer32, "Integer 64": .integer64, "Decimal": .decimal,
        "Double": .double, "Float": .float, "String": .string, "Boolean": .boolean, "Date": .date,
        "Binary": .binary, "UUID": .uuid, "URI": .uri, "Transformable": .transformable, "Object ID": .objectID,
        "Composite": .composite, "Undefined": .undefined,
    ]

    /// Core Data's `NSAttributeType` raw value of the type.
    public var coreDataCode: Int {
        switch self {
        case .undefined: 0
        case .integer16: 100
        case .integer32: 200
        case .integer64: 300
        case .decimal: 400
        case .double: 500
        case .float: 600
        case .string: 700
        case .boolean: 800
        case .date: 900
        case .binary: 1000
        case .uuid: 1100
        case .uri: 1200
        case .transformable: 1800
        case .objectID: 2000
        case .composite: 2100
        }
    }

    /// The types by Core Data's `NSAttributeType` raw value, as compiled models keep them.
    public static let coreDataCodes = Dictionary(uniqueKeysWithValues: allCases.map { ($0.coreDataCode, $0) })
}
