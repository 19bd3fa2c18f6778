// Stage 0 (values): values out as Swift types. A `PredicateValue` reads as
// the Swift type a caller asks for when it holds one (an integer as `Int`,
// `Double` or `Decimal`, a whole double as `Int`), and the types that read
// so are `PredicateValueRepresentable`: the ones a record's properties, an
// object's typed reads and a fetch into `Decodable` types use.

import Foundation

extension PredicateValue {
    /// The string, when the value is one.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The integer, when the value is one (or a double with no fraction
    /// that an `Int64` holds).
    public var int64Value: Int64? {
        switch self {
        case .int(let i): i
        case .double(let d): Int64(exactly: d)
        default: nil
        }
    }

    /// The integer as an `Int`, when the value is one that an `Int` holds.
    public var intValue: Int? { int64Value.flatMap { Int(exactly: $0) } }

    /// The number as a `Double`, when the value is an integer or a double.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    /// The number as a `Decimal`, when the value is an integer or a double.
    public var decimalValue: Decimal? {
        switch self {
        case .int(let i): Decimal(i)
        case .double(let d): d.isFinite ? Decimal(d) : nil
        default: nil
        }
    }

    /// The Boolean, when the value is one.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The date, when the value is one.
    public var dateValue: Date? {
        if case .date(let d) = self { return d }
        return nil
    }

    /// The bytes, when the value is binary data.
    public var dataValue: Data? {
        if case .data(let d) = self { return d }
        return nil
    }

    /// The UUID, when the value is one.
    public var uuidValue: UUID? {
        if case .uuid(let u) = self { return u }
        return nil
    }

    /// The object reference, when the value is one.
    public var objectValue: ObjectReference? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// A date written in ISO 8601: a date and time with a zone (`Z` or an
    /// offset), with or without fractional seconds, or a date alone (its
    /// midnight in UTC). The one form Sift reads dates from text in. A date
    /// and time with fractional seconds is read exactly: its digits, however
    /// many, are the decimal the date's seconds since 2001 round to, so the
    /// text the store API writes reads back as the same date.
    ///
    /// - Parameter text: The text, such as `2024-05-01T09:30:00Z` or `2024-05-01`.
    /// - Returns: The date; nil when the text is not one of those forms.
    public static func iso8601Date(_ text: String) -> Date? {
        guard text.utf8.count <= 64 else { return nil }
        if let date = exactISO8601Date(text) { return date }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle().year().month().day())
    }

    /// Whether the value is nil.
    public var isNil: Bool {
        if case .null = self { return true }
        return false
    }

    /// The value as `type`, when it holds one.
    ///
    /// ```swift
    /// let pages: PredicateValue = 320
    /// pages.as(Int.self)          // 320
    /// pages.as(String.self)       // nil
    /// ```
    ///
    /// - Parameter type: The Swift type to read the value as.
    /// - Returns: The value as `type`; nil when it holds nil or a value of another kind.
    public func `as`<T: PredicateValueRepresentable>(_ type: T.Type) -> T? {
        T(predicateValue: self)
    }
}

/// A Swift type a `PredicateValue` can be read as, and written from: the
/// types of a record's properties, and of typed reads of an object.
public protocol PredicateValueRepresentable: PredicateValueConvertible {
    /// The value as this type; nil when it holds nil or a value of another kind.
    ///
    /// - Parameter predicateValue: The value to read.
    init?(predicateValue: PredicateValue)
}

extension PredicateValue: PredicateValueRepresentable {
    /// The value itself (any value reads as a `PredicateValue`).
    ///
    /// - Parameter predicateValue: The value.
    public init?(predicateValue: PredicateValue) { self = predicateValue }
}

extension String: PredicateValueRepresentable {
    /// The string a value holds.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let s = predicateValue.stringValue else { return nil }
        self = s
    }
}

extension Bool: PredicateValueRepresentable {
    /// The Boolean a value holds.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let b = predicateValue.boolValue else { return nil }
        self = b
    }
}

extension Double: PredicateValueRepresentable {
    /// The number a value holds, as a double.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let d = predicateValue.doubleValue else { return nil }
        self = d
    }
}

extension Float: PredicateValueRepresentable {
    /// The number a value holds, as a float.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let d = predicateValue.doubleValue else { return nil }
        self = Float(d)
    }
}

extension Decimal: PredicateValueRepresentable {
    /// The number a value holds, as a decimal.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let d = predicateValue.decimalValue else { return nil }
        self = d
    }
}

extension Date: PredicateValueRepresentable {
    /// The date a value holds.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let d = predicateValue.dateValue else { return nil }
        self = d
    }
}

extension Data: PredicateValueRepresentable {
    /// The bytes a value holds.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let d = predicateValue.dataValue else { return nil }
        self = d
    }
}

extension UUID: PredicateValueRepresentable {
    /// The UUID a value holds.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let u = predicateValue.uuidValue else { return nil }
        self = u
    }
}

extension ObjectReference: PredicateValueRepresentable {
    /// The object reference a value holds.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let o = predicateValue.objectValue else { return nil }
        self = o
    }
}

extension Int: PredicateValueRepresentable {
    /// The integer a value holds, when an `Int` holds it.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let i = predicateValue.int64Value.flatMap({ Int(exactly: $0) }) else { return nil }
        self = i
    }
}

extension Int64: PredicateValueRepresentable {
    /// The integer a value holds.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let i = predicateValue.int64Value else { return nil }
        self = i
    }
}

extension Int32: PredicateValueRepresentable {
    /// The integer a value holds, when an `Int32` holds it.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let i = predicateValue.int64Value.flatMap({ Int32(exactly: $0) }) else { return nil }
        self = i
    }
}

extension Int16: PredicateValueRepresentable {
    /// The integer a value holds, when an `Int16` holds it.
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        guard let i = predicateValue.int64Value.flatMap({ Int16(exactly: $0) }) else { return nil }
        self = i
    }
}

extension Optional: PredicateValueRepresentable where Wrapped: PredicateValueRepresentable {
    /// Nil for a nil value; the wrapped type's reading of any other (nil
    /// when it does not read as one: the whole read fails).
    ///
    /// - Parameter predicateValue: The value to read.
    public init?(predicateValue: PredicateValue) {
        if predicateValue.isNil {
            self = .none
            return
        }
        guard let wrapped = Wrapped(predicateValue: predicateValue) else { return nil }
        self = .some(wrapped)
    }
}

/// `Decimal` values convert to doubles (a decimal attribute holds one).
extension Decimal: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .double(NSDecimalNumber(decimal: self).doubleValue) }
}
