// Store stage (SQLite driver): the one error SQLite's failures become, with
// SQLite's own result code and message.

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

    /// Whether SQLite refused a statement for its size: an expression tree
    /// too deep, too many variables, terms or tables, a parser stack
    /// overflow, a string or pattern too long.
    public var isLimit: Bool {
        code & 0xFF == SQLITE_TOOBIG
            || ["too large", "too many", "stack overflow", "too big", "too complex", "at most"]
                .contains { message.contains($0) }
    }
}

extension SQLiteError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}
