// Stage 0 (values): constant values, as literals and format arguments give them.

import Foundation

/// A reference to one object of an entity, by its primary key.
///
/// Passed as a format argument it makes `SELF == %@`, `manager IN %@` and
/// `reports CONTAINS %@` work on objects rather than on values.
public struct ObjectReference: Hashable, Sendable, CustomStringConvertible {
    /// The entity's name, as the model spells it.
    public var entity: String
    /// The object's primary key within its entity.
    public var id: Int64

    /// Creates a reference to the object `id` of `entity`.
    ///
    /// - Parameters:
    ///   - entity: The entity's name, as the model spells it.
    ///   - id: The object's primary key within its entity.
    public init(entity: String, id: Int64) {
        self.entity = entity
        self.id = id
    }

    public var description: String { "<\(entity) \(id)>" }
}

/// A constant in a predicate: a literal in its text or a value given as a
/// format argument.
///
/// Literals convert without ceremony, so an argument list reads naturally:
///
/// ```swift
/// let tree = try PredicateParser.parse(
///     "age > %@ AND name BEGINSWITH %@ AND nickname == %@", arguments: [40, "J", nil])
/// ```
///
/// Other Swift values convert through ``PredicateValueConvertible``:
/// `PredicateValue(Date())`, `PredicateValue(UUID())`.
public enum PredicateValue: Hashable, Sendable {
    /// `nil`, `NULL`, or a missing value.
    case null
    /// `TRUE`, `FALSE`, `YES`, `NO`.
    case bool(Bool)
    /// A whole number.
    case int(Int64)
    /// A floating-point number.
    case double(Double)
    /// A string.
    case string(String)
    /// A point in time.
    case date(Date)
    /// Raw bytes.
    case data(Data)
    /// A UUID.
    case uuid(UUID)
    /// An ordered collection, as `%@` given an array.
    case array([PredicateValue])
    /// A dictionary, as `%@` given one (indexed with `['key']`).
    case dictionary([String: PredicateValue])
    /// A reference to one stored object. (Boxed, so that every value fits in
    /// 24 bytes: row-cache nodes hold many of them.)
    indirect case object(ObjectReference)

    /// Converts any value that knows how.
    ///
    /// - Parameter value: The value to convert, such as a `Date` or a `UUID`.
    public init(_ value: some PredicateValueConvertible) {
        self = value.predicateValue
    }

    /// A short name of the value's kind, for messages: "a number", "a string".
    public var kindDescription: String {
        switch self {
        case .null: "nil"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .date: "a date"
        case .data: "binary data"
        case .uuid: "a UUID"
        case .array: "an array"
        case .dictionary: "a dictionary"
        case .object: "an object reference"
        }
    }
}

extension PredicateValue {
    /// A UUID from its 16 bytes, as Core Data stores one; nil for other data.
    ///
    /// - Parameter data: The UUID's bytes; anything but 16 bytes gives nil.
    public init?(uuidBytes data: Data) {
        guard data.count == 16 else { return nil }
        self = .uuid(UUID(uuid: data.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }))
    }

    /// A UUID's 16 bytes, as Core Data stores one.
    ///
    /// - Parameter uuid: The UUID.
    /// - Returns: Its 16 bytes, in order.
    public static func bytes(of uuid: UUID) -> Data { withUnsafeBytes(of: uuid.uuid) { Data($0) } }
}

extension PredicateValue {
    /// Values are equal when they are the same value: strings by their
    /// Unicode scalars (as Sift compares them, and SQLite's BINARY does), not
    /// by Swift's canonical equivalence — "é" and "e\u{301}" are different
    /// constants, so trees that hold them are different trees.
    public static func == (lhs: PredicateValue, rhs: PredicateValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.string(let a), .string(let b)): return a.utf8.elementsEqual(b.utf8)
        case (.date(let a), .date(let b)): return a == b
        case (.data(let a), .data(let b)): return a == b
        case (.uuid(let a), .uuid(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.dictionary(let a), .dictionary(let b)): return a == b
        case (.object(let a), .object(let b)): return a == b
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(1); hasher.combine(b)
        case .int(let i): hasher.combine(2); hasher.combine(i)
        case .double(let d): hasher.combine(3); hasher.combine(d)
        case .string(let s):
            hasher.combine(4)
            for byte in s.utf8 { hasher.combine(byte) }
        case .date(let d): hasher.combine(5); hasher.combine(d)
        case .data(let d): hasher.combine(6); hasher.combine(d)
        case .uuid(let u): hasher.combine(7); hasher.combine(u)
        case .array(let a): hasher.combine(8); hasher.combine(a)
        case .dictionary(let d): hasher.combine(9); hasher.combine(d)
        case .object(let o): hasher.combine(10); hasher.combine(o)
        }
    }
}

