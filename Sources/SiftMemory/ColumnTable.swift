// Stage 6a (memory lowering): dictionaries laid out as columns, one per key — the form
// of plain values a predicate bound without a model reads fastest. A key of
// the predicate is resolved to its column once, when the predicate is
// compiled for the table, instead of being hashed and looked up per value;
// and a column is one contiguous array, read in order.

import SiftTree
import SiftValues

/// Dictionaries (value trees) laid out as columns: row `i` of the table is
/// the `i`-th dictionary, and the column of a key holds each row's value
/// for it (nil where a row has no such key).
///
/// ```swift
/// let rows: [PredicateValue] = [["name": "Ann", "age": 41], ["name": "Bob", "age": 17]]
/// guard let table = ColumnTable(rows) else { return }     // nil when a row is not a dictionary
/// // `age >= 18`, bound without a model: each row's `age` is read from its column.
/// let age = BoundExpression(.key(BoundExpression(.evaluatedObject, type: .any), "age"), type: .any)
/// let adults = MemoryPredicate(.comparison(BoundComparison(age, .greaterThanOrEqualTo,
///                                                          .constant(18, type: .integer))),
///                              domain: ColumnDomain(table: table), locations: [:])
/// let matching = try adults.matchingIndices(count: table.count) { .row($0) }
/// print(matching, matching.map(table.dictionary(at:)))     // [0] [{"age": 41, "name": "Ann"}]
/// ```
public struct ColumnTable: Sendable {
    /// The number of rows.
    public let count: Int
    /// The column of each key.
    let columnOfKey: [String: Int]
    /// The keys, in column order.
    let keys: [String]
    /// Each column's values, one per row.
    let columns: [[PredicateValue?]]

    /// The dictionaries of `rows` as columns; nil when a row is not a
    /// dictionary, or when the rows share so few keys that columns would
    /// mostly hold nothing (more cells than four times their members, once
    /// there are over 65 536 cells).
    ///
    /// - Parameter rows: The rows, each a dictionary value tree.
    public init?(_ rows: [PredicateValue]) {
        var columnOfKey: [String: Int] = [:]
        var keys: [String] = []
        var members = 0
        for value in rows {
            guard case .dictionary(let dictionary) = value else { return nil }
            members += dictionary.count
            for key in dictionary.keys where columnOfKey[key] == nil {
                columnOfKey[key] = keys.count
                keys.append(key)
            }
        }
        let (cells, overflow) = keys.count.multipliedReportingOverflow(by: rows.count)
        guard !overflow, cells <= max(4 * members, 1 << 16) else { return nil }
        var columns = [[PredicateValue?]](repeating: Array(repeating: nil, count: rows.count), count: keys.count)
        for (row, value) in rows.enumerated() {
            guard case .dictionary(let dictionary) = value else { return nil }
            for (key, member) in dictionary { columns[columnOfKey[key]!][row] = member }
        }
        self.count = rows.count
        self.columnOfKey = columnOfKey
        self.keys = keys
        self.columns = columns
    }

    /// Row `row` as the dictionary it was.
    ///
    /// - Parameter row: The row's index, in `0..<count`.
    /// - Returns: A `PredicateValue.dictionary` holding the row's keys that have
    ///   a value.
    public func dictionary(at row: Int) -> PredicateValue {
        var dictionary: [String: PredicateValue] = [:]
        for (column, key) in keys.enumerated() {
            if let value = columns[column][row] { dictionary[key] = value }
        }
        return .dictionary(dictionary)
    }
}

/// An object a predicate evaluates against a column table: a row of the
/// table, or a value reached from one (a nested dictionary, an array).
public enum ColumnItem {
    /// The row of the table at the given index.
    case row(Int)
    /// A value reached from a row, such as a nested dictionary or an array,
    /// read as a value tree.
    case value(PredicateValue)
}

/// Evaluates predicates bound without a model against the rows of one
/// column table: a key of the evaluated row reads its column directly;
/// values reached from a row are read as value trees (`ValueTreeDomain`).
public struct ColumnDomain: EvaluationDomain, Sendable {
    public typealias Object = ColumnItem

    /// A key, and its column in the table (nil when no row has the key).
    public struct KeyHandle: Sendable {
        let name: String
        let column: [PredicateValue?]?
    }

    /// The rows predicates are compiled for.
    public let table: ColumnTable

