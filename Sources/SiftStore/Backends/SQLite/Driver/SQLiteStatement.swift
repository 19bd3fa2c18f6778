// Store stage (SQLite driver): prepared statements and reading their rows.

import CSQLite
import Foundation
import Sift

/// A prepared statement, reused through the connection's cache.
public final class SQLiteStatement {
    let handle: OpaquePointer
    /// The statement's SQL.
    public let sql: String

    init(handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// The number of columns a row has.
    public var columnCount: Int { Int(sqlite3_column_count(handle)) }

    /// The value of column `index` of the current row.
    ///
    /// - Parameter index: The column's index, from 0.
    /// - Returns: The value as SQLite holds it: an integer, real, text or blob, or `.null`.
    @inline(__always)
    public func column(_ index: Int) -> SQLValue {
        // (One call into the statement, then reads of its value: see `append(_:as:to:)`.)
        guard let value = sqlite3_column_value(handle, Int32(index)) else { return .null }
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            guard let bytes = sqlite3_value_text(value) else { return .text("") }
            let count = Int(sqlite3_value_bytes(value))
            return .text(String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            guard let bytes = sqlite3_value_blob(value) else { return .blob(Data()) }
            let count = Int(sqlite3_value_bytes(value))
            return .blob(count > 0 ? Data(bytes: bytes, count: count) : Data())
        default: return .null
        }
    }

    /// Column `index` as a value of an attribute of `type`, read without an
    /// intermediate `SQLValue`.
    ///
    /// - Parameters:
    ///   - index: The column's index, from 0.
    ///   - type: The type of the attribute the column stores.
    /// - Returns: The column's value as a value of `type`; `.null` for NULL.
    @inline(__always)
    public func value(_ index: Int, as type: AttributeType) -> PredicateValue {
        guard let value = sqlite3_column_value(handle, Int32(index)) else { return .null }
        let columnType = sqlite3_value_type(value)
        if columnType == SQLITE_NULL { return .null }
        switch type {
        case .integer16, .integer32, .integer64:
            if columnType == SQLITE_INTEGER { return .int(sqlite3_value_int64(value)) }
        case .double, .float, .decimal:
            if columnType == SQLITE_FLOAT || columnType == SQLITE_INTEGER { return .double(sqlite3_value_double(value)) }
        case .boolean:
            if columnType == SQLITE_INTEGER { return .bool(sqlite3_value_int64(value) != 0) }
        case .date:
            if columnType == SQLITE_FLOAT || columnType == SQLITE_INTEGER {
                return .date(Date(timeIntervalSinceReferenceDate: sqlite3_value_double(value)))
            }
        case .string, .uri:
            if columnType == SQLITE_TEXT, let bytes = sqlite3_value_text(value) {
                let count = Int(sqlite3_value_bytes(value))
                return .string(String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self))
            }
        case .uuid, .binary, .transformable, .objectID, .composite, .undefined:
            break
        }
        return PredicateValue(sqlValue: column(index), type: type)
    }

    /// Adds column `index`, as a value of an attribute of `type`, to a
    /// batch's column: what `value(_:as:)` gives, without making a
    /// `PredicateValue` for the common types.
    ///
    /// - Parameters:
    ///   - index: The column's index, from 0.
    ///   - type: The type of the attribute the column stores.
    ///   - column: The batch's column to add the value to.
    @inline(__always)
    package func append(_ index: Int, as type: AttributeType, to column: ColumnBuilder) {
        // One call into the statement, then reads of the value it gives,
        // which take no lock and check no statement: a cell costs one
        // `sqlite3_column_*` call, not two or three. (The value is valid
        // until the next step; the connection is this thread's meanwhile.)
        // (A column of the statement's own layout: its index fits in 32 bits.)
        guard let value = sqlite3_column_value(handle, Int32(truncatingIfNeeded: index)) else { return column.appendNull() }
        let columnType = sqlite3_value_type(value)
        if columnType == SQLITE_NULL { return column.appendNull() }
        switch type {
        case .integer16, .integer32, .integer64:
            if columnType == SQLITE_INTEGER { return column.appendInteger(sqlite3_value_int64(value)) }
        case .double, .float, .decimal:
            if columnType == SQLITE_FLOAT || columnType == SQLITE_INTEGER { return column.appendDouble(sqlite3_value_double(value)) }
        case .boolean:
            if columnType == SQLITE_INTEGER { return column.appendBool(sqlite3_value_int64(value) != 0) }
        case .date:
            if columnType == SQLITE_FLOAT || columnType == SQLITE_INTEGER {
                return column.appendDate(secondsSinceReferenceDate: sqlite3_value_double(value))
            }
        case .string, .uri:
            if columnType == SQLITE_TEXT, let bytes = sqlite3_value_text(value) {
                let count = Int(sqlite3_value_bytes(value))
                return column.appendString(String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self))
            }
        case .uuid, .binary, .transformable, .objectID, .composite, .undefined:
            break
        }
        column.append(PredicateValue(sqlValue: self.column(index), type: type))
    }

    /// Column `index` as a key: nil for NULL, the integer otherwise (a
    /// to-one's destination), read with one call into the statement.
    ///
    /// - Parameter index: The column's index, from 0.
    /// - Returns: The column's value as a 64-bit integer, or nil.
    @inline(__always)
    package func key(_ index: Int) -> Int64? {
        guard let value = sqlite3_column_value(handle, Int32(truncatingIfNeeded: index)), sqlite3_value_type(value) != SQLITE_NULL else { return nil }
        return sqlite3_value_int64(value)
    }

    /// Column `index` as an integer (0 for NULL).
    ///
    /// - Parameter index: The column's index, from 0.
    /// - Returns: The column's value as a 64-bit integer.
    @inline(__always)
    public func integer(_ index: Int) -> Int64 { sqlite3_column_int64(handle, Int32(index)) }

    /// Whether column `index` is NULL.
    ///
    /// - Parameter index: The column's index, from 0.
    /// - Returns: `true` when the column's value is NULL.
    @inline(__always)
    public func isNull(_ index: Int) -> Bool { sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL }
}