extension PredicateValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// Creates `null` from the literal `nil`.
    ///
    /// - Parameter nilLiteral: The empty value Swift passes for `nil`.
    public init(nilLiteral: ()) { self = .null }
    /// Creates a boolean from the literal `true` or `false`.
    ///
    /// - Parameter value: The literal's value.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// Creates a whole number from an integer literal.
    ///
    /// - Parameter value: The literal's value.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// Creates a floating-point number from a floating-point literal.
    ///
    /// - Parameter value: The literal's value.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// Creates a string from a string literal.
    ///
    /// - Parameter value: The literal's text.
    public init(stringLiteral value: String) { self = .string(value) }
    /// Creates an ordered collection from an array literal.
    ///
    /// - Parameter elements: The members, in order.
    public init(arrayLiteral elements: PredicateValue...) { self = .array(elements) }
    /// Creates a dictionary from a dictionary literal; when a key appears
    /// more than once, the last value for it is kept.
    ///
    /// - Parameter elements: The keys and their values.
    public init(dictionaryLiteral elements: (String, PredicateValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// A Swift type whose values can stand as constants in a predicate.
///
/// `Int` and the other integer types, `Double`, `Float`, `String`, `Bool`,
/// `Date`, `UUID`, `Data`, ``ObjectReference``, arrays and optionals of these
/// already conform. Conform your own types to pass them as format arguments.
public protocol PredicateValueConvertible {
    /// The value as a predicate constant.
    var predicateValue: PredicateValue { get }
}

extension PredicateValue: PredicateValueConvertible {
    public var predicateValue: PredicateValue { self }
}
/// `Bool` values convert to booleans.
extension Bool: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .bool(self) }
}
/// `String` values convert to strings.
extension String: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .string(self) }
}
/// `Substring` values convert to strings.
extension Substring: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .string(String(self)) }
}
/// `Double` values convert to floating-point numbers.
extension Double: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .double(self) }
}
/// `Float` values convert to floating-point numbers.
extension Float: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .double(Double(self)) }
}
/// `Date` values convert to dates.
extension Date: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .date(self) }
}
/// `UUID` values convert to UUIDs.
extension UUID: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .uuid(self) }
}
/// `Data` values convert to raw bytes.
extension Data: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .data(self) }
}
extension ObjectReference: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .object(self) }
}
/// `Int` values convert to whole numbers.
extension Int: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .int(Int64(self)) }
}
/// `Int8` values convert to whole numbers.
extension Int8: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .int(Int64(self)) }
}
/// `Int16` values convert to whole numbers.
extension Int16: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .int(Int64(self)) }
}
/// `Int32` values convert to whole numbers.
extension Int32: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .int(Int64(self)) }
}
/// `Int64` values convert to whole numbers.
extension Int64: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .int(self) }
}
/// `UInt8` values convert to whole numbers.
extension UInt8: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .int(Int64(self)) }
}
/// `UInt16` values convert to whole numbers.
extension UInt16: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .int(Int64(self)) }
}
/// `UInt32` values convert to whole numbers.
extension UInt32: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .int(Int64(self)) }
}
/// `UInt` values convert to whole numbers, or to floating-point numbers above
/// `Int64.max`.
extension UInt: PredicateValueConvertible {
    /// Values above `Int64.max` become doubles rather than wrapping.
    public var predicateValue: PredicateValue {
        self <= UInt(Int64.max) ? .int(Int64(self)) : .double(Double(self))
    }
}
/// `UInt64` values convert to whole numbers, or to floating-point numbers above
/// `Int64.max`.
extension UInt64: PredicateValueConvertible {
    /// Values above `Int64.max` become doubles rather than wrapping.
    public var predicateValue: PredicateValue {
        self <= UInt64(Int64.max) ? .int(Int64(self)) : .double(Double(self))
    }
}
/// Optionals of convertible values convert to their wrapped value, or to `null`
/// when nil.
extension Optional: PredicateValueConvertible where Wrapped: PredicateValueConvertible {
    public var predicateValue: PredicateValue { self?.predicateValue ?? .null }
}
/// Arrays of convertible values convert to ordered collections.
extension Array: PredicateValueConvertible where Element: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .array(map(\.predicateValue)) }
}
/// Sets of convertible values convert to collections, in the set's iteration
/// order.
extension Set: PredicateValueConvertible where Element: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .array(map(\.predicateValue)) }
}
/// Dictionaries with `String` keys and convertible values convert to
/// dictionaries.
extension Dictionary: PredicateValueConvertible where Key == String, Value: PredicateValueConvertible {
    public var predicateValue: PredicateValue { .dictionary(mapValues(\.predicateValue)) }
}