    /// Creates a domain that evaluates predicates against the rows of a table.
    ///
    /// - Parameter table: The rows predicates are compiled for.
    public init(table: ColumnTable) {
        self.table = table
    }

    /// Finds the column of `key` once, so each row reads its cell directly.
    ///
    /// - Parameter key: A key of the predicate.
    /// - Returns: The key and its column (nil when no row has the key).
    public func handle(forKey key: String) -> KeyHandle {
        KeyHandle(name: key, column: table.columnOfKey[key].map { table.columns[$0] })
    }

    /// The column of the attribute's name.
    ///
    /// - Parameter attribute: The attribute a bound predicate reads.
    /// - Returns: The handle of its name, as `handle(forKey:)` gives it.
    public func handle(for attribute: AttributeReference) -> KeyHandle { handle(forKey: attribute.name) }
    /// The column of the relationship's name.
    ///
    /// - Parameter relationship: The relationship a bound predicate follows.
    /// - Returns: The handle of its name, as `handle(forKey:)` gives it.
    public func handle(for relationship: RelationshipReference) -> KeyHandle { handle(forKey: relationship.name) }

    /// A row's cell, or a value's member under the key.
    ///
    /// - Parameters:
    ///   - key: The key's handle.
    ///   - object: The row or value to read.
    /// - Returns: The value under the key; `.null` when there is none.
    public func value(_ key: KeyHandle, of object: ColumnItem) -> PredicateValue {
        if case .found(let value) = value(forKey: key, in: object) { return value }
        return .null
    }

    /// The value under the key, as an item.
    ///
    /// - Parameters:
    ///   - key: The key's handle.
    ///   - object: The row or value to read.
    /// - Returns: The value under the key, or nil when the item has no keys.
    public func object(_ key: KeyHandle, of object: ColumnItem) -> ColumnItem? {
        if case .found(let item) = lookUp(key, in: object) { return item }
        return nil
    }

    /// The members of the value under the key.
    ///
    /// - Parameters:
    ///   - key: The key's handle.
    ///   - object: The row or value to read.
    /// - Returns: The members of an array; nothing for nil; the value alone
    ///   otherwise.
    public func objects(_ key: KeyHandle, of object: ColumnItem) -> [ColumnItem] {
        guard case .found(let item) = lookUp(key, in: object) else { return [] }
        return members(of: item)
    }

    /// A row as the dictionary it was; a value as itself.
    ///
    /// - Parameter object: The row or value.
    /// - Returns: The value that stands for it.
    public func reference(to object: ColumnItem) -> PredicateValue {
        switch object {
        case .row(let row): table.dictionary(at: row)
        case .value(let value): value
        }
    }

    /// A row's cell, read from the key's column; a value's member, as
    /// `ValueTreeDomain` reads it.
    ///
    /// - Parameters:
    ///   - key: The key's handle.
    ///   - object: The row or value to read.
    /// - Returns: `KeyLookup.found` with the key's value, or
    ///   `KeyLookup.notKeyed` with the name of the type that has no keys.
    @inline(__always)
    public func value(forKey key: KeyHandle, in object: ColumnItem) -> KeyLookup<PredicateValue> {
        switch object {
        case .row(let row): .found(key.column?[row] ?? .null)
        case .value(let value): ValueTreeDomain().value(forKey: key.name, in: value)
        }
    }

    /// The value under the key, as an item.
    ///
    /// - Parameters:
    ///   - key: The key's handle.
    ///   - object: The row or value to read.
    /// - Returns: `KeyLookup.found` with the key's value, or
    ///   `KeyLookup.notKeyed` with the name of the type that has no keys.
    public func lookUp(_ key: KeyHandle, in object: ColumnItem) -> KeyLookup<ColumnItem> {
        switch value(forKey: key, in: object) {
        case .found(let value): .found(.value(value))
        case .notKeyed(let type): .notKeyed(type)
        }
    }

    /// A row alone; the members of a value, as `ValueTreeDomain` takes them.
    ///
    /// - Parameter object: The row or value.
    /// - Returns: Its members, in order.
    public func members(of object: ColumnItem) -> [ColumnItem] {
        switch object {
        case .row: [object]
        case .value(let value): ValueTreeDomain().members(of: value).map(ColumnItem.value)
        }
    }

    /// A value as an item.
    ///
    /// - Parameter value: A value of the predicate or of its arguments.
    /// - Returns: The value, wrapped.
    public func object(from value: PredicateValue) -> ColumnItem? { .value(value) }
}
