// Store stage: a thin, typed layer over the system SQLite.
//
// Everything the store does with SQLite goes through here: connections,
// prepared statements (cached by SQL text), bindings, application-defined
// functions, transactions, and errors that carry SQLite's code, message and
// the SQL that failed. Values reach SQLite only as bound parameters. Every
// statement run is counted and, when SIFT_LOG_SQL=1, logged through swift-log.

import CSQLite
import Foundation
import Logging
import Sift

/// One connection to an SQLite database. Not shareable between threads: the
/// store serializes access to it.
public final class SQLiteConnection {
    let handle: OpaquePointer
    private var statements: [String: SQLiteStatement] = [:]
    private var functions: [Unmanaged<FunctionBox>] = []
    /// How many statements have run on this connection.
    public private(set) var statementCount = 0
    /// Logs every statement at debug level; on when the environment has
    /// SIFT_LOG_SQL=1.
    public var logger: Logger {
        didSet { logsStatements = logger.logLevel <= .debug }
    }
    /// Whether `logger` logs statements: read once per change of it, not
    /// through its handler at every statement.
    private var logsStatements: Bool

    /// Opens (creating if needed) the database at `path`, or an in-memory
    /// database when `path` is `":memory:"`. A `readOnly` connection never
    /// creates or writes the file. While another connection or process holds
    /// a lock the connection needs, it waits up to `busyTimeout` seconds,
    /// then fails with `SQLITE_BUSY`.
    ///
    /// - Parameters:
    ///   - path: The database file, or `":memory:"` for an in-memory database.
    ///   - readOnly: Whether the connection only reads: it neither creates nor writes the file.
    ///   - busyTimeout: How many seconds to wait for another connection's lock before failing.
    /// - Throws: `SQLiteError` with SQLite's code and message when the database cannot be opened (a missing
    ///   file opened read-only, a folder that cannot be written, …).
    public init(path: String = ":memory:", readOnly: Bool = false, busyTimeout: Double = 5) throws(SQLiteError) {
        var handle: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open database"
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteError(code: status, message: message, sql: nil)
        }
        self.handle = handle
        sqlite3_extended_result_codes(handle, 1)
        // Clamped: a conversion of the caller's number must not trap.
        let milliseconds = busyTimeout.isNaN ? 0 : min(max(busyTimeout * 1000, 0), Double(Int32.max))
        sqlite3_busy_timeout(handle, Int32(milliseconds))
        // Every fetch's time budget: SQLite calls this every
        // `sqliteStepsPerCheck` instructions of a statement; past the fetch's
        // time (the thread's `EvaluationBudget`) it answers nonzero, the
        // statement stops with SQLITE_INTERRUPT, and `forEachRow` throws the
        // `fetchTooCostly` the budget recorded. Outside a fetch it costs a
        // thread-local read.
        sqlite3_progress_handler(handle, EvaluationBudget.sqliteStepsPerCheck, { _ in
            EvaluationBudget.chargeLoop(Int(EvaluationBudget.sqliteStepsPerCheck), term: "the fetch's SQL statement") ? 0 : 1
        }, nil)
        var logger = Logger(label: "sift.sql")
        logger.logLevel = ProcessInfo.processInfo.environment["SIFT_LOG_SQL"] == "1" ? .debug : .info
        self.logger = logger
        logsStatements = logger.logLevel <= .debug
    }

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
        for box in functions { box.release() }
    }

    /// The version of the SQLite library, such as "3.40.1".
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }

    /// Runs SQL that returns no rows and takes no values (several statements
    /// may be separated by `;`). For schema statements and pragmas.
    ///
    /// - Parameter sql: One or more SQL statements, separated by `;`, with no parameters.
    /// - Throws: `SQLiteError`, with `sql`, when a statement fails.
    public func execute(_ sql: String) throws(SQLiteError) {
        statementCount += 1
        logger.debug("\(sql)")
        var errorMessage: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if status != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(errorMessage)
            throw SQLiteError(code: status, message: message, sql: sql)
        }
    }

    /// A prepared statement for `sql`, from the cache when it was prepared before.
    ///
    /// - Parameter sql: One SQL statement, with `?` parameters.
    /// - Returns: The prepared statement, kept in the connection's cache.
    /// - Throws: `SQLiteError`, with `sql`, when SQLite cannot prepare it (bad syntax, an unknown table or
    ///   column, …).
    public func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] { return cached }
        var statement: OpaquePointer?
        // With its length, so a U+0000 in a name is an error, not an end.
        let status = sqlite3_prepare_v3(handle, sql, Int32(clamping: sql.utf8.count), UInt32(SQLITE_PREPARE_PERSISTENT),
                                        &statement, nil)
        guard status == SQLITE_OK, let statement else { throw error(status, sql: sql) }
        let prepared = SQLiteStatement(handle: statement, sql: sql)
        statements[sql] = prepared
        return prepared
    }

    /// Prepares `sql` without keeping it, to learn whether SQLite accepts it.
    ///
    /// - Parameter sql: One SQL statement.
    /// - Throws: `SQLiteError` (without the SQL) when SQLite cannot prepare it.
    public func check(_ sql: String) throws(SQLiteError) {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, Int32(clamping: sql.utf8.count), &statement, nil)
        sqlite3_finalize(statement)
        guard status == SQLITE_OK else { throw error(status, sql: nil) }
    }

    /// Runs a statement with its bindings and calls `row` for each row it
    /// returns; `row` returns false to stop early.
    ///
    /// - Parameters:
    ///   - sql: One SQL statement, with `?` parameters.
    ///   - bindings: The values of the parameters, in order.
    ///   - row: Called with the statement positioned on each row; returns false to stop.
    /// - Throws: `SQLiteError` when the statement cannot be prepared, a value cannot be bound or a step fails;
    ///   `EvaluationError` when a Sift function SQLite called ran out of its budget; or whatever `row` throws.
    public func forEachRow(_ sql: String, _ bindings: [SQLValue] = [],
                           _ row: (SQLiteStatement) throws -> Bool = { _ in true }) throws {
        try forEachRow(self.statement(sql), bindings, row)
    }

    /// Runs a statement prepared before (by `statement(_:)`) with its
    /// bindings, as `forEachRow(_:_:_:)` does; saves the lookup by SQL text
    /// when one statement runs many times.
    ///
    /// - Parameters:
    ///   - statement: A statement prepared by `statement(_:)`.
    ///   - bindings: The values of its parameters, in order.
    ///   - row: Called with the statement positioned on each row; returns false to stop.
    /// - Throws: `SQLiteError` when a value cannot be bound or a step fails; `EvaluationError` when a Sift
    ///   function SQLite called ran out of its budget; or whatever `row` throws.
    public func forEachRow(_ statement: SQLiteStatement, _ bindings: [SQLValue] = [],
                           _ row: (SQLiteStatement) throws -> Bool = { _ in true }) throws {
        let sql = statement.sql
        // A run that binds every parameter replaces every value bound before:
        // the values are cleared only before one that binds fewer, and after
        // one that bound a blob or a long text (not kept in memory with the
        // statement).
        defer {
            sqlite3_reset(statement.handle)
            if bindings.contains(where: Self.isLarge) { sqlite3_clear_bindings(statement.handle) }
        }
        if bindings.count < sqlite3_bind_parameter_count(statement.handle) { sqlite3_clear_bindings(statement.handle) }
        for index in bindings.indices {
            try bind(bindings[index], at: Int32(index + 1), in: statement)
        }
        statementCount += 1
        // A failure left over from elsewhere on this thread is not this one's.
        _ = EvaluationFailure.take()
        if logsStatements {
            logger.debug("\(sql)\(bindings.isEmpty ? "" : " -- " + bindings.map(\.description).joined(separator: ", "))")
        }
        while true {
            let status = sqlite3_step(statement.handle)
            if status == SQLITE_DONE { return }
            guard status == SQLITE_ROW else {
                // A function SQLite called stopped the statement over a budget.
                if let failure = EvaluationFailure.take() { throw failure }
                throw error(status, sql: sql)
            }
            if try !row(statement) { return }
        }
    }

    /// Runs a statement that returns no rows (or whose rows are not needed).
    ///
    /// - Parameter query: The statement's SQL and bindings.
    /// - Throws: `SQLiteError` when the statement cannot be prepared or fails; `EvaluationError` when a Sift
    ///   function SQLite called ran out of its budget.
    public func run(_ query: SQLQuery) throws {
        try forEachRow(query.sql, query.bindings)
    }

    /// Runs a prepared statement with `bindings`, for its effect.
    ///
    /// - Parameters:
    ///   - statement: A statement prepared by `statement(_:)`.
    ///   - bindings: The values of its parameters, in order.
    /// - Throws: `SQLiteError` when a value cannot be bound or the statement fails; `EvaluationError` when a
    ///   Sift function SQLite called ran out of its budget.
    public func run(_ statement: SQLiteStatement, _ bindings: [SQLValue]) throws {
        try forEachRow(statement, bindings)
    }

    /// Runs a statement and returns all its rows.
    ///
    /// - Parameters:
    ///   - sql: One SQL statement, with `?` parameters.
    ///   - bindings: The values of the parameters, in order.
    /// - Returns: Every row, each the values of its columns in order.
    /// - Throws: `SQLiteError` when the statement cannot be prepared or fails; `EvaluationError` when a Sift
    ///   function SQLite called ran out of its budget.
    public func query(_ sql: String, _ bindings: [SQLValue] = []) throws -> [[SQLValue]] {
        var rows: [[SQLValue]] = []
        try forEachRow(sql, bindings) { statement in
            rows.append((0..<statement.columnCount).map(statement.column))
            return true
        }
        return rows
    }

    /// Runs a query, for its rows.
    ///
    /// - Parameter query: The statement's SQL and bindings.
    /// - Returns: Every row, each the values of its columns in order.
    /// - Throws: `SQLiteError` when the statement cannot be prepared or fails; `EvaluationError` when a Sift
    ///   function SQLite called ran out of its budget.
    public func query(_ query: SQLQuery) throws -> [[SQLValue]] {
        try self.query(query.sql, query.bindings)
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back
    /// when it throws.
    ///
    /// - Parameter body: The work to run inside the transaction.
    /// - Returns: What `body` returns.
    /// - Throws: `SQLiteError` when the transaction cannot begin (`SQLITE_BUSY` after the busy timeout) or
    ///   commit; otherwise whatever `body` throws, after the rollback.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// How many rows the last INSERT, UPDATE or DELETE changed.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// Whether a bound value is worth freeing after its run: a blob, or a text of more than 64 KiB.
    private static func isLarge(_ value: SQLValue) -> Bool {
        switch value {
        case .blob: true
        case .text(let text): text.utf8.count > 65_536
        default: false
        }
    }

    func bind(_ value: SQLValue, at index: Int32, in statement: SQLiteStatement) throws(SQLiteError) {
        let status: Int32
        switch value {
        case .null: status = sqlite3_bind_null(statement.handle, index)
        case .integer(let i): status = sqlite3_bind_int64(statement.handle, index, i)
        case .real(let d): status = sqlite3_bind_double(statement.handle, index, d)
        case .text(let s):
            status = withSQLText(s) { text, count in
                sqlite3_bind_text64(statement.handle, index, text, count, SQLITE_TRANSIENT, UInt8(SQLITE_UTF8))
            }
        case .blob(let data):
            status = data.withUnsafeBytes { bytes in
                sqlite3_bind_blob64(statement.handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                    sqlite3_uint64(bytes.count), SQLITE_TRANSIENT)
            }
        case .array(let members):
            // SQLite reads arrays as JSON text (its dialect never makes this case).
            try bind(SQLiteDialect().arrayValue(members) ?? .null, at: index, in: statement)
            return
        }
        guard status == SQLITE_OK else { throw error(status, sql: statement.sql) }
    }

    func error(_ status: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: status, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    // MARK: Application-defined functions

    /// Registers a deterministic scalar function, computed by `body` from the
    /// arguments' values. A negative `arity` takes any number of arguments.
    ///
    /// - Parameters:
    ///   - name: The name SQL calls the function by.
    ///   - arity: How many arguments it takes; negative for any number.
    ///   - deterministic: Whether it always gives the same result for the same arguments, so SQLite may reuse
    ///     results.
    ///   - body: Computes the result from the arguments' values.
    /// - Throws: `SQLiteError` when SQLite refuses the function (an arity out of range, a name too long, …).
    public func registerFunction(_ name: String, arity: Int32, deterministic: Bool = true,
                                 _ body: @escaping ([SQLValue]) -> SQLValue) throws(SQLiteError) {
        try registerFunction(name, arity: arity, deterministic: deterministic) { context, arguments in
            let values = arguments.map { SQLiteFunctionContext.value($0) }
            SQLiteFunctionContext.result(body(values), context)
        }
    }

    /// Registers a scalar function with access to SQLite's per-statement
    /// auxiliary data (to cache, say, a compiled pattern).
    func registerFunction(_ name: String, arity: Int32, deterministic: Bool,
                          _ body: @escaping (OpaquePointer, [OpaquePointer?]) -> Void) throws(SQLiteError) {
        let box = Unmanaged.passRetained(FunctionBox(body))
        functions.append(box)
        let flags = SQLITE_UTF8 | (deterministic ? SQLITE_DETERMINISTIC : 0)
        let status = sqlite3_create_function_v2(handle, name, arity, flags, box.toOpaque(), { context, count, values in
            guard let context else { return }
            let box = Unmanaged<FunctionBox>.fromOpaque(sqlite3_user_data(context)).takeUnretainedValue()
            let arguments = (0..<Int(count)).map { values?[$0] }
            box.body(context, arguments)
        }, nil, nil, nil)
        guard status == SQLITE_OK else { throw error(status, sql: nil) }
    }
}

/// Holds a Swift function for SQLite.
final class FunctionBox {
    let body: (OpaquePointer, [OpaquePointer?]) -> Void
    init(_ body: @escaping (OpaquePointer, [OpaquePointer?]) -> Void) { self.body = body }
}

/// Reading arguments and setting results of application-defined functions.
enum SQLiteFunctionContext {
    static func value(_ value: OpaquePointer?) -> SQLValue {
        guard let value else { return .null }
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            let count = Int(sqlite3_value_bytes(value))
            guard let bytes = sqlite3_value_text(value) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(value))
            guard count > 0, let bytes = sqlite3_value_blob(value) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default: return .null
        }
    }

    /// The answer of a pattern test, or, when the test ran out of budget, an
    /// error that stops the statement (the connection then throws the
    /// recorded `EvaluationError`).
    static func result(matching matched: Bool, _ context: OpaquePointer) {
        if let failure = EvaluationFailure.pending {
            sqlite3_result_error(context, failure.description, -1)
        } else {
            sqlite3_result_int64(context, matched ? 1 : 0)
        }
    }

    static func result(_ value: SQLValue, _ context: OpaquePointer) {
        switch value {
        case .null: sqlite3_result_null(context)
        case .integer(let i): sqlite3_result_int64(context, i)
        case .real(let d): sqlite3_result_double(context, d)
        case .text(let s):
            withSQLText(s) { text, count in
                sqlite3_result_text64(context, text, count, SQLITE_TRANSIENT, UInt8(SQLITE_UTF8))
            }
        case .blob(let d):
            d.withUnsafeBytes { bytes in
                sqlite3_result_blob64(context, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                      sqlite3_uint64(bytes.count), SQLITE_TRANSIENT)
            }
        case .array(let members):
            // As SQLite reads arrays: JSON text.
            guard case .text(let json)? = SQLiteDialect().arrayValue(members) else {
                sqlite3_result_null(context)
                return
            }
            withSQLText(json) { text, count in
                sqlite3_result_text64(context, text, count, SQLITE_TRANSIENT, UInt8(SQLITE_UTF8))
            }
        }
    }
}

/// Calls `body` with the UTF-8 bytes of `string` and their count. Text goes
/// to SQLite with its length, never as a C string, so a U+0000 inside it is
/// kept rather than taken for its end.
func withSQLText<R>(_ string: String, _ body: (UnsafePointer<CChar>, sqlite3_uint64) -> R) -> R {
    var text = string
    return text.withUTF8 { bytes in
        bytes.withMemoryRebound(to: CChar.self) { characters in
            guard let start = characters.baseAddress else { return "".withCString { body($0, 0) } }
            return body(start, sqlite3_uint64(characters.count))
        }
    }
}

/// SQLite copies transient bindings before the call returns.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
