// PostgreSQL: a connection to a server that runs the statements the SQL stage
// builds in PostgreSQL's dialect — Sift's values bound as parameters, rows
// read back as Sift's values. The store on PostgreSQL builds on it.

#if PostgreSQL  // the package trait that brings postgres-nio (on by default)
import Foundation
import Logging
import PostgresNIO
import Sift

/// Why a PostgreSQL statement failed.
public struct PostgresDatabaseError: Error, CustomStringConvertible, Sendable {
    /// What failed, with the server's message when it sent one.
    public var message: String
    /// The statement, when one was running.
    public var sql: String?

    /// An error with the server's `message`, and the statement it was for.
    ///
    /// - Parameters:
    ///   - message: What failed, with the server's message when it sent one.
    ///   - sql: The statement that was running, if any.
    public init(message: String, sql: String? = nil) {
        self.message = message
        self.sql = sql
    }

    public var description: String { message + (sql.map { " (in: \($0))" } ?? "") }

    /// postgres-nio's error, with the server's message when it sent one.
    init(_ error: PSQLError, sql: String?) {
        self.init(message: error.serverInfo?[.message] ?? String(reflecting: error), sql: sql)
        code = error.serverInfo?[.sqlState]
        table = error.serverInfo?[.tableName]
    }

    /// The server's SQLSTATE code, when it sent one (`40001`: a serialization failure).
    public var code: String?

    /// The table the error is about, when the server named one (a
    /// constraint's table, say).
    public var table: String?

    /// The SQLSTATE codes Sift reads, named once.
    public enum SQLState {
        /// `22003`, numeric value out of range: an integer past 64 bits.
        public static let numericValueOutOfRange = "22003"
        /// `23505`, unique violation: a primary key the table holds already.
        public static let uniqueViolation = "23505"
        /// `57014`, query canceled: a statement past its `statement_timeout`.
        public static let queryCanceled = "57014"
    }
}

/// A connection to a PostgreSQL server.
///
/// Close it (`close()`) before its last reference goes: postgres-nio checks,
/// in debug builds, that a connection was closed before it is released.
///
/// ```swift
/// let database = try await PostgresDatabase.connect(url: "postgres://sift@127.0.0.1:5432/postgres")
/// let rows = try await database.rows(schema.selectRows(entity, keys: [1, 2]))
/// ```
public final class PostgresDatabase: Sendable {
    let connection: PostgresConnection
    let logger: Logger

    init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// Connects to the server a `postgres://user[:password]@host[:port]/database` URL names.
    ///
    /// - Parameter text: The server's URL, `postgres://` or `postgresql://`, with a user and a host (TLS is not
    ///   used).
    /// - Returns: The open connection.
    /// - Throws: `PostgresDatabaseError` when `text` is not such a URL, or the server cannot be reached or
    ///   refuses the connection.
    public static func connect(url text: String) async throws -> PostgresDatabase {
        guard let url = URL(string: text), ["postgres", "postgresql"].contains(url.scheme ?? ""), let host = url.host,
              let user = url.user, !user.isEmpty else {
            throw PostgresDatabaseError(message: "'\(text)' is not a postgres://user@host[:port]/database URL")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        let configuration = PostgresConnection.Configuration(
            host: host, port: url.port ?? 5432, username: user, password: url.password,
            database: database.isEmpty ? nil : database, tls: .disable)
        let logger = Logger(label: "sift.postgres")
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
            return PostgresDatabase(connection: connection, logger: logger)
        } catch {
            throw PostgresDatabaseError(message: "cannot connect to \(host):\(url.port ?? 5432): \(String(reflecting: error))")
        }
    }

    /// Closes the connection.
    ///
    /// - Throws: postgres-nio's error when the connection does not close cleanly.
    public func close() async throws {
        try await connection.close()
    }

    /// Runs statements given as text, with no parameters.
    ///
    /// - Parameter sql: The SQL to run.
    /// - Throws: `PostgresDatabaseError` when the server refuses it (with the server's message and SQLSTATE
    ///   `code`); postgres-nio's decoding error when a cell it returns cannot be read.
    public func execute(_ sql: String) async throws {
        try await rows(sql, [])
    }

    /// Runs a statement the SQL stage built, with its own bindings or `bindings`.
    ///
    /// - Parameters:
    ///   - query: The statement, with its bindings.
    ///   - bindings: Values to bind instead of the query's own; nil for its own.
    /// - Throws: `PostgresDatabaseError` when a value cannot be bound (an array of mixed members) or the server
    ///   refuses the statement (with its message and SQLSTATE `code`); postgres-nio's decoding error when a
    ///   cell it returns cannot be read.
    public func run(_ query: SQLQuery, _ bindings: [SQLValue]? = nil) async throws {
        try await rows(query.sql, bindings ?? query.bindings)
    }

    /// The rows a statement gives, each a row of values.
    ///
    /// - Parameters:
    ///   - query: The statement, with its bindings.
    ///   - bindings: Values to bind instead of the query's own; nil for its own.
    /// - Returns: Every row, each the values of its columns in order.
    /// - Throws: `PostgresDatabaseError` when a value cannot be bound (an array of mixed members) or the server
    ///   refuses the statement (with its message and SQLSTATE `code`); postgres-nio's decoding error when a
    ///   cell cannot be read.
    public func rows(_ query: SQLQuery, _ bindings: [SQLValue]? = nil) async throws -> [[SQLValue]] {
        try await rows(query.sql, bindings ?? query.bindings)
    }

    @discardableResult
    func rows(_ sql: String, _ bindings: [SQLValue]) async throws -> [[SQLValue]] {
        let query = try Self.query(sql, bindings)
        do {
            var result: [[SQLValue]] = []
            for try await row in try await connection.query(query, logger: logger) {
                result.append(try row.map(Self.value))
            }
            return result
        } catch let error as PSQLError {
            throw PostgresDatabaseError(error, sql: sql)
        }
    }
}

extension PostgresDatabaseError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}
#endif
