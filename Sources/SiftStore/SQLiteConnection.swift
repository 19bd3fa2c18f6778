// Store stage: a thin, typed layer over the system SQLite.
//
// Everything the store does with SQLite goes through here: connections,
// prepared statements, bindings and errors that carry SQLite's code, message
// and the SQL that failed. Values always reach SQLite as bound parameters.

import CSQLite
import Foundation

/// An error reported by SQLite, with its result code, its message and the SQL
/// that caused it.
public struct SQLiteError: Error, Hashable, Sendable, CustomStringConvertible {
    /// SQLite's (extended) result code, such as `SQLITE_CONSTRAINT` (19).
    public var code: Int32
    /// SQLite's message.
    public var message: String
    /// The SQL being prepared or run, if any.
    public var sql: String?

    public var description: String {
        "SQLite error \(code): \(message)" + (sql.map { " (in: \($0))" } ?? "")
    }
}

/// A value as SQLite stores it.
public enum SQLiteValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
}

/// One connection to an SQLite database. Not shareable between threads: the
/// store serializes access to it.
public final class SQLiteConnection {
    let handle: OpaquePointer

    /// Opens (creating if needed) the database at `path`, or an in-memory
    /// database when `path` is `":memory:"`.
    public init(path: String = ":memory:") throws(SQLiteError) {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open database"
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteError(code: status, message: message, sql: nil)
        }
        self.handle = handle
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// The version of the SQLite library, such as "3.40.1".
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }

    /// Runs SQL that returns no rows (several statements may be separated by `;`).
    public func execute(_ sql: String) throws(SQLiteError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if status != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(errorMessage)
            throw SQLiteError(code: status, message: message, sql: sql)
        }
    }

    /// Runs one statement with `arguments` bound to its `?` parameters and
    /// returns its rows.
    public func query(_ sql: String, _ arguments: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        for (index, argument) in arguments.enumerated() {
            try bind(argument, at: Int32(index + 1), in: statement, sql: sql)
        }
        var rows: [[SQLiteValue]] = []
        while true {
            let status = sqlite3_step(statement)
            if status == SQLITE_DONE { return rows }
            guard status == SQLITE_ROW else { throw error(status, sql: sql) }
            let count = sqlite3_column_count(statement)
            rows.append((0..<count).map { column(at: $0, in: statement) })
        }
    }

    func prepare(_ sql: String) throws(SQLiteError) -> OpaquePointer {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw error(status, sql: sql) }
        return statement
    }

    func bind(_ value: SQLiteValue, at index: Int32, in statement: OpaquePointer, sql: String) throws(SQLiteError) {
        let status: Int32
        switch value {
        case .null: status = sqlite3_bind_null(statement, index)
        case .integer(let i): status = sqlite3_bind_int64(statement, index, i)
        case .real(let d): status = sqlite3_bind_double(statement, index, d)
        case .text(let s): status = sqlite3_bind_text(statement, index, s, -1, SQLITE_TRANSIENT)
        case .blob(let data):
            status = data.withUnsafeBytes { bytes in
                sqlite3_bind_blob(statement, index, bytes.baseAddress, Int32(bytes.count), SQLITE_TRANSIENT)
            }
        }
        guard status == SQLITE_OK else { throw error(status, sql: sql) }
    }

    func column(at index: Int32, in statement: OpaquePointer) -> SQLiteValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT: return .text(String(cString: sqlite3_column_text(statement, index)))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard count > 0, let bytes = sqlite3_column_blob(statement, index) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default: return .null
        }
    }

    func error(_ status: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: status, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}

/// SQLite copies transient bindings before the call returns.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
